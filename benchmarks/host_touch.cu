// The host touching managed memory that the GPU holds, a word every SPACING bytes: what each touch costs
// (the CPU page fault, the driver migrating the page back, the GPU's mapping dropped), by the spacing.
// A program that samples a managed array between kernels (every 4096th record, a log line each step) pays this
// per touch, where its bytes alone would price it at a copy's rate.
//
//   host_touch [--mib 256] [--spacing 131072] [--reps 5]
//
// Each rep: a kernel writes the whole buffer (its pages move to the GPU), the device is synchronized, then the
// host reads one float every SPACING bytes and sums them (timed by the host's clock). One JSON line a rep:
// {"spacing": S, "touches": N, "host_s": ..., "kernel_s": ..., "checksum": ...}; the checksum is checked against
// the values the kernel wrote.
#include <cuda_runtime.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include "apps/cuda_check.h"

__global__ void fill(float *p, size_t n, float v) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = v + (float)(i & 1023);
}

int main(int argc, char **argv) {
    double mib = 256;
    size_t spacing = 131072;
    int reps = 5;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--mib")) mib = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--spacing")) spacing = strtoull(argv[i + 1], nullptr, 10);
        else if (!strcmp(argv[i], "--reps")) reps = atoi(argv[i + 1]);
        else { fprintf(stderr, "unknown option %s\n", argv[i]); return 2; }
    }
    const size_t bytes = (size_t)(mib * 1048576), n = bytes / sizeof(float), step = spacing / sizeof(float);
    if (spacing < sizeof(float) || spacing % sizeof(float) || step > n) {
        fprintf(stderr, "--spacing must be a multiple of 4 bytes, at most the buffer (%zu bytes), got %zu\n", bytes,
                spacing);
        return 2;
    }
    size_t free_b = 0, total_b = 0;
    CHECK(cudaMemGetInfo(&free_b, &total_b));
    if (bytes > free_b / 2) {  // managed memory is never oversubscribed here
        fprintf(stderr, "--mib %.0f is more than half the GPU's free memory (%zu MiB)\n", mib, free_b >> 20);
        return 2;
    }
    float *p = nullptr;
    CHECK(cudaMallocManaged((void **)&p, bytes));
    memset(p, 0, bytes);  // the host's first touch, outside every timed region
    cudaEvent_t a, b;
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreate(&b));
    const size_t touches = (n + step - 1) / step;
    for (int r = 0; r < reps; ++r) {
        const float v = (float)(r + 1) * 2048.f;
        CHECK(cudaEventRecord(a));
        fill<<<132 * 8, 256>>>(p, n, v);
        CHECK(cudaGetLastError());
        CHECK(cudaEventRecord(b));
        CHECK(cudaDeviceSynchronize());
        float kms = 0;
        CHECK(cudaEventElapsedTime(&kms, a, b));
        auto t0 = std::chrono::steady_clock::now();
        double sum = 0;
        for (size_t i = 0; i < n; i += step) sum += p[i];
        auto t1 = std::chrono::steady_clock::now();
        double want = 0;
        for (size_t i = 0; i < n; i += step) want += v + (float)(i & 1023);
        if (sum != want) {
            fprintf(stderr, "checksum %.17g, expected %.17g\n", sum, want);
            return 1;
        }
        printf("{\"spacing\": %zu, \"touches\": %zu, \"host_s\": %.9f, \"kernel_s\": %.9f, \"checksum\": %.17g}\n",
               spacing, touches, std::chrono::duration<double>(t1 - t0).count(), kms * 1e-3, sum);
    }
    CHECK(cudaFree(p));
    return 0;
}

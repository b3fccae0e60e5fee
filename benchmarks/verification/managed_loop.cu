/* A loop on managed memory, as a C programmer writes it: a 512 MiB float array from cudaMallocManaged, 30
 * iterations; each iteration the host sets a 2% window of the array (a different one each time), a kernel
 * updates the whole array, and the host reads the window back. The loop's time counts the first move of the
 * array to the GPU (the first kernel's faults, or the first copy).
 *
 *     managed_loop [--mode MODE] [--mib 512] [--iterations 30]
 *
 * Modes (the same values, the same checksum):
 *   as_written        managed memory, nothing else (the GPU faults the host's window back, the host faults it out)
 *   prefetch          managed memory, cudaMemPrefetchAsync of the array to the GPU before each kernel and of the
 *                     window to the host after it
 *   registered        malloc'd memory, cudaHostRegister'ed once, a cudaMalloc'd copy on the GPU; the whole array
 *                     copied in before each kernel and out after it (cudaMemcpyAsync)
 *   registered_window as registered, but only the host's window copied each way
 * Prints one JSON line: program, mode, loop_s, checksum. */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "../apps/cuda_check.h"  // CHECK(call)


__global__ void update(float *x, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        x[i] = x[i] * 0.5f + 1.0f;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    const char *mode = "as_written";
    size_t mib = 512;
    int iterations = 30;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--mode")) mode = argv[i + 1];
        else if (!strcmp(argv[i], "--mib")) mib = strtoul(argv[i + 1], 0, 10);
        else if (!strcmp(argv[i], "--iterations")) iterations = atoi(argv[i + 1]);
        else { fprintf(stderr, "managed_loop: unknown option %s\n", argv[i]); return 2; }
    }
    int managed = !strcmp(mode, "as_written") || !strcmp(mode, "prefetch");
    int prefetch = !strcmp(mode, "prefetch"), window_only = !strcmp(mode, "registered_window");
    if (!managed && strcmp(mode, "registered") && !window_only) {
        fprintf(stderr, "managed_loop: --mode: expected as_written, prefetch, registered or registered_window, got %s\n", mode);
        return 2;
    }
    size_t n = mib * (1 << 20) / sizeof(float), bytes = n * sizeof(float);
    size_t window = n / 50; /* 2% */
    int dev = 0;
    CHECK(cudaSetDevice(dev));
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    float *x, *d = 0;
    if (managed) CHECK(cudaMallocManaged(&x, bytes, cudaMemAttachGlobal));
    else {
        x = (float *)malloc(bytes);
        if (!x) { fprintf(stderr, "managed_loop: malloc of %zu bytes failed\n", bytes); return 1; }
        CHECK(cudaHostRegister(x, bytes, cudaHostRegisterDefault));
        CHECK(cudaMalloc(&d, bytes));
    }
    for (size_t i = 0; i < n; ++i) x[i] = (float)(i % 1000) * 1e-3f;
    cudaMemLocation gpu = {cudaMemLocationTypeDevice, dev}, host = {cudaMemLocationTypeHost, 0};
    CHECK(cudaDeviceSynchronize());
    double checksum = 0.0, start = now();
    if (!managed) CHECK(cudaMemcpy(d, x, bytes, cudaMemcpyHostToDevice));
    for (int it = 0; it < iterations; ++it) {
        size_t at = (size_t)(it * 7 % 50) * window;
        for (size_t i = at; i < at + window; ++i) x[i] = 1.0f + 0.01f * it;
        float *k = managed ? x : d;
        if (prefetch) CHECK(cudaMemPrefetchAsync(x, bytes, gpu, 0, s));
        if (!managed) {
            size_t from = window_only ? at : 0, len = window_only ? window : n;
            CHECK(cudaMemcpyAsync(d + from, x + from, len * sizeof(float), cudaMemcpyHostToDevice, s));
        }
        update<<<1056, 256, 0, s>>>(k, n);
        CHECK(cudaGetLastError());
        if (prefetch) CHECK(cudaMemPrefetchAsync(x + at, window * sizeof(float), host, 0, s));
        if (!managed) {
            size_t from = window_only ? at : 0, len = window_only ? window : n;
            CHECK(cudaMemcpyAsync(x + from, d + from, len * sizeof(float), cudaMemcpyDeviceToHost, s));
        }
        CHECK(cudaStreamSynchronize(s));
        for (size_t i = at; i < at + window; ++i) checksum += x[i];
    }
    double loop_s = now() - start;
    printf("{\"program\": \"managed_loop\", \"mode\": \"%s\", \"loop_s\": %.6f, \"checksum\": %.6g}\n", mode, loop_s,
           checksum);
    if (managed) CHECK(cudaFree(x));
    else { CHECK(cudaHostUnregister(x)); free(x); CHECK(cudaFree(d)); }
    return 0;
}

// What the host pays to read back managed memory the GPU wrote, by how the kernel touched it and how the host reads
// it, beside the same read of pinned memory the kernel's output was copied into. umprof's calibration prices the
// host's read of on-demand managed pages from its loop (a kernel reading and writing the buffer, numpy summing it);
// benchmarks/apps/readback_loop.cu's kernel only writes its output and its host sums it word by word.
//
//   nvcc -O2 -arch=sm_90 -o fault_read benchmarks/fault_read.cu && ./fault_read [--mib 64] [--iters 20]
//
// Each iteration: the kernel (`write`: out[i] = f(i, it); `readwrite`: out[i] = out[i] + 1), timed by events; for
// pinned memory the copy back, timed so; then the host's read, timed by the host's clock: `sum` (a double summed
// word by word, as the applications' hosts do) or `touch` (one word a 4 KiB page: the faults alone). Prints one
// JSON line a case: the medians over the iterations after the first, and whether every read saw what the kernel
// wrote. benchmarks/fault_read.py runs the `write` cases read by numpy, as the calibration reads.
#include <cuda_runtime.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include "apps/cuda_check.h"

__global__ void write_kernel(float *out, size_t n, int it) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        out[i] = (float)((i & 1023) + it);
}

__global__ void readwrite_kernel(float *out, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        out[i] = out[i] + 1.0f;
}

static double now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// the host's read, a function of its own as the applications' consume() is (frame_loop.h): written inline in
// main's loop it ran at a quarter of the speed (64 MiB of pinned memory in 55-60 ms against 15-16 ms, an H200's host)
__attribute__((noinline)) static double host_read(const float *p, size_t n, size_t step) {
    double s = 0;
    for (size_t i = 0; i < n; i += step) s += p[i];
    return s;
}

static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
}

// after iteration `it` both kernels leave word i at (i & 1023) + it (readwrite adds 1 a pass to the host's first
// write, (i & 1023) - 1): what the host sums of every `step`-th word is their sum at iteration 0 plus `it` a word
struct Expected {
    double at_zero = 0;
    size_t words = 0;
    Expected(size_t n, size_t step) {
        for (size_t i = 0; i < n; i += step, ++words) at_zero += (double)(i & 1023);
    }
    double at(int it) const { return at_zero + (double)it * (double)words; }
};

int main(int argc, char **argv) {
    int iters = 20;
    size_t mib = 64;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--iters")) iters = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--mib")) mib = strtoull(argv[i + 1], nullptr, 10);
        else { fprintf(stderr, "unknown option %s\n", argv[i]); return 2; }
    }
    if (iters < 2) {
        fprintf(stderr, "option --iters: expected at least 2 (the first is not counted), got %d\n", iters);
        return 2;
    }
    if (mib < 1) { fprintf(stderr, "option --mib: expected a positive size in MiB, got %zu\n", mib); return 2; }
    size_t free_b = 0, total_b = 0;
    CHECK(cudaMemGetInfo(&free_b, &total_b));
    const size_t bytes = mib << 20, n = bytes / 4;
    if (bytes > free_b / 2) { fprintf(stderr, "--mib %zu: more than half the GPU's free memory\n", mib); return 2; }
    cudaEvent_t a, b;
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreate(&b));
    for (const char *memory : {"managed", "pinned"}) {
        const bool managed = !strcmp(memory, "managed");
        for (const char *kernel : {"write", "readwrite"}) {
            const bool rw = !strcmp(kernel, "readwrite");
            for (const char *reader : {"sum", "touch"}) {
                const size_t step = strcmp(reader, "touch") ? 1 : 1024;
                const Expected want(n, step);
                float *host = nullptr, *dev = nullptr;
                if (managed) {
                    CHECK(cudaMallocManaged((void **)&host, bytes));
                    dev = host;
                } else {
                    CHECK(cudaMallocHost((void **)&host, bytes));
                    CHECK(cudaMalloc((void **)&dev, bytes));
                }
                // the buffer starts as iteration -1's output, written by the host (managed pages first on the host)
                for (size_t i = 0; i < n; ++i) host[i] = (float)((int)(i & 1023) - 1);
                if (!managed) CHECK(cudaMemcpy(dev, host, bytes, cudaMemcpyHostToDevice));
                std::vector<double> k_ms, c_ms, r_ms;
                bool ok = true;
                for (int it = 0; it < iters; ++it) {
                    CHECK(cudaEventRecord(a));
                    if (rw) readwrite_kernel<<<1056, 256>>>(dev, n);
                    else write_kernel<<<1056, 256>>>(dev, n, it);
                    CHECK(cudaEventRecord(b));
                    CHECK(cudaEventSynchronize(b));
                    CHECK(cudaGetLastError());
                    float ms = 0;
                    CHECK(cudaEventElapsedTime(&ms, a, b));
                    if (it) k_ms.push_back(ms);
                    if (!managed) {
                        CHECK(cudaEventRecord(a));
                        CHECK(cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost));
                        CHECK(cudaEventRecord(b));
                        CHECK(cudaEventSynchronize(b));
                        CHECK(cudaEventElapsedTime(&ms, a, b));
                        if (it) c_ms.push_back(ms);
                    }
                    const double t0 = now_s();
                    const double s = host_read(host, n, step);
                    const double t1 = now_s();
                    if (it) r_ms.push_back((t1 - t0) * 1e3);
                    if (s != want.at(it)) ok = false;
                }
                printf("{\"memory\": \"%s\", \"kernel\": \"%s\", \"reader\": \"%s\", \"bytes\": %zu, \"iters\": %d, "
                       "\"kernel_ms\": %.4f, \"copy_ms\": %.4f, \"read_ms\": %.4f, \"ok\": %s}\n",
                       memory, kernel, reader, bytes, iters, median(k_ms), median(c_ms), median(r_ms),
                       ok ? "true" : "false");
                fflush(stdout);
                if (managed) CHECK(cudaFree(host));
                else {
                    CHECK(cudaFreeHost(host));
                    CHECK(cudaFree(dev));
                }
            }
        }
    }
    return 0;
}

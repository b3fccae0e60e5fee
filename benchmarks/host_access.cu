// The host's own work on a buffer, by how the buffer was allocated: does a producer that computes its values,
// and a consumer that sums them, run slower in memory the CUDA driver allocated than in malloc'd memory?
// The held-out shape chunked_pinned (run_apps.VARIANTS: 32 MiB each way, 60 steps, host-bound) ran 17-25%
// slower with cudaMallocHost buffers than with malloc'd buffers registered in place, on an H100 and an H200 (2026-11-27).
//
//     nvcc -O2 -std=c++17 -o host_access benchmarks/host_access.cu && ./host_access [MiB] [reps]
//
// For each allocation (malloc'd; malloc'd then cudaHostRegister; cudaMallocHost; cudaHostAlloc mapped), the
// median over `reps` of: the frame loop's producer writing the buffer (frame_loop.h's produce), its consumer
// summing it, and both after a device-to-host copy into the buffer (as the loop's output is read). Prints one JSON
// line: each allocation's medians in seconds and the NUMA node the buffer's first page is on (move_pages).
#include <cuda_runtime.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "apps/cuda_check.h"

static double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

static void produce(float *in, size_t n, int it) {
    for (size_t i = 0; i < n; ++i) in[i] = (float)((i * 7 + it) & 1023);
}
static double consume(const float *out, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; ++i) s += out[i];
    return s;
}
static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}
static int node_of(void *p) {
    void *pages[1] = {p};
    int status[1] = {-1};
    // move_pages(2) with no target nodes says where each page is (the raw call: no libnuma needed)
    return syscall(SYS_move_pages, 0, 1, pages, nullptr, status, 0) == 0 ? status[0] : -1;
}

int main(int argc, char **argv) {
    size_t mib = argc > 1 ? atoi(argv[1]) : 32, reps = argc > 2 ? atoi(argv[2]) : 15;
    size_t bytes = mib << 20, n = bytes / 4;
    CHECK(cudaFree(0));
    float *dev;
    CHECK(cudaMalloc((void **)&dev, bytes));
    CHECK(cudaMemset(dev, 0, bytes));
    const char *kinds[] = {"malloc", "malloc-registered", "cudaMallocHost", "cudaHostAlloc-mapped"};
    double sink = 0;
    printf("{\"mib\": %zu, \"reps\": %zu, \"cpu\": %d", mib, reps, sched_getcpu());
    for (const char *kind : kinds) {
        std::string k = kind;
        float *h = nullptr;
        if (k == "cudaMallocHost") CHECK(cudaMallocHost((void **)&h, bytes));
        else if (k == "cudaHostAlloc-mapped") CHECK(cudaHostAlloc((void **)&h, bytes, cudaHostAllocMapped));
        else h = (float *)aligned_alloc(4096, bytes);
        produce(h, n, -1);  // first touch, outside the timing
        if (k == "malloc-registered") CHECK(cudaHostRegister(h, bytes, cudaHostRegisterDefault));
        std::vector<double> w, r, wd, rd;
        for (size_t i = 0; i < reps; ++i) {
            double t = now();
            produce(h, n, (int)i);
            w.push_back(now() - t);
            t = now();
            sink += consume(h, n);
            r.push_back(now() - t);
            CHECK(cudaMemcpy(h, dev, bytes, cudaMemcpyDeviceToHost));  // the buffer as the loop's output leaves it
            t = now();
            sink += consume(h, n);
            rd.push_back(now() - t);
            t = now();
            produce(h, n, (int)i);
            wd.push_back(now() - t);
        }
        printf(", \"%s\": {\"node\": %d, \"write_s\": %.6f, \"read_s\": %.6f, \"read_after_copy_s\": %.6f, "
               "\"write_after_copy_s\": %.6f}", kind, node_of(h), median(w), median(r), median(rd), median(wd));
        if (k == "cudaMallocHost" || k == "cudaHostAlloc-mapped") CHECK(cudaFreeHost(h));
        else {
            if (k == "malloc-registered") CHECK(cudaHostUnregister(h));
            free(h);
        }
    }
    printf(", \"sink\": %g}\n", sink);
    CHECK(cudaFree(dev));
    return 0;
}

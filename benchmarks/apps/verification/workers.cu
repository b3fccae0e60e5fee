// A pool of frame workers, written as a media or sensor pipeline often is: four host threads, each with its own
// CUDA stream and its own buffers, each taking 30 frames of 16 MiB in turn. For a frame a worker fills its input
// (the host computes every sample), copies it in, runs a filter kernel that maps each sample to an output sample
// (a few multiply-adds), copies the 16 MiB of output back and reads all of it (a checksum). The workers run at the
// same time, so one's host work runs beside another's copies. Fixed before its first measurement, to check the
// advice and its saving on a program whose copies several host threads make.
//
//   workers [--mem MODE] [--workers 4] [--frames 30]
//
// Modes: pageable (as written: malloc'd buffers, cudaMemcpyAsync on the worker's stream), pinned (cudaMallocHost),
// registered (the malloc'd buffers cudaHostRegister'ed), write-combined (the input from cudaHostAlloc
// write-combined, the output pinned), mapped (the malloc'd buffers registered mapped: the kernel reads and writes
// host memory), zero-copy (cudaHostAlloc mapped, the same), managed (cudaMallocManaged, no copies), managed-prefetch
// (the input prefetched to the GPU on the worker's stream before the kernel, the output back after it).
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>
#include "../cuda_check.h"

static const size_t SAMPLES = (16u << 20) / sizeof(float);  // 16 MiB a frame each way
static std::string mem = "pageable";

__global__ void filter(const float *in, float *out, size_t n, float gain) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = in[i], y = 0.f;
    for (int k = 0; k < 6; ++k) y = y * 0.5f + x * (gain + k);
    out[i] = y;
}

struct Worker {
    float *in = nullptr, *out = nullptr, *d_in = nullptr, *d_out = nullptr;
    cudaStream_t stream{};
    double sum = 0;
};

static bool copies() { return mem == "pageable" || mem == "pinned" || mem == "registered" || mem == "write-combined"; }

static void allocate(Worker &w) {
    const size_t bytes = SAMPLES * sizeof(float);
    CHECK(cudaStreamCreateWithFlags(&w.stream, cudaStreamNonBlocking));
    if (mem == "pageable" || mem == "registered" || mem == "mapped") {
        w.in = (float *)malloc(bytes);
        w.out = (float *)malloc(bytes);
        if (!w.in || !w.out) { fprintf(stderr, "out of host memory\n"); exit(1); }
        if (mem != "pageable") {
            unsigned f = mem == "mapped" ? cudaHostRegisterMapped : cudaHostRegisterDefault;
            CHECK(cudaHostRegister(w.in, bytes, f));
            CHECK(cudaHostRegister(w.out, bytes, f));
        }
    } else if (mem == "pinned" || mem == "write-combined" || mem == "zero-copy") {
        unsigned f = mem == "write-combined" ? cudaHostAllocWriteCombined
                   : mem == "zero-copy" ? cudaHostAllocMapped : cudaHostAllocDefault;
        CHECK(cudaHostAlloc((void **)&w.in, bytes, f));
        CHECK(cudaHostAlloc((void **)&w.out, bytes, mem == "zero-copy" ? cudaHostAllocMapped : cudaHostAllocDefault));
    } else if (mem == "managed" || mem == "managed-prefetch") {
        CHECK(cudaMallocManaged((void **)&w.in, bytes));
        CHECK(cudaMallocManaged((void **)&w.out, bytes));
    } else { fprintf(stderr, "unknown --mem %s\n", mem.c_str()); exit(2); }
    if (copies()) {
        CHECK(cudaMalloc((void **)&w.d_in, bytes));
        CHECK(cudaMalloc((void **)&w.d_out, bytes));
    } else if (mem == "mapped" || mem == "zero-copy") {
        CHECK(cudaHostGetDevicePointer((void **)&w.d_in, w.in, 0));
        CHECK(cudaHostGetDevicePointer((void **)&w.d_out, w.out, 0));
    } else {
        w.d_in = w.in; w.d_out = w.out;
    }
}

static void release(Worker &w) {
    if (copies()) { CHECK(cudaFree(w.d_in)); CHECK(cudaFree(w.d_out)); }
    if (mem == "managed" || mem == "managed-prefetch") {
        CHECK(cudaFree(w.in)); CHECK(cudaFree(w.out));
    } else if (mem == "pinned" || mem == "write-combined" || mem == "zero-copy") {
        CHECK(cudaFreeHost(w.in)); CHECK(cudaFreeHost(w.out));
    } else {
        if (mem != "pageable") { CHECK(cudaHostUnregister(w.in)); CHECK(cudaHostUnregister(w.out)); }
        free(w.in); free(w.out);
    }
    CHECK(cudaStreamDestroy(w.stream));
}

static void work(Worker &w, int id, int frames, int dev) {
    CHECK(cudaSetDevice(dev));
    const size_t bytes = SAMPLES * sizeof(float);
    cudaMemLocation gpu{cudaMemLocationTypeDevice, dev}, host{cudaMemLocationTypeHost, 0};
    for (int f = 0; f < frames; ++f) {
        unsigned seed = 2654435761u * (unsigned)(id * 1000 + f + 1);
        for (size_t i = 0; i < SAMPLES; ++i) {  // the frame's samples, computed
            seed = seed * 1664525u + 1013904223u;
            w.in[i] = (float)(seed >> 8) * (1.0f / 16777216.0f);
        }
        if (copies()) CHECK(cudaMemcpyAsync(w.d_in, w.in, bytes, cudaMemcpyHostToDevice, w.stream));
        if (mem == "managed-prefetch") {
            CHECK(cudaMemPrefetchAsync(w.in, bytes, gpu, 0, w.stream));
            CHECK(cudaMemPrefetchAsync(w.out, bytes, gpu, 0, w.stream));
        }
        filter<<<(unsigned)((SAMPLES + 255) / 256), 256, 0, w.stream>>>(w.d_in, w.d_out, SAMPLES, 0.25f + 0.01f * id);
        CHECK(cudaGetLastError());
        if (copies()) CHECK(cudaMemcpyAsync(w.out, w.d_out, bytes, cudaMemcpyDeviceToHost, w.stream));
        if (mem == "managed-prefetch") {
            CHECK(cudaMemPrefetchAsync(w.out, bytes, host, 0, w.stream));
            CHECK(cudaMemPrefetchAsync(w.in, bytes, host, 0, w.stream));  // back before the next frame is filled
        }
        CHECK(cudaStreamSynchronize(w.stream));
        double s = 0;
        for (size_t i = 0; i < SAMPLES; ++i) s += w.out[i];  // the output, used
        w.sum += s;
    }
}

int main(int argc, char **argv) {
    int workers = 4, frames = 30;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--mem")) mem = argv[i + 1];
        else if (!strcmp(argv[i], "--workers")) workers = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--frames")) frames = atoi(argv[i + 1]);
        else { fprintf(stderr, "unknown option %s\n", argv[i]); return 2; }
    }
    int dev = 0;
    CHECK(cudaGetDevice(&dev));
    std::vector<Worker> pool(workers);
    for (auto &w : pool) allocate(w);
    std::vector<std::thread> threads;
    for (int i = 0; i < workers; ++i) threads.emplace_back(work, std::ref(pool[i]), i, frames, dev);
    for (auto &t : threads) t.join();
    double sum = 0;
    for (auto &w : pool) { sum += w.sum; release(w); }
    printf("{\"app\": \"workers\", \"mem\": \"%s\", \"checksum\": %.6e}\n", mem.c_str(), sum);
    return 0;
}

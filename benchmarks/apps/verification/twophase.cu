// A program of two loops, written as a data-analysis job usually is: first it loads a 768 MiB dataset in 24
// chunks of 32 MiB (the host parses each chunk into one reused buffer, cudaMemcpy copies it into the dataset
// on the GPU, a kernel normalizes it there); then it runs 300 iterations over the resident dataset, each with
// 4 KiB of parameters written by the host and copied in, a kernel that reads the whole dataset, and 4 KiB of
// statistics copied back and read. Fixed before its first measurement, to check advice on a program whose two
// loops differ: the first moves much, the second little.
//
//   twophase [--mem MODE] [--chunks 24] [--iterations 300]
//
// Modes: pageable (as written), pinned (cudaMallocHost for the chunk buffer, parameters and statistics),
// registered (the malloc'd buffers cudaHostRegister'ed), write-combined (the chunk buffer and parameters from
// cudaHostAlloc write-combined, the statistics pinned), managed (the dataset, parameters and statistics
// managed: the host parses straight into the dataset), managed-prefetch (the same, each chunk prefetched to
// the GPU before its kernel, the parameters before each iteration and the statistics back after it), mapped
// (the malloc'd buffers registered mapped: the kernels read the chunk and the parameters in host memory and
// write the statistics there), zero-copy (the same with cudaHostAlloc mapped buffers).
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include "../cuda_check.h"

static const size_t CHUNK = 32u << 20, NCHUNK_FLOATS = CHUNK / 4;
static const int STATS = 1024;  // parameters and statistics: one float a block

__global__ void normalize(const float *src, float *dst, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        dst[i] = (src[i] - 0.5f) * 2.f;
}

// block b sums its grid-stride share of the dataset weighted by parameter b
__global__ void step(const float *data, size_t n, const float *params, float *stats) {
    __shared__ float part[256];
    float w = params[blockIdx.x], s = 0.f;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        s += data[i] * w;
    part[threadIdx.x] = s;
    __syncthreads();
    for (int o = 128; o > 0; o >>= 1) {
        if (threadIdx.x < o) part[threadIdx.x] += part[threadIdx.x + o];
        __syncthreads();
    }
    if (threadIdx.x == 0) stats[blockIdx.x] = part[0];
}

int main(int argc, char **argv) {
    std::string mem = "pageable";
    int chunks = 24, iterations = 300;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--mem")) mem = argv[i + 1];
        else if (!strcmp(argv[i], "--chunks")) chunks = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--iterations")) iterations = atoi(argv[i + 1]);
        else { fprintf(stderr, "unknown option %s\n", argv[i]); return 2; }
    }
    const size_t n = NCHUNK_FLOATS * chunks, bytes = n * 4, p_bytes = STATS * 4;
    bool managed = mem == "managed" || mem == "managed-prefetch";
    bool copies = mem == "pageable" || mem == "pinned" || mem == "registered" || mem == "write-combined";
    int dev = 0;
    CHECK(cudaGetDevice(&dev));
    cudaMemLocation gpu{cudaMemLocationTypeDevice, dev}, host{cudaMemLocationTypeHost, 0};
    float *buf = nullptr, *params = nullptr, *stats = nullptr, *data = nullptr;   // host side (data: managed)
    float *d_buf = nullptr, *d_params = nullptr, *d_stats = nullptr, *d_data = nullptr;
    if (mem == "pageable" || mem == "registered" || mem == "mapped") {
        buf = (float *)malloc(CHUNK);
        params = (float *)malloc(p_bytes);
        stats = (float *)malloc(p_bytes);
        if (mem != "pageable") {
            unsigned f = mem == "mapped" ? cudaHostRegisterMapped : cudaHostRegisterDefault;
            CHECK(cudaHostRegister(buf, CHUNK, f));
            CHECK(cudaHostRegister(params, p_bytes, f));
            CHECK(cudaHostRegister(stats, p_bytes, f));
        }
    } else if (mem == "pinned" || mem == "write-combined" || mem == "zero-copy") {
        unsigned f = mem == "write-combined" ? cudaHostAllocWriteCombined
                     : mem == "zero-copy"    ? cudaHostAllocMapped
                                             : cudaHostAllocDefault;
        CHECK(cudaHostAlloc((void **)&buf, CHUNK, f));
        CHECK(cudaHostAlloc((void **)&params, p_bytes, f));
        CHECK(cudaHostAlloc((void **)&stats, p_bytes, mem == "zero-copy" ? cudaHostAllocMapped : cudaHostAllocDefault));
    } else if (managed) {
        CHECK(cudaMallocManaged((void **)&data, bytes));
        CHECK(cudaMallocManaged((void **)&params, p_bytes));
        CHECK(cudaMallocManaged((void **)&stats, p_bytes));
    } else { fprintf(stderr, "unknown --mem %s\n", mem.c_str()); return 2; }
    if (managed) {
        d_data = data; d_params = params; d_stats = stats;
    } else {
        CHECK(cudaMalloc((void **)&d_data, bytes));
        if (copies) {
            CHECK(cudaMalloc((void **)&d_buf, CHUNK));
            CHECK(cudaMalloc((void **)&d_params, p_bytes));
            CHECK(cudaMalloc((void **)&d_stats, p_bytes));
        } else {
            CHECK(cudaHostGetDevicePointer((void **)&d_buf, buf, 0));
            CHECK(cudaHostGetDevicePointer((void **)&d_params, params, 0));
            CHECK(cudaHostGetDevicePointer((void **)&d_stats, stats, 0));
        }
    }
    // load: parse each chunk, move it to the GPU, normalize it into the dataset
    for (int c = 0; c < chunks; ++c) {
        float *dst = managed ? data + c * NCHUNK_FLOATS : buf;
        for (size_t i = 0; i < NCHUNK_FLOATS; ++i) dst[i] = (float)(((c * NCHUNK_FLOATS + i) * 2654435761u) % 1000) * 1e-3f;
        if (managed) {
            if (mem == "managed-prefetch") CHECK(cudaMemPrefetchAsync(dst, CHUNK, gpu, 0, 0));
            normalize<<<132 * 4, 256>>>(dst, dst, NCHUNK_FLOATS);
        } else {
            if (copies) CHECK(cudaMemcpy(d_buf, buf, CHUNK, cudaMemcpyHostToDevice));
            normalize<<<132 * 4, 256>>>(d_buf, d_data + c * NCHUNK_FLOATS, NCHUNK_FLOATS);
            CHECK(cudaGetLastError());
            if (!copies) CHECK(cudaDeviceSynchronize());  // the buffer is parsed into again next chunk
        }
        CHECK(cudaGetLastError());
    }
    // iterate over the resident dataset
    double total = 0;
    for (int it = 0; it < iterations; ++it) {
        for (int b = 0; b < STATS; ++b) params[b] = 1.f + (float)((b + it) % 13) * 0.01f;
        if (copies) CHECK(cudaMemcpy(d_params, params, p_bytes, cudaMemcpyHostToDevice));
        if (mem == "managed-prefetch") {
            CHECK(cudaMemPrefetchAsync(params, p_bytes, gpu, 0, 0));
            CHECK(cudaMemPrefetchAsync(stats, p_bytes, gpu, 0, 0));
        }
        step<<<STATS, 256>>>(d_data, n, d_params, d_stats);
        CHECK(cudaGetLastError());
        if (copies) CHECK(cudaMemcpy(stats, d_stats, p_bytes, cudaMemcpyDeviceToHost));
        else {
            if (mem == "managed-prefetch") CHECK(cudaMemPrefetchAsync(stats, p_bytes, host, 0, 0));
            CHECK(cudaDeviceSynchronize());
        }
        for (int b = 0; b < STATS; ++b) total += stats[b];  // the statistics, used
    }
    printf("{\"app\": \"twophase\", \"mem\": \"%s\", \"checksum\": %.9g}\n", mem.c_str(), total);
    if (managed) {
        CHECK(cudaFree(data)); CHECK(cudaFree(params)); CHECK(cudaFree(stats));
        return 0;
    }
    CHECK(cudaFree(d_data));
    if (copies) {
        CHECK(cudaFree(d_buf)); CHECK(cudaFree(d_params)); CHECK(cudaFree(d_stats));
    }
    if (mem == "pinned" || mem == "write-combined" || mem == "zero-copy") {
        CHECK(cudaFreeHost(buf)); CHECK(cudaFreeHost(params)); CHECK(cudaFreeHost(stats));
    } else {
        if (mem != "pageable") {
            CHECK(cudaHostUnregister(buf)); CHECK(cudaHostUnregister(params)); CHECK(cudaHostUnregister(stats));
        }
        free(buf); free(params); free(stats);
    }
    return 0;
}

// A one-shot batch job, written with the usual pipelining recipe but on malloc'd memory: 1 GiB of
// readings produced on the host, sent in 32 MiB chunks with cudaMemcpyAsync over 4 streams, each chunk
// reduced four to one by a kernel and its 8 MiB result copied back asynchronously, then the host sums
// the results. Fixed before its first measurement, to check advice on a program that runs its data
// through once (no loop to pay back a change's setup).
//
//   chunked_async [--mem MODE] [--mib 1024] [--chunk-mib 32] [--streams 4] [--work 64]
//
// Modes: pageable (as written), pinned (cudaMallocHost), write-combined (the input only), registered
// (the malloc'd buffers cudaHostRegister'ed), mapped and zero-copy (no copies, the kernels read and
// write host memory), managed, managed-prefetch (each chunk prefetched on its stream, its result back),
// staged (each chunk through two pinned 32 MiB slots, host threads copying; frame_loop.h's ring).
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>
#include "../frame_loop.h"

__global__ void reduce4(const float4 *in, float *out, size_t n_out, int work) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n_out; i += (size_t)gridDim.x * blockDim.x) {
        float4 v = in[i];
        float x = 0.25f * (v.x + v.y + v.z + v.w);
        for (int k = 0; k < work; ++k) x = x * 0.999f + 0.001f;
        out[i] = x;
    }
}

int main(int argc, char **argv) {
    std::string mem = "pageable";
    double mib = 1024, chunk_mib = 32;
    int n_streams = 4, work = 64;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--mem")) mem = argv[i + 1];
        else if (!strcmp(argv[i], "--mib")) mib = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--chunk-mib")) chunk_mib = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--streams")) n_streams = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--work")) work = atoi(argv[i + 1]);
        else { fprintf(stderr, "unknown option %s\n", argv[i]); return 2; }
    }
    const size_t in_bytes = (size_t)(mib * 1048576), out_bytes = in_bytes / 4;
    const size_t chunk = (size_t)(chunk_mib * 1048576), n_chunks = (in_bytes + chunk - 1) / chunk;
    bool copies = mem == "pageable" || mem == "pinned" || mem == "write-combined" || mem == "registered" ||
                  mem == "staged";
    bool managed = mem == "managed" || mem == "managed-prefetch";
    float *in = nullptr, *out = nullptr;
    if (mem == "pageable" || mem == "registered" || mem == "mapped" || mem == "staged") {
        in = (float *)malloc(in_bytes);
        out = (float *)malloc(out_bytes);
        if (mem == "registered" || mem == "mapped") {
            unsigned flags = mem == "mapped" ? cudaHostRegisterMapped : cudaHostRegisterDefault;
            CHECK(cudaHostRegister(in, in_bytes, flags));
            CHECK(cudaHostRegister(out, out_bytes, flags));
        }
    } else if (mem == "pinned" || mem == "write-combined") {
        CHECK(cudaHostAlloc((void **)&in, in_bytes, mem == "pinned" ? cudaHostAllocDefault : cudaHostAllocWriteCombined));
        CHECK(cudaMallocHost((void **)&out, out_bytes));
    } else if (mem == "zero-copy") {
        CHECK(cudaHostAlloc((void **)&in, in_bytes, cudaHostAllocMapped));
        CHECK(cudaHostAlloc((void **)&out, out_bytes, cudaHostAllocMapped));
    } else if (managed) {
        CHECK(cudaMallocManaged((void **)&in, in_bytes));
        CHECK(cudaMallocManaged((void **)&out, out_bytes));
    } else { fprintf(stderr, "unknown --mem %s\n", mem.c_str()); return 2; }
    std::vector<cudaStream_t> streams(n_streams);
    for (auto &s : streams) CHECK(cudaStreamCreate(&s));
    std::vector<float *> d_in(n_streams, nullptr), d_out(n_streams, nullptr);
    if (copies)
        for (int s = 0; s < n_streams; ++s) {
            CHECK(cudaMalloc((void **)&d_in[s], chunk));
            CHECK(cudaMalloc((void **)&d_out[s], chunk / 4));
        }
    Ring *ring = mem == "staged" ? new Ring(32u << 20) : nullptr;
    // the readings
    const size_t n = in_bytes / 4;
    for (size_t i = 0; i < n; ++i) in[i] = (float)(((i * 2654435761u) >> 8) & 1023) * 1e-3f;
    float *dev_in = in, *dev_out = out;
    if (mem == "mapped" || mem == "zero-copy") {
        CHECK(cudaHostGetDevicePointer((void **)&dev_in, in, 0));
        CHECK(cudaHostGetDevicePointer((void **)&dev_out, out, 0));
    }
    int dev = 0;
    CHECK(cudaGetDevice(&dev));
    cudaMemLocation gpu{cudaMemLocationTypeDevice, dev}, host{cudaMemLocationTypeHost, 0};
    for (size_t c = 0; c < n_chunks; ++c) {
        int s = (int)(c % n_streams);
        cudaStream_t st = streams[s];
        size_t off = c * chunk, len = std::min(chunk, in_bytes - off), n_o = len / 16;
        char *h_in = (char *)in + off, *h_out = (char *)out + off / 4;
        unsigned blocks = (unsigned)std::min<size_t>((n_o + 255) / 256, 132 * 8);
        if (mem == "staged") {
            ring->to_device((char *)d_in[s], h_in, len);
            reduce4<<<blocks, 256, 0, st>>>((const float4 *)d_in[s], d_out[s], n_o, work);
            CHECK(cudaStreamSynchronize(st));
            ring->to_host(h_out, (const char *)d_out[s], len / 4);
        } else if (copies) {
            CHECK(cudaMemcpyAsync(d_in[s], h_in, len, cudaMemcpyHostToDevice, st));
            reduce4<<<blocks, 256, 0, st>>>((const float4 *)d_in[s], d_out[s], n_o, work);
            CHECK(cudaMemcpyAsync(h_out, d_out[s], len / 4, cudaMemcpyDeviceToHost, st));
        } else {
            if (mem == "managed-prefetch") {
                CHECK(cudaMemPrefetchAsync(h_in, len, gpu, 0, st));
                CHECK(cudaMemPrefetchAsync(h_out, len / 4, gpu, 0, st));
            }
            reduce4<<<blocks, 256, 0, st>>>((const float4 *)((char *)dev_in + off), (float *)((char *)dev_out + off / 4),
                                            n_o, work);
            if (mem == "managed-prefetch") CHECK(cudaMemPrefetchAsync(h_out, len / 4, host, 0, st));
        }
        CHECK(cudaGetLastError());
    }
    CHECK(cudaDeviceSynchronize());
    double sum = 0;
    for (size_t i = 0; i < out_bytes / 4; ++i) sum += out[i];
    printf("{\"app\": \"chunked_async\", \"mem\": \"%s\", \"checksum\": %.9g}\n", mem.c_str(), sum);
    delete ring;
    for (int s = 0; s < n_streams; ++s) {
        if (copies) {
            CHECK(cudaFree(d_in[s]));
            CHECK(cudaFree(d_out[s]));
        }
        CHECK(cudaStreamDestroy(streams[s]));
    }
    if (managed) {
        CHECK(cudaFree(in));
        CHECK(cudaFree(out));
    } else if (mem == "pinned" || mem == "write-combined" || mem == "zero-copy") {
        CHECK(cudaFreeHost(in));
        CHECK(cudaFreeHost(out));
    } else {
        if (mem == "registered" || mem == "mapped") {
            CHECK(cudaHostUnregister(in));
            CHECK(cudaHostUnregister(out));
        }
        free(in);
        free(out);
    }
    return 0;
}

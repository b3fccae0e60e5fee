// An ingest loop that moves its frames through one pinned staging buffer, allocated once: the host reads each 96 MiB
// frame of malloc'd samples (generated here, as a decoder would produce them), copies it to the GPU 4 MiB at a time
// through the staging buffer (a host memcpy into it, a synchronous cudaMemcpy out of it), a kernel reduces every 6
// samples to one, and the 16 MiB result comes back through the same staging buffer into a malloc'd buffer that the
// host reads (a checksum); 20 frames. Fixed before its first measurement, to check the advice on staging through a
// pinned buffer allocated once, at a chunk size and a shape the rule was not built from.
//
//   staged_upload [--mem MODE] [--frames 20]
//
// Modes: bounce (as written), pageable (the malloc'd buffers copied whole, no staging buffer), registered (the
// malloc'd buffers cudaHostRegister'ed once, copied whole), pinned (the frames and the result in cudaMallocHost
// memory, copied whole), write-combined (the frame in cudaHostAlloc write-combined memory, the result pinned, copied
// whole), mapped (the malloc'd buffers registered mapped once: the kernel reads and writes host memory), zero-copy
// (cudaHostAlloc mapped, the same), managed (cudaMallocManaged, no copies), managed-prefetch (the same, the frame
// prefetched to the GPU and the result to the host).
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include "../cuda_check.h"

static const size_t IN = (96u << 20) / sizeof(float);  // samples a frame
static const size_t GROUP = 6;
static const size_t OUT = IN / GROUP;                     // 16 MiB of results
static const size_t STAGE = 4u << 20;

__global__ void reduce6(const float *in, float *out, size_t n) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float *p = in + i * GROUP;
    out[i] = (p[0] + p[1] + p[2] + p[3] + p[4] + p[5]) * (1.f / 6.f);
}

int main(int argc, char **argv) {
    std::string mem = "bounce";
    int frames = 20;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--mem")) mem = argv[i + 1];
        else if (!strcmp(argv[i], "--frames")) frames = atoi(argv[i + 1]);
        else { fprintf(stderr, "unknown option %s\n", argv[i]); return 2; }
    }
    const size_t in_bytes = IN * sizeof(float), out_bytes = OUT * sizeof(float);
    const bool staged = mem == "bounce";
    const bool copies = staged || mem == "pageable" || mem == "registered" || mem == "pinned" || mem == "write-combined";
    const bool mallocd = staged || mem == "pageable" || mem == "registered" || mem == "mapped";
    const bool managed = mem == "managed" || mem == "managed-prefetch";
    float *in = nullptr, *out = nullptr, *d_in = nullptr, *d_out = nullptr;
    char *stage = nullptr;
    if (mallocd) {
        in = (float *)malloc(in_bytes);
        out = (float *)malloc(out_bytes);
        if (!in || !out) { fprintf(stderr, "out of host memory\n"); return 1; }
        if (mem == "registered" || mem == "mapped") {
            unsigned f = mem == "mapped" ? cudaHostRegisterMapped : cudaHostRegisterDefault;
            CHECK(cudaHostRegister(in, in_bytes, f));
            CHECK(cudaHostRegister(out, out_bytes, f));
        }
        if (staged) CHECK(cudaMallocHost((void **)&stage, STAGE));
    } else if (mem == "pinned" || mem == "write-combined" || mem == "zero-copy") {
        CHECK(cudaHostAlloc((void **)&in, in_bytes, mem == "write-combined" ? cudaHostAllocWriteCombined
                                                    : mem == "zero-copy" ? cudaHostAllocMapped : cudaHostAllocDefault));
        CHECK(cudaHostAlloc((void **)&out, out_bytes, mem == "zero-copy" ? cudaHostAllocMapped : cudaHostAllocDefault));
    } else if (managed) {
        CHECK(cudaMallocManaged((void **)&in, in_bytes));
        CHECK(cudaMallocManaged((void **)&out, out_bytes));
    } else { fprintf(stderr, "unknown --mem %s\n", mem.c_str()); return 2; }
    if (copies) {
        CHECK(cudaMalloc((void **)&d_in, in_bytes));
        CHECK(cudaMalloc((void **)&d_out, out_bytes));
    } else if (mem == "mapped" || mem == "zero-copy") {
        CHECK(cudaHostGetDevicePointer((void **)&d_in, in, 0));
        CHECK(cudaHostGetDevicePointer((void **)&d_out, out, 0));
    } else {
        d_in = in; d_out = out;
    }
    int device = 0;
    CHECK(cudaGetDevice(&device));
    cudaMemLocation gpu{cudaMemLocationTypeDevice, device}, host{cudaMemLocationTypeHost, 0};

    double checksum = 0;
    for (int f = 0; f < frames; ++f) {
        unsigned seed = 0x9E3779B9u * (unsigned)(f + 1);
        for (size_t i = 0; i < IN; ++i) {  // the frame, decoded
            seed ^= seed << 13; seed ^= seed >> 17; seed ^= seed << 5;
            in[i] = (float)(seed & 0xFFFF) * (1.0f / 65536.0f);
        }
        if (staged) {
            for (size_t at = 0; at < in_bytes; at += STAGE) {
                size_t n = in_bytes - at < STAGE ? in_bytes - at : STAGE;
                memcpy(stage, (const char *)in + at, n);
                CHECK(cudaMemcpy((char *)d_in + at, stage, n, cudaMemcpyHostToDevice));
            }
        } else if (copies) {
            CHECK(cudaMemcpy(d_in, in, in_bytes, cudaMemcpyHostToDevice));
        } else if (mem == "managed-prefetch") {
            CHECK(cudaMemPrefetchAsync(in, in_bytes, gpu, 0, 0));
        }
        reduce6<<<(unsigned)((OUT + 255) / 256), 256>>>(d_in, d_out, OUT);
        CHECK(cudaGetLastError());
        if (staged) {
            for (size_t at = 0; at < out_bytes; at += STAGE) {
                size_t n = out_bytes - at < STAGE ? out_bytes - at : STAGE;
                CHECK(cudaMemcpy(stage, (const char *)d_out + at, n, cudaMemcpyDeviceToHost));
                memcpy((char *)out + at, stage, n);
            }
        } else if (copies) {
            CHECK(cudaMemcpy(out, d_out, out_bytes, cudaMemcpyDeviceToHost));
        } else {
            if (mem == "managed-prefetch") CHECK(cudaMemPrefetchAsync(out, out_bytes, host, 0, 0));
            CHECK(cudaDeviceSynchronize());
        }
        double s = 0;
        for (size_t i = 0; i < OUT; ++i) s += out[i];  // the result, used
        checksum += s;
    }

    if (copies) { CHECK(cudaFree(d_in)); CHECK(cudaFree(d_out)); }
    if (stage) CHECK(cudaFreeHost(stage));
    if (managed) {
        CHECK(cudaFree(in)); CHECK(cudaFree(out));
    } else if (!mallocd) {
        CHECK(cudaFreeHost(in)); CHECK(cudaFreeHost(out));
    } else {
        if (mem == "registered" || mem == "mapped") { CHECK(cudaHostUnregister(in)); CHECK(cudaHostUnregister(out)); }
        free(in); free(out);
    }
    printf("{\"app\": \"staged_upload\", \"mem\": \"%s\", \"checksum\": %.9e}\n", mem.c_str(), checksum);
    return 0;
}

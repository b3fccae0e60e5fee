// An image filter, written as a video pipeline's first version usually is: each of 30 frames (4096 x 2048
// floats, 32 MiB) written by the host into a malloc'd buffer, copied in with cudaMemcpy, blurred by a 5 x 5
// box filter that reads each pixel 25 times from global memory (no shared-memory tiling), and the 32 MiB
// result copied back and read by the host. Fixed before its first measurement, to check advice on a kernel
// that reads its input many times over (in host memory, each read would cross the link unless a cache holds it).
//
//   blur [--mem MODE] [--frames 30]
//
// Modes: pageable (as written), pinned (cudaMallocHost), registered (the malloc'd buffers
// cudaHostRegister'ed), write-combined (the input frame from cudaHostAlloc write-combined, the result pinned),
// mapped (the malloc'd buffers registered mapped: the kernel reads the frame and writes the result in host
// memory), zero-copy (cudaHostAlloc mapped, the same), managed, managed-prefetch (the frame prefetched to the
// GPU before the kernel and the result back after it).
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include "../cuda_check.h"

static const int W = 4096, H = 2048, R = 2;

__global__ void box(const float *in, float *out) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= W || y >= H) return;
    float s = 0.f;
    for (int dy = -R; dy <= R; ++dy)
        for (int dx = -R; dx <= R; ++dx) {
            int xx = min(max(x + dx, 0), W - 1), yy = min(max(y + dy, 0), H - 1);
            s += in[(size_t)yy * W + xx];
        }
    out[(size_t)y * W + x] = s * (1.f / 25.f);
}

int main(int argc, char **argv) {
    std::string mem = "pageable";
    int frames = 30;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--mem")) mem = argv[i + 1];
        else if (!strcmp(argv[i], "--frames")) frames = atoi(argv[i + 1]);
        else { fprintf(stderr, "unknown option %s\n", argv[i]); return 2; }
    }
    const size_t bytes = (size_t)W * H * 4;
    bool managed = mem == "managed" || mem == "managed-prefetch";
    bool copies = mem == "pageable" || mem == "pinned" || mem == "registered" || mem == "write-combined";
    int dev = 0;
    CHECK(cudaGetDevice(&dev));
    cudaMemLocation gpu{cudaMemLocationTypeDevice, dev}, host{cudaMemLocationTypeHost, 0};
    float *in = nullptr, *out = nullptr, *d_in = nullptr, *d_out = nullptr;
    if (mem == "pageable" || mem == "registered" || mem == "mapped") {
        in = (float *)malloc(bytes);
        out = (float *)malloc(bytes);
        if (mem != "pageable") {
            unsigned f = mem == "mapped" ? cudaHostRegisterMapped : cudaHostRegisterDefault;
            CHECK(cudaHostRegister(in, bytes, f));
            CHECK(cudaHostRegister(out, bytes, f));
        }
    } else if (mem == "pinned" || mem == "write-combined" || mem == "zero-copy") {
        unsigned f = mem == "write-combined" ? cudaHostAllocWriteCombined
                     : mem == "zero-copy"    ? cudaHostAllocMapped
                                             : cudaHostAllocDefault;
        CHECK(cudaHostAlloc((void **)&in, bytes, f));
        CHECK(cudaHostAlloc((void **)&out, bytes, mem == "zero-copy" ? cudaHostAllocMapped : cudaHostAllocDefault));
    } else if (managed) {
        CHECK(cudaMallocManaged((void **)&in, bytes));
        CHECK(cudaMallocManaged((void **)&out, bytes));
    } else { fprintf(stderr, "unknown --mem %s\n", mem.c_str()); return 2; }
    if (copies) {
        CHECK(cudaMalloc((void **)&d_in, bytes));
        CHECK(cudaMalloc((void **)&d_out, bytes));
    } else if (managed) {
        d_in = in; d_out = out;
    } else {
        CHECK(cudaHostGetDevicePointer((void **)&d_in, in, 0));
        CHECK(cudaHostGetDevicePointer((void **)&d_out, out, 0));
    }
    dim3 block(32, 8), grid(W / 32, H / 8);
    double total = 0;
    for (int f = 0; f < frames; ++f) {
        for (size_t i = 0; i < (size_t)W * H; ++i) in[i] = (float)((i * 31 + f * 7) % 255);  // the frame
        if (copies) CHECK(cudaMemcpy(d_in, in, bytes, cudaMemcpyHostToDevice));
        if (mem == "managed-prefetch") {
            CHECK(cudaMemPrefetchAsync(in, bytes, gpu, 0, 0));
            CHECK(cudaMemPrefetchAsync(out, bytes, gpu, 0, 0));
        }
        box<<<grid, block>>>(d_in, d_out);
        CHECK(cudaGetLastError());
        if (copies) CHECK(cudaMemcpy(out, d_out, bytes, cudaMemcpyDeviceToHost));
        else {
            if (mem == "managed-prefetch") CHECK(cudaMemPrefetchAsync(out, bytes, host, 0, 0));
            CHECK(cudaDeviceSynchronize());
        }
        double s = 0;
        for (size_t i = 0; i < (size_t)W * H; ++i) s += out[i];  // the result, read in full
        total += s;
    }
    printf("{\"app\": \"blur\", \"mem\": \"%s\", \"checksum\": %.9g}\n", mem.c_str(), total);
    if (copies) {
        CHECK(cudaFree(d_in)); CHECK(cudaFree(d_out));
    }
    if (managed) {
        CHECK(cudaFree(in)); CHECK(cudaFree(out));
    } else if (mem == "pinned" || mem == "write-combined" || mem == "zero-copy") {
        CHECK(cudaFreeHost(in)); CHECK(cudaFreeHost(out));
    } else {
        if (mem != "pageable") {
            CHECK(cudaHostUnregister(in)); CHECK(cudaHostUnregister(out));
        }
        free(in); free(out);
    }
    return 0;
}

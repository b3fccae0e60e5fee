// An iterative per-frame refinement, written as such a loop usually is: each of 20 frames (8 Mi floats, 32 MiB)
// computed by the host into a malloc'd buffer, copied in with cudaMemcpy, refined by 40 launches of an in-place
// update (each launch reads and rewrites the whole frame: the first from the input into the result, the others
// in place), and the 32 MiB result copied back and read by the host. Fixed before its first measurement, to check
// advice on a loop whose kernels make many passes over data that, in host memory, every pass would read across the
// link again.
//
//   refine [--mem MODE] [--frames 20] [--passes 40]
//
// Modes: pageable (as written), pinned (cudaMallocHost), registered (the malloc'd buffers cudaHostRegister'ed),
// write-combined (the input from cudaHostAlloc write-combined, the result pinned), mapped (the malloc'd buffers
// registered mapped: every launch reads and writes host memory), zero-copy (cudaHostAlloc mapped, the same),
// managed, managed-prefetch (both buffers prefetched to the GPU before the launches, the result back after them),
// managed-advise-accessed-by-gpu (managed buffers left on the host, the GPU mapping them).
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include "../cuda_check.h"

static const size_t N = (size_t)8 << 20;

__global__ void refine(const float *src, float *dst, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float x = src[i];
        dst[i] = 0.5f * x + 0.25f * sqrtf(x + 1.f);
    }
}

int main(int argc, char **argv) {
    std::string mem = "pageable";
    int frames = 20, passes = 40;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--mem")) mem = argv[i + 1];
        else if (!strcmp(argv[i], "--frames")) frames = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--passes")) passes = atoi(argv[i + 1]);
        else { fprintf(stderr, "unknown option %s\n", argv[i]); return 2; }
    }
    const size_t bytes = N * 4;
    bool accessed_by = mem == "managed-advise-accessed-by-gpu";
    bool managed = mem == "managed" || mem == "managed-prefetch" || accessed_by;
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
        if (accessed_by) {
            CHECK(cudaMemAdvise(in, bytes, cudaMemAdviseSetAccessedBy, gpu));
            CHECK(cudaMemAdvise(out, bytes, cudaMemAdviseSetAccessedBy, gpu));
        }
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
    int sms = 0;
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    double total = 0;
    for (int f = 0; f < frames; ++f) {
        for (size_t i = 0; i < N; ++i) in[i] = (float)((i * 31 + f * 7) % 255);  // the frame
        if (copies) CHECK(cudaMemcpy(d_in, in, bytes, cudaMemcpyHostToDevice));
        if (mem == "managed-prefetch") {
            CHECK(cudaMemPrefetchAsync(in, bytes, gpu, 0, 0));
            CHECK(cudaMemPrefetchAsync(out, bytes, gpu, 0, 0));
        }
        for (int p = 0; p < passes; ++p) {
            refine<<<sms * 8, 256>>>(p == 0 ? d_in : d_out, d_out, N);
            CHECK(cudaGetLastError());
        }
        if (copies) CHECK(cudaMemcpy(out, d_out, bytes, cudaMemcpyDeviceToHost));
        else {
            if (mem == "managed-prefetch") CHECK(cudaMemPrefetchAsync(out, bytes, host, 0, 0));
            CHECK(cudaDeviceSynchronize());
        }
        double s = 0;
        for (size_t i = 0; i < N; ++i) s += out[i];  // the result, read in full
        total += s;
    }
    printf("{\"app\": \"refine\", \"mem\": \"%s\", \"checksum\": %.9g}\n", mem.c_str(), total);
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

// A managed program written with the prefetches the CUDA guides recommend: two cudaMallocManaged buffers, an
// input the host fills whole each step (a new 128 MiB frame of samples) and an output the GPU writes whole from
// it (a filtered frame) that the host then reads whole (its checksum). Each step the input and output are
// prefetched to the GPU before the kernel, and the output back to the host before the host reads it. Fixed before
// its first measurement, to check advice on a managed program that already prefetches (its trace holds prefetch
// calls, and migrations the prefetches made, not faults).
//
//   prefetched [--mem MODE] [--mib 128] [--steps 20]
//
// Modes: managed-prefetch (as written), managed (the same buffers, no prefetch), pinned (device buffers and
// cudaMallocHost host buffers, cudaMemcpy in and out), registered (the same with malloc'd host buffers
// cudaHostRegister'ed), pageable (malloc'd host buffers, cudaMemcpy), write-combined (the input from cudaHostAlloc
// write-combined, the output pinned), mapped (the malloc'd buffers registered mapped: the kernel reads the input
// and writes the output in host memory), zero-copy (the same with cudaHostAlloc mapped buffers). Added after the
// first measurement, the modes above unchanged: managed-advise-accessed-by-gpu and managed-advise-prefer-gpu (the
// managed buffers advised so once, no prefetches).
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include "../cuda_check.h"

// a three-tap filter along the frame, its ends clamped: each output reads three neighbouring inputs
__global__ void filter(const float *in, float *out, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float l = in[i > 0 ? i - 1 : 0], c = in[i], r = in[i + 1 < n ? i + 1 : n - 1];
        out[i] = 0.25f * l + 0.5f * c + 0.25f * r;
    }
}

int main(int argc, char **argv) {
    std::string mem = "managed-prefetch";
    double mib = 128;
    int steps = 20;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--mem")) mem = argv[i + 1];
        else if (!strcmp(argv[i], "--mib")) mib = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--steps")) steps = atoi(argv[i + 1]);
        else { fprintf(stderr, "unknown option %s\n", argv[i]); return 2; }
    }
    const size_t bytes = (size_t)(mib * 1048576), n = bytes / sizeof(float);
    if (n < 2 || steps < 1) { fprintf(stderr, "--mib and --steps must be positive\n"); return 2; }
    const bool accessed_by = mem == "managed-advise-accessed-by-gpu", prefer_gpu = mem == "managed-advise-prefer-gpu";
    const bool managed = mem == "managed" || mem == "managed-prefetch" || accessed_by || prefer_gpu;
    const bool copies = mem == "pinned" || mem == "registered" || mem == "pageable" || mem == "write-combined";
    const bool in_place = mem == "mapped" || mem == "zero-copy";
    if (!managed && !copies && !in_place) { fprintf(stderr, "unknown --mem %s\n", mem.c_str()); return 2; }
    size_t free_b = 0, total_b = 0;
    CHECK(cudaMemGetInfo(&free_b, &total_b));
    if (2 * bytes > free_b / 2) {  // managed memory is never oversubscribed here
        fprintf(stderr, "--mib %.0f: two buffers are more than half the GPU's free memory (%zu MiB)\n", mib,
                free_b >> 20);
        return 2;
    }
    int dev = 0;
    CHECK(cudaGetDevice(&dev));
    cudaMemLocation gpu{cudaMemLocationTypeDevice, dev}, cpu{cudaMemLocationTypeHost, 0};
    float *in = nullptr, *out = nullptr, *d_in = nullptr, *d_out = nullptr;
    if (managed) {
        CHECK(cudaMallocManaged((void **)&in, bytes));
        CHECK(cudaMallocManaged((void **)&out, bytes));
        if (accessed_by || prefer_gpu) {
            const cudaMemoryAdvise advice = accessed_by ? cudaMemAdviseSetAccessedBy : cudaMemAdviseSetPreferredLocation;
            CHECK(cudaMemAdvise(in, bytes, advice, gpu));
            CHECK(cudaMemAdvise(out, bytes, advice, gpu));
        }
        d_in = in;
        d_out = out;
    } else if (mem == "pageable" || mem == "registered" || mem == "mapped") {
        in = (float *)malloc(bytes);
        out = (float *)malloc(bytes);
        if (!in || !out) { fprintf(stderr, "malloc failed\n"); return 1; }
        if (mem != "pageable") {
            unsigned f = mem == "mapped" ? cudaHostRegisterMapped : cudaHostRegisterDefault;
            CHECK(cudaHostRegister(in, bytes, f));
            CHECK(cudaHostRegister(out, bytes, f));
        }
    } else {
        unsigned f = mem == "zero-copy" ? cudaHostAllocMapped : cudaHostAllocDefault;
        CHECK(cudaHostAlloc((void **)&in, bytes, mem == "write-combined" ? cudaHostAllocWriteCombined : f));
        CHECK(cudaHostAlloc((void **)&out, bytes, f));
    }
    if (copies) {
        CHECK(cudaMalloc((void **)&d_in, bytes));
        CHECK(cudaMalloc((void **)&d_out, bytes));
    } else if (in_place) {
        CHECK(cudaHostGetDevicePointer((void **)&d_in, in, 0));
        CHECK(cudaHostGetDevicePointer((void **)&d_out, out, 0));
    }
    double checksum = 0;
    for (int s = 0; s < steps; ++s) {
        for (size_t i = 0; i < n; ++i)  // the step's frame: a sample a float, the host's whole write of the input
            in[i] = (float)((i * 2654435761u + (size_t)s * 40503u) & 0xffff) * (1.f / 65536.f);
        if (mem == "managed-prefetch") {
            CHECK(cudaMemPrefetchAsync(in, bytes, gpu, 0, 0));
            CHECK(cudaMemPrefetchAsync(out, bytes, gpu, 0, 0));
        }
        if (copies) CHECK(cudaMemcpy(d_in, in, bytes, cudaMemcpyHostToDevice));
        filter<<<132 * 8, 256>>>(d_in, d_out, n);
        CHECK(cudaGetLastError());
        if (copies) CHECK(cudaMemcpy(out, d_out, bytes, cudaMemcpyDeviceToHost));
        else if (mem == "managed-prefetch") CHECK(cudaMemPrefetchAsync(out, bytes, cpu, 0, 0));
        CHECK(cudaDeviceSynchronize());
        double e = 0;
        for (size_t i = 0; i < n; ++i) e += out[i];  // the host's whole read of the output
        checksum += e;
    }
    printf("{\"app\": \"prefetched\", \"mem\": \"%s\", \"checksum\": %.9g}\n", mem.c_str(), checksum);
    if (copies) {
        CHECK(cudaFree(d_in));
        CHECK(cudaFree(d_out));
    }
    if (managed) {
        CHECK(cudaFree(in));
        CHECK(cudaFree(out));
    } else if (mem == "pageable" || mem == "registered" || mem == "mapped") {
        if (mem != "pageable") {
            CHECK(cudaHostUnregister(in));
            CHECK(cudaHostUnregister(out));
        }
        free(in);
        free(out);
    } else {
        CHECK(cudaFreeHost(in));
        CHECK(cudaFreeHost(out));
    }
    return 0;
}

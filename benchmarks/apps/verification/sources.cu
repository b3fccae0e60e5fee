// Point sources in a managed field, written as unified memory invites: one cudaMallocManaged field the host fills,
// the GPU damps towards its background every step, and the host updates its sources between steps: it reads each
// source's cell, logs it, and adds the source's strength (one float every 32 KiB of a 256 MiB field, 8192 cells).
// No prefetch, no advice. Fixed before its first measurement, to check advice on a managed program whose host reads
// and writes a sparse part spread across the field each step.
//
//   sources [--mem MODE] [--mib 256] [--steps 24] [--spacing 32768]
//
// Modes: managed (as written), managed-prefetch (the field prefetched to the GPU before each step's kernel),
// managed-advise-accessed-by-gpu, managed-advise-prefer-gpu, pinned (a device field and a pinned host copy, the whole
// field copied back after each step's kernel and in again after the host's update), registered (the same with a
// malloc'd host field cudaHostRegister'ed), pinned-sampled and registered-sampled (the same, but only the sources'
// cells copied back and in again, cudaMemcpy2D into and from their places in the host field).
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include "../cuda_check.h"

__global__ void damp(float *u, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float background = (float)((unsigned)(i * 2654435761u) >> 24) * (1.f / 256.f);
        u[i] = 0.9f * u[i] + 0.1f * background;
    }
}

int main(int argc, char **argv) {
    std::string mem = "managed";
    double mib = 256;
    int steps = 24;
    size_t spacing = 32768;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--mem")) mem = argv[i + 1];
        else if (!strcmp(argv[i], "--mib")) mib = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--steps")) steps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--spacing")) spacing = strtoull(argv[i + 1], nullptr, 10);
        else { fprintf(stderr, "unknown option %s\n", argv[i]); return 2; }
    }
    const size_t bytes = (size_t)(mib * 1048576), n = bytes / sizeof(float), stride = spacing / sizeof(float);
    if (stride == 0 || spacing % sizeof(float) || stride > n) {
        fprintf(stderr, "--spacing must be a multiple of 4 bytes, at most the field, got %zu\n", spacing);
        return 2;
    }
    const size_t count = (n + stride - 1) / stride;
    const bool managed = mem.rfind("managed", 0) == 0;
    const bool whole = mem == "pinned" || mem == "registered";          // the whole field back and in each step
    const bool sampled = mem == "pinned-sampled" || mem == "registered-sampled";  // only the sources' cells
    const bool registered = mem == "registered" || mem == "registered-sampled";
    if (managed && mem != "managed" && mem != "managed-prefetch" && mem != "managed-advise-accessed-by-gpu" &&
        mem != "managed-advise-prefer-gpu") {
        fprintf(stderr, "unknown --mem %s\n", mem.c_str());
        return 2;
    }
    if (!managed && !whole && !sampled) { fprintf(stderr, "unknown --mem %s\n", mem.c_str()); return 2; }
    size_t free_b = 0, total_b = 0;
    CHECK(cudaMemGetInfo(&free_b, &total_b));
    if (bytes > free_b / 2) {  // managed memory is never oversubscribed here
        fprintf(stderr, "--mib %.0f is more than half the GPU's free memory (%zu MiB)\n", mib, free_b >> 20);
        return 2;
    }
    int dev = 0;
    CHECK(cudaGetDevice(&dev));
    cudaMemLocation gpu{cudaMemLocationTypeDevice, dev};
    float *u = nullptr, *d = nullptr;
    if (managed) {
        CHECK(cudaMallocManaged((void **)&u, bytes));
        if (mem == "managed-advise-accessed-by-gpu") CHECK(cudaMemAdvise(u, bytes, cudaMemAdviseSetAccessedBy, gpu));
        if (mem == "managed-advise-prefer-gpu") CHECK(cudaMemAdvise(u, bytes, cudaMemAdviseSetPreferredLocation, gpu));
        d = u;
    } else {
        if (registered) {
            u = (float *)malloc(bytes);
            CHECK(cudaHostRegister(u, bytes, cudaHostRegisterDefault));
        } else {
            CHECK(cudaMallocHost((void **)&u, bytes));
        }
        CHECK(cudaMalloc((void **)&d, bytes));
    }
    for (size_t i = 0; i < n; ++i) u[i] = (float)(i % 1000) * 1e-3f;
    if (!managed) CHECK(cudaMemcpy(d, u, bytes, cudaMemcpyHostToDevice));
    double log_sum = 0;
    for (int s = 0; s < steps; ++s) {
        if (mem == "managed-prefetch") CHECK(cudaMemPrefetchAsync(u, bytes, gpu, 0, 0));
        damp<<<132 * 8, 256>>>(d, n);
        CHECK(cudaGetLastError());
        if (whole) CHECK(cudaMemcpy(u, d, bytes, cudaMemcpyDeviceToHost));
        else if (sampled)
            CHECK(cudaMemcpy2D(u, spacing, d, spacing, sizeof(float), count, cudaMemcpyDeviceToHost));
        else CHECK(cudaDeviceSynchronize());
        double e = 0;
        for (size_t k = 0; k < count; ++k) {  // each source: its cell logged, then its strength added
            e += u[k * stride];
            u[k * stride] += 1.f + (float)(k % 3);
        }
        log_sum += e;
        if (whole) CHECK(cudaMemcpy(d, u, bytes, cudaMemcpyHostToDevice));
        else if (sampled)
            CHECK(cudaMemcpy2D(d, spacing, u, spacing, sizeof(float), count, cudaMemcpyHostToDevice));
    }
    printf("{\"app\": \"sources\", \"mem\": \"%s\", \"checksum\": %.9g}\n", mem.c_str(), log_sum);
    if (managed) CHECK(cudaFree(u));
    else {
        CHECK(cudaFree(d));
        if (registered) {
            CHECK(cudaHostUnregister(u));
            free(u);
        } else {
            CHECK(cudaFreeHost(u));
        }
    }
    return 0;
}

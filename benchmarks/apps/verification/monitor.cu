// A relaxation in managed memory whose host watches it, written as unified memory invites: one cudaMallocManaged
// field the host fills, the GPU relaxes in place every step, and the host reads a probe of it between steps (one
// value every 4 KiB, summed for a convergence log line). No prefetch, no advice. Fixed before its first measurement,
// to check advice on a managed program whose host reads a thin part spread over every page of the field.
//
//   monitor [--mem MODE] [--mib 256] [--steps 30] [--probe 4096]
//
// Modes: managed (as written), managed-prefetch (the field prefetched to the GPU before each step's kernel and back
// to the host before the probe is read), managed-advise-prefer-gpu, pinned (a device field and a pinned host copy,
// copied in once and back whole each step), registered (the same with a malloc'd host field cudaHostRegister'ed),
// pinned-probe (pinned, but only the probe copied back each step, cudaMemcpy2D), registered-probe (registered, but
// only the probe copied back each step, cudaMemcpy2D into its places in the host field: added after the first
// measurements, as `umprof advise`'s change for this program says it: "cudaHostRegister'd once ...; copy back only
// what the host reads ... one cudaMemcpy2D gathers them").
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include "../cuda_check.h"

__global__ void relax(float *u, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float target = (float)((unsigned)(i * 2654435761u) >> 24) * (1.f / 256.f);
        u[i] = 0.75f * u[i] + 0.25f * target;
    }
}

int main(int argc, char **argv) {
    std::string mem = "managed";
    double mib = 256;
    int steps = 30;
    size_t probe = 4096;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--mem")) mem = argv[i + 1];
        else if (!strcmp(argv[i], "--mib")) mib = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--steps")) steps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--probe")) probe = strtoull(argv[i + 1], nullptr, 10);
        else { fprintf(stderr, "unknown option %s\n", argv[i]); return 2; }
    }
    const size_t bytes = (size_t)(mib * 1048576), n = bytes / sizeof(float), stride = probe / sizeof(float);
    if (stride == 0 || probe % sizeof(float) || stride > n) {
        fprintf(stderr, "--probe must be a multiple of 4 bytes, at most the field, got %zu\n", probe);
        return 2;
    }
    const size_t count = (n + stride - 1) / stride;
    bool managed = mem.rfind("managed", 0) == 0;
    bool whole = mem == "pinned" || mem == "registered";  // the whole field copied back each step
    if (managed && mem != "managed" && mem != "managed-prefetch" && mem != "managed-advise-prefer-gpu") {
        fprintf(stderr, "unknown --mem %s\n", mem.c_str());
        return 2;
    }
    bool in_place = mem == "registered-probe";  // the probe copied back into the host field itself
    if (!managed && !whole && !in_place && mem != "pinned-probe") { fprintf(stderr, "unknown --mem %s\n", mem.c_str()); return 2; }
    size_t free_b = 0, total_b = 0;
    CHECK(cudaMemGetInfo(&free_b, &total_b));
    if (bytes > free_b / 2) {  // managed memory is never oversubscribed here
        fprintf(stderr, "--mib %.0f is more than half the GPU's free memory (%zu MiB)\n", mib, free_b >> 20);
        return 2;
    }
    int dev = 0;
    CHECK(cudaGetDevice(&dev));
    cudaMemLocation gpu{cudaMemLocationTypeDevice, dev}, cpu{cudaMemLocationTypeHost, 0};
    float *u = nullptr, *d = nullptr, *probed = nullptr;
    if (managed) {
        CHECK(cudaMallocManaged((void **)&u, bytes));
        if (mem == "managed-advise-prefer-gpu") CHECK(cudaMemAdvise(u, bytes, cudaMemAdviseSetPreferredLocation, gpu));
        d = u;
    } else {
        if (mem == "registered" || in_place) {
            u = (float *)malloc(bytes);
            CHECK(cudaHostRegister(u, bytes, cudaHostRegisterDefault));
        } else {
            CHECK(cudaMallocHost((void **)&u, bytes));
        }
        CHECK(cudaMalloc((void **)&d, bytes));
        if (mem == "pinned-probe") CHECK(cudaMallocHost((void **)&probed, count * sizeof(float)));
    }
    for (size_t i = 0; i < n; ++i) u[i] = (float)(i % 1000) * 1e-3f;
    if (!managed) CHECK(cudaMemcpy(d, u, bytes, cudaMemcpyHostToDevice));
    double log_sum = 0;
    for (int s = 0; s < steps; ++s) {
        if (mem == "managed-prefetch") CHECK(cudaMemPrefetchAsync(u, bytes, gpu, 0, 0));
        relax<<<132 * 8, 256>>>(d, n);
        CHECK(cudaGetLastError());
        const float *view = u;
        size_t step = stride;
        if (whole) {
            CHECK(cudaMemcpy(u, d, bytes, cudaMemcpyDeviceToHost));
        } else if (mem == "pinned-probe") {
            CHECK(cudaMemcpy2D(probed, sizeof(float), d, probe, sizeof(float), count, cudaMemcpyDeviceToHost));
            view = probed;
            step = 1;
        } else if (in_place) {
            CHECK(cudaMemcpy2D(u, probe, d, probe, sizeof(float), count, cudaMemcpyDeviceToHost));
        } else {
            if (mem == "managed-prefetch") CHECK(cudaMemPrefetchAsync(u, bytes, cpu, 0, 0));
            CHECK(cudaDeviceSynchronize());
        }
        double e = 0;
        for (size_t k = 0; k < count; ++k) e += view[k * step];
        log_sum += e;
    }
    printf("{\"app\": \"monitor\", \"mem\": \"%s\", \"checksum\": %.9g}\n", mem.c_str(), log_sum);
    if (managed) CHECK(cudaFree(u));
    else {
        CHECK(cudaFree(d));
        if (mem == "registered" || in_place) {
            CHECK(cudaHostUnregister(u));
            free(u);
        } else {
            CHECK(cudaFreeHost(u));
        }
        if (probed) CHECK(cudaFreeHost(probed));
    }
    return 0;
}

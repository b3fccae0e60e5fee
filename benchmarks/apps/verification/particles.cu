// Particles in managed memory, written as unified memory invites: one cudaMallocManaged array the host
// fills, the GPU integrates every step, and the host samples (every 4096th particle's energy, a log
// line each step) between steps. No prefetch, no advice. Fixed before its first measurement, to check
// advice on a managed program whose host reads a sparse part each step.
//
//   particles [--mem MODE] [--mib 256] [--steps 20]
//
// Modes: managed (as written), managed-prefetch (the array prefetched to the GPU before each step's
// kernel, the sampled particles read after it), managed-advise-accessed-by-gpu, managed-advise-prefer-gpu,
// pinned (a device array and a pinned host array, the whole array copied in once and back each step),
// registered (the same with a malloc'd host array cudaHostRegister'ed), pinned-sampled (pinned, but only the
// sampled particles copied back each step, cudaMemcpy2D), registered-sampled (registered, but only the sampled
// particles copied back each step, cudaMemcpy2D into their places in the host array: added after the first
// measurements, as `umprof advise`'s change for this program says it: "cudaHostRegister'd once ...; copy back only
// what the host reads ... one cudaMemcpy2D gathers them").
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include "../cuda_check.h"

struct Particle { float x, y, z, vx, vy, vz, m, e; };
static const size_t SAMPLE = 4096;  // every SAMPLE-th particle is logged

__global__ void integrate(Particle *p, size_t n, float dt) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        Particle q = p[i];
        float r2 = q.x * q.x + q.y * q.y + q.z * q.z + 1.f;
        float f = -q.m * rsqrtf(r2 * r2 * r2);
        q.vx += f * q.x * dt; q.vy += f * q.y * dt; q.vz += f * q.z * dt;
        q.x += q.vx * dt; q.y += q.vy * dt; q.z += q.vz * dt;
        q.e = 0.5f * q.m * (q.vx * q.vx + q.vy * q.vy + q.vz * q.vz) + f * r2;
        p[i] = q;
    }
}

int main(int argc, char **argv) {
    std::string mem = "managed";
    double mib = 256;
    int steps = 20;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--mem")) mem = argv[i + 1];
        else if (!strcmp(argv[i], "--mib")) mib = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--steps")) steps = atoi(argv[i + 1]);
        else { fprintf(stderr, "unknown option %s\n", argv[i]); return 2; }
    }
    const size_t n = (size_t)(mib * 1048576) / sizeof(Particle), bytes = n * sizeof(Particle), samples = n / SAMPLE;
    bool managed = mem.rfind("managed", 0) == 0;
    bool whole = mem == "pinned" || mem == "registered";  // the whole array copied back each step
    bool in_place = mem == "registered-sampled";  // the sampled records copied back into the host array itself
    if (!managed && !whole && !in_place && mem != "pinned-sampled") { fprintf(stderr, "unknown --mem %s\n", mem.c_str()); return 2; }
    int dev = 0;
    CHECK(cudaGetDevice(&dev));
    cudaMemLocation gpu{cudaMemLocationTypeDevice, dev};
    Particle *p = nullptr, *d = nullptr, *sampled = nullptr;
    if (managed) {
        CHECK(cudaMallocManaged((void **)&p, bytes));
        if (mem == "managed-advise-accessed-by-gpu") CHECK(cudaMemAdvise(p, bytes, cudaMemAdviseSetAccessedBy, gpu));
        if (mem == "managed-advise-prefer-gpu") CHECK(cudaMemAdvise(p, bytes, cudaMemAdviseSetPreferredLocation, gpu));
        d = p;
    } else {
        if (mem == "registered" || in_place) {
            p = (Particle *)malloc(bytes);
            CHECK(cudaHostRegister(p, bytes, cudaHostRegisterDefault));
        } else {
            CHECK(cudaMallocHost((void **)&p, bytes));
        }
        CHECK(cudaMalloc((void **)&d, bytes));
        if (mem == "pinned-sampled") CHECK(cudaMallocHost((void **)&sampled, samples * sizeof(Particle)));
    }
    for (size_t i = 0; i < n; ++i) {
        float t = (float)(i % 100003) * 1e-3f;
        p[i] = {t, 0.5f * t, -t, 0.f, 0.01f, 0.f, 1.f + (float)(i % 7), 0.f};
    }
    if (!managed) CHECK(cudaMemcpy(d, p, bytes, cudaMemcpyHostToDevice));
    double log_sum = 0;
    for (int s = 0; s < steps; ++s) {
        if (mem == "managed-prefetch") CHECK(cudaMemPrefetchAsync(p, bytes, gpu, 0, 0));
        integrate<<<132 * 8, 256>>>(d, n, 1e-3f);
        CHECK(cudaGetLastError());
        const Particle *view = p;
        size_t stride = SAMPLE;
        if (whole) {
            CHECK(cudaMemcpy(p, d, bytes, cudaMemcpyDeviceToHost));
        } else if (mem == "pinned-sampled") {
            CHECK(cudaMemcpy2D(sampled, sizeof(Particle), d, SAMPLE * sizeof(Particle), sizeof(Particle), samples,
                               cudaMemcpyDeviceToHost));
            view = sampled;
            stride = 1;
        } else if (in_place) {
            CHECK(cudaMemcpy2D(p, SAMPLE * sizeof(Particle), d, SAMPLE * sizeof(Particle), sizeof(Particle), samples,
                               cudaMemcpyDeviceToHost));
        } else {
            CHECK(cudaDeviceSynchronize());
        }
        double e = 0;
        for (size_t k = 0; k < samples; ++k) e += view[k * stride].e;
        log_sum += e;
    }
    printf("{\"app\": \"particles\", \"mem\": \"%s\", \"checksum\": %.9g}\n", mem.c_str(), log_sum);
    if (managed) CHECK(cudaFree(p));
    else {
        CHECK(cudaFree(d));
        if (mem == "registered" || in_place) {
            CHECK(cudaHostUnregister(p));
            free(p);
        } else {
            CHECK(cudaFreeHost(p));
        }
        if (sampled) CHECK(cudaFreeHost(sampled));
    }
    return 0;
}

// A forced solver with diagnostics, written as a model's driver usually is: a 128 MiB table of coefficients built by
// the host in a malloc'd buffer and copied to the GPU once; then 240 steps, each with a 16 MiB forcing field computed
// by the host into a malloc'd buffer and copied in with cudaMemcpy, and a kernel advancing a 64 MiB state kept on the
// GPU from the coefficients and the forcing; every 8th step a second kernel reduces the state to a 32 MiB diagnostics
// field, copied back with cudaMemcpy into a malloc'd buffer the host reads whole (a checksum, standing for the
// diagnostics' writer). Fixed before its first measurement, to check advice on a loop of two flows at two cadences
// (in every step, out every 8th) from two host buffers, beside a table copied once.
//
//   cadence [--mem MODE] [--steps 240] [--every 8]
//
// pageable is the program as written; the other modes are the ways advice can ask for, applied to the host buffers:
//   pinned, registered      the table, forcing and diagnostics buffers from cudaMallocHost / malloc'd and
//                           cudaHostRegister'ed, copied as written
//   write-combined          the table and forcing buffers (the host only writes them) from cudaHostAlloc
//                           write-combined, the diagnostics buffer from cudaMallocHost
//   mapped, zero-copy       the forcing and diagnostics buffers registered mapped / from cudaHostAlloc mapped: the step
//                           kernel reads the forcing and the reduction writes the diagnostics in host memory (no copies
//                           in the loop); the table, read every step, still copied in once from its malloc'd buffer
//   managed                 the three buffers from cudaMallocManaged, written and read by the host in place
//   managed-prefetch        the same, the table prefetched to the GPU once, the forcing to the GPU before each step's
//                           kernel and back to the host before the host rewrites it, the diagnostics to the GPU before
//                           the reduction and back to the host before the host reads them
//   managed-advise-accessed-by-gpu  the same buffers, the forcing and diagnostics advised accessed by the GPU once
//   pinned-pipelined        pinned buffers and two forcing buffers each side: the host computes the next step's forcing
//                           while the current one's copy and kernel run on a stream (an event a buffer)
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include "host_memory.h"

static const size_t STATE = 16u << 20, TABLE = 2 * STATE, FORCING = STATE / 4, DIAG = STATE / 2;  // floats

__global__ void init(float *s, const float *tab, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        s[i] = 0.5f * tab[i];
}

// a relaxation towards the forcing: each cell reads its two coefficients and the forcing of its group of four
__global__ void step(float *s, const float *tab, const float *f, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        s[i] = s[i] * tab[i] + tab[n + i] * f[i >> 2];
}

__global__ void reduce(const float *s, float *g, size_t m) {
    for (size_t j = blockIdx.x * (size_t)blockDim.x + threadIdx.x; j < m; j += (size_t)gridDim.x * blockDim.x)
        g[j] = s[2 * j] + s[2 * j + 1];
}

static void compute_forcing(float *f, int s) {  // the host's whole write of the step's forcing
    const float t = 1e-4f * (float)s;
    for (size_t i = 0; i < FORCING; ++i) f[i] = 1e-3f * (float)(i & 1023) + t;
}

static double read_diagnostics(const float *g) {  // the host's whole read of the diagnostics
    double a[4] = {0, 0, 0, 0};
    for (size_t j = 0; j < DIAG; j += 4)
        for (int k = 0; k < 4; ++k) a[k] += g[j + k];
    return a[0] + a[1] + a[2] + a[3];
}

int main(int argc, char **argv) {
    std::string mem = "pageable";
    int steps = 240, every = 8;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--mem")) mem = argv[i + 1];
        else if (!strcmp(argv[i], "--steps")) steps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--every")) every = atoi(argv[i + 1]);
        else { fprintf(stderr, "unknown option %s\n", argv[i]); return 2; }
    }
    if (steps < 1 || every < 1) { fprintf(stderr, "--steps and --every must be positive\n"); return 2; }
    Kind tab_k, f_k, g_k;
    if (mem == "pageable") tab_k = f_k = g_k = MALLOC;
    else if (mem == "pinned" || mem == "pinned-pipelined") tab_k = f_k = g_k = PINNED;
    else if (mem == "registered") tab_k = f_k = g_k = REGISTERED;
    else if (mem == "write-combined") { tab_k = f_k = WRITE_COMBINED; g_k = PINNED; }
    else if (mem == "mapped") { tab_k = MALLOC; f_k = g_k = REGISTERED_MAPPED; }
    else if (mem == "zero-copy") { tab_k = MALLOC; f_k = g_k = ALLOC_MAPPED; }
    else if (mem == "managed" || mem == "managed-prefetch" || mem == "managed-advise-accessed-by-gpu")
        tab_k = f_k = g_k = MANAGED;
    else { fprintf(stderr, "unknown --mem %s\n", mem.c_str()); return 2; }
    const bool managed = tab_k == MANAGED, prefetch = mem == "managed-prefetch", pipelined = mem == "pinned-pipelined";
    const bool in_place = f_k == REGISTERED_MAPPED || f_k == ALLOC_MAPPED;
    const size_t need = (TABLE + FORCING + DIAG) * sizeof(float);
    size_t free_b = 0, total_b = 0;
    CHECK(cudaMemGetInfo(&free_b, &total_b));
    if (managed && need > free_b / 2) {  // managed memory is never oversubscribed here
        fprintf(stderr, "the managed buffers (%zu MiB) are more than half the GPU's free memory (%zu MiB)\n",
                need >> 20, free_b >> 20);
        return 2;
    }
    int dev = 0;
    CHECK(cudaGetDevice(&dev));
    cudaMemLocation gpu{cudaMemLocationTypeDevice, dev}, cpu{cudaMemLocationTypeHost, 0};
    auto floats = [](Kind k, size_t n) { return (float *)host_alloc(k, n * sizeof(float)); };
    float *tab = floats(tab_k, TABLE), *g = floats(g_k, DIAG);
    float *f[2] = {floats(f_k, FORCING), pipelined ? floats(f_k, FORCING) : nullptr};
    if (mem == "managed-advise-accessed-by-gpu") {
        CHECK(cudaMemAdvise(f[0], FORCING * sizeof(float), cudaMemAdviseSetAccessedBy, gpu));
        CHECK(cudaMemAdvise(g, DIAG * sizeof(float), cudaMemAdviseSetAccessedBy, gpu));
    }
    float *d_s = nullptr, *d_tab = tab, *d_f[2] = {f[0], nullptr}, *d_g = g;
    CHECK(cudaMalloc((void **)&d_s, STATE * sizeof(float)));
    if (!managed) CHECK(cudaMalloc((void **)&d_tab, TABLE * sizeof(float)));
    if (in_place) {
        CHECK(cudaHostGetDevicePointer((void **)&d_f[0], f[0], 0));
        CHECK(cudaHostGetDevicePointer((void **)&d_g, g, 0));
    } else if (!managed) {
        CHECK(cudaMalloc((void **)&d_f[0], FORCING * sizeof(float)));
        if (pipelined) CHECK(cudaMalloc((void **)&d_f[1], FORCING * sizeof(float)));
        CHECK(cudaMalloc((void **)&d_g, DIAG * sizeof(float)));
    }
    for (size_t i = 0; i < STATE; ++i) {  // the coefficients: a decay in (0.9, 1) and a coupling to the forcing
        tab[i] = 0.9f + 1.9e-7f * (float)(i & 0x7ffff);
        tab[STATE + i] = 1e-2f * (float)(i & 127) / 128.f;
    }
    if (managed) { if (prefetch) CHECK(cudaMemPrefetchAsync(tab, TABLE * sizeof(float), gpu, 0, 0)); }
    else CHECK(cudaMemcpy(d_tab, tab, TABLE * sizeof(float), cudaMemcpyHostToDevice));
    const dim3 grid(132 * 8), block(256);
    init<<<grid, block>>>(d_s, d_tab, STATE);
    CHECK(cudaGetLastError());
    cudaStream_t st = 0;
    cudaEvent_t copied[2] = {nullptr, nullptr};
    if (pipelined) {
        CHECK(cudaStreamCreate(&st));
        for (auto &e : copied) CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    }
    double checksum = 0;
    for (int s = 0; s < steps; ++s) {
        const int b = pipelined ? s & 1 : 0;
        if (pipelined) CHECK(cudaEventSynchronize(copied[b]));  // this buffer's last copy has read it
        compute_forcing(f[b], s);
        if (prefetch) CHECK(cudaMemPrefetchAsync(f[b], FORCING * sizeof(float), gpu, 0, 0));
        if (pipelined) {
            CHECK(cudaMemcpyAsync(d_f[b], f[b], FORCING * sizeof(float), cudaMemcpyHostToDevice, st));
            CHECK(cudaEventRecord(copied[b], st));
        } else if (!managed && !in_place) {
            CHECK(cudaMemcpy(d_f[0], f[0], FORCING * sizeof(float), cudaMemcpyHostToDevice));
        }
        step<<<grid, block, 0, st>>>(d_s, d_tab, d_f[b], STATE);
        CHECK(cudaGetLastError());
        if (prefetch) CHECK(cudaMemPrefetchAsync(f[b], FORCING * sizeof(float), cpu, 0, 0));
        if ((s + 1) % every == 0) {
            if (prefetch) CHECK(cudaMemPrefetchAsync(g, DIAG * sizeof(float), gpu, 0, 0));
            reduce<<<grid, block, 0, st>>>(d_s, d_g, DIAG);
            CHECK(cudaGetLastError());
            if (prefetch) CHECK(cudaMemPrefetchAsync(g, DIAG * sizeof(float), cpu, 0, 0));
            if (pipelined) CHECK(cudaMemcpyAsync(g, d_g, DIAG * sizeof(float), cudaMemcpyDeviceToHost, st));
            else if (!managed && !in_place) CHECK(cudaMemcpy(g, d_g, DIAG * sizeof(float), cudaMemcpyDeviceToHost));
            CHECK(cudaStreamSynchronize(st));
            checksum += read_diagnostics(g);
        } else if (managed || in_place) {
            CHECK(cudaDeviceSynchronize());  // the host rewrites the forcing the kernel reads in place
        }
    }
    CHECK(cudaDeviceSynchronize());
    printf("{\"app\": \"cadence\", \"mem\": \"%s\", \"checksum\": %.9g}\n", mem.c_str(), checksum);
    if (pipelined) {
        for (auto &e : copied) CHECK(cudaEventDestroy(e));
        CHECK(cudaStreamDestroy(st));
    }
    CHECK(cudaFree(d_s));
    if (!managed) CHECK(cudaFree(d_tab));
    if (!managed && !in_place) {
        CHECK(cudaFree(d_f[0]));
        if (pipelined) CHECK(cudaFree(d_f[1]));
        CHECK(cudaFree(d_g));
    }
    host_free(tab_k, tab);
    host_free(g_k, g);
    host_free(f_k, f[0]);
    if (f[1]) host_free(f_k, f[1]);
    return 0;
}

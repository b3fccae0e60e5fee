// One host thread driving every GPU of the machine, as a data-parallel program without a framework does: each GPU has
// its own stream, its own 32 MiB input and output in host memory and on the device; every step the host writes each
// GPU's input (computing its samples), copies it in on that GPU's stream, runs a kernel there, copies the output back,
// then waits for all of them and reads every output. 30 steps. Fixed before its first measurement, to check that
// `umprof advise` reads a trace of several GPUs as one application a GPU.
//
//   two_gpus [--mem MODE] [--steps 30] [--gpus N]
//
// Modes: pageable (as written: malloc'd buffers, cudaMemcpyAsync), pinned (cudaMallocHost), registered (the malloc'd
// buffers cudaHostRegister'ed).
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>
#include "../cuda_check.h"

static const size_t SAMPLES = (32u << 20) / sizeof(float);

__global__ void scale(const float *in, float *out, size_t n, float a) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i] * a + 1.0f;
}

struct Gpu {
    float *in = nullptr, *out = nullptr, *d_in = nullptr, *d_out = nullptr;
    cudaStream_t stream{};
};

int main(int argc, char **argv) {
    std::string mem = "pageable";
    int steps = 30, want = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--mem")) mem = argv[i + 1];
        else if (!strcmp(argv[i], "--steps")) steps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--gpus")) want = atoi(argv[i + 1]);
        else { fprintf(stderr, "unknown option %s\n", argv[i]); return 2; }
    }
    if (mem != "pageable" && mem != "pinned" && mem != "registered") {
        fprintf(stderr, "unknown --mem %s\n", mem.c_str());
        return 2;
    }
    int count = 0;
    CHECK(cudaGetDeviceCount(&count));
    if (want > 0 && want < count) count = want;
    const size_t bytes = SAMPLES * sizeof(float);
    std::vector<Gpu> gpus(count);
    for (int d = 0; d < count; ++d) {
        Gpu &g = gpus[d];
        CHECK(cudaSetDevice(d));
        CHECK(cudaStreamCreateWithFlags(&g.stream, cudaStreamNonBlocking));
        if (mem == "pinned") {
            CHECK(cudaMallocHost((void **)&g.in, bytes));
            CHECK(cudaMallocHost((void **)&g.out, bytes));
        } else {
            g.in = (float *)malloc(bytes);
            g.out = (float *)malloc(bytes);
            if (!g.in || !g.out) { fprintf(stderr, "out of host memory\n"); return 1; }
            if (mem == "registered") {
                CHECK(cudaHostRegister(g.in, bytes, cudaHostRegisterDefault));
                CHECK(cudaHostRegister(g.out, bytes, cudaHostRegisterDefault));
            }
        }
        CHECK(cudaMalloc((void **)&g.d_in, bytes));
        CHECK(cudaMalloc((void **)&g.d_out, bytes));
    }
    double sum = 0;
    for (int s = 0; s < steps; ++s) {
        for (int d = 0; d < count; ++d) {
            Gpu &g = gpus[d];
            unsigned seed = 2654435761u * (unsigned)(s * 16 + d + 1);
            for (size_t i = 0; i < SAMPLES; ++i) {
                seed = seed * 1664525u + 1013904223u;
                g.in[i] = (float)(seed >> 8) * (1.0f / 16777216.0f);
            }
            CHECK(cudaSetDevice(d));
            CHECK(cudaMemcpyAsync(g.d_in, g.in, bytes, cudaMemcpyHostToDevice, g.stream));
            scale<<<(unsigned)((SAMPLES + 255) / 256), 256, 0, g.stream>>>(g.d_in, g.d_out, SAMPLES, 0.5f + d);
            CHECK(cudaGetLastError());
            CHECK(cudaMemcpyAsync(g.out, g.d_out, bytes, cudaMemcpyDeviceToHost, g.stream));
        }
        for (int d = 0; d < count; ++d) {
            CHECK(cudaSetDevice(d));
            CHECK(cudaStreamSynchronize(gpus[d].stream));
            for (size_t i = 0; i < SAMPLES; ++i) sum += gpus[d].out[i];
        }
    }
    for (int d = 0; d < count; ++d) {
        Gpu &g = gpus[d];
        CHECK(cudaSetDevice(d));
        CHECK(cudaFree(g.d_in));
        CHECK(cudaFree(g.d_out));
        if (mem == "pinned") {
            CHECK(cudaFreeHost(g.in));
            CHECK(cudaFreeHost(g.out));
        } else {
            if (mem == "registered") { CHECK(cudaHostUnregister(g.in)); CHECK(cudaHostUnregister(g.out)); }
            free(g.in);
            free(g.out);
        }
        CHECK(cudaStreamDestroy(g.stream));
    }
    printf("{\"app\": \"two_gpus\", \"mem\": \"%s\", \"gpus\": %d, \"checksum\": %.6e}\n", mem.c_str(), count, sum);
    return 0;
}

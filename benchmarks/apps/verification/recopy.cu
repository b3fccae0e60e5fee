// Inference over a fixed table of weights, written as a first port often is: a 96 MiB table built on the host
// once, then 60 batches, each a 4 MiB input written by the host and copied in with the table again (unchanged,
// every batch), out[j] = sum over the table's 96 rows of w[r][j] * in[...], and the 1 MiB answer copied back and
// used by the host. Fixed before its first measurement, to check advice on a program that copies data again
// unchanged, and what its note says copying it once would save.
//
//   recopy [--mem MODE] [--mib 96] [--batches 60]
//
// Modes: pageable (as written), pinned (cudaMallocHost for all three), registered (the malloc'd buffers
// cudaHostRegister'ed), managed, managed-prefetch (the table prefetched to the GPU once, the input each batch),
// mapped (the malloc'd buffers registered mapped, the kernel reads them in place), once (pageable, the table
// copied in once before the loop: the change its note names).
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include "../cuda_check.h"

// one thread an output, down the table's rows: each row read coalesced
__global__ void infer(const float *w, const float *in, float *out, int rows, int n_out, int n_in) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n_out) return;
    float s = 0.f;
    for (int r = 0; r < rows; ++r) {
        size_t i = (size_t)r * n_out + j;
        s += w[i] * in[i % n_in];
    }
    out[j] = s;
}

int main(int argc, char **argv) {
    std::string mem = "pageable";
    int mib = 96, batches = 60;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--mem")) mem = argv[i + 1];
        else if (!strcmp(argv[i], "--mib")) mib = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--batches")) batches = atoi(argv[i + 1]);
        else { fprintf(stderr, "unknown option %s\n", argv[i]); return 2; }
    }
    const int n_out = 1 << 18, n_in = 1 << 20, rows = mib * (1 << 20) / 4 / n_out;
    const size_t w_bytes = (size_t)rows * n_out * 4, in_bytes = (size_t)n_in * 4, out_bytes = (size_t)n_out * 4;
    bool managed = mem == "managed" || mem == "managed-prefetch";
    bool copies = mem == "pageable" || mem == "pinned" || mem == "registered" || mem == "once";
    float *w = nullptr, *in = nullptr, *out = nullptr, *d_w = nullptr, *d_in = nullptr, *d_out = nullptr;
    if (mem == "pageable" || mem == "once" || mem == "registered" || mem == "mapped") {
        w = (float *)malloc(w_bytes);
        in = (float *)malloc(in_bytes);
        out = (float *)malloc(out_bytes);
        if (mem == "registered" || mem == "mapped") {
            unsigned f = mem == "mapped" ? cudaHostRegisterMapped : cudaHostRegisterDefault;
            CHECK(cudaHostRegister(w, w_bytes, f));
            CHECK(cudaHostRegister(in, in_bytes, f));
            CHECK(cudaHostRegister(out, out_bytes, f));
        }
    } else if (mem == "pinned") {
        CHECK(cudaMallocHost((void **)&w, w_bytes));
        CHECK(cudaMallocHost((void **)&in, in_bytes));
        CHECK(cudaMallocHost((void **)&out, out_bytes));
    } else if (managed) {
        CHECK(cudaMallocManaged((void **)&w, w_bytes));
        CHECK(cudaMallocManaged((void **)&in, in_bytes));
        CHECK(cudaMallocManaged((void **)&out, out_bytes));
    } else { fprintf(stderr, "unknown --mem %s\n", mem.c_str()); return 2; }
    if (copies) {
        CHECK(cudaMalloc((void **)&d_w, w_bytes));
        CHECK(cudaMalloc((void **)&d_in, in_bytes));
        CHECK(cudaMalloc((void **)&d_out, out_bytes));
    } else if (mem == "mapped") {
        CHECK(cudaHostGetDevicePointer((void **)&d_w, w, 0));
        CHECK(cudaHostGetDevicePointer((void **)&d_in, in, 0));
        CHECK(cudaHostGetDevicePointer((void **)&d_out, out, 0));
    } else {
        d_w = w; d_in = in; d_out = out;
    }
    for (size_t i = 0; i < (size_t)rows * n_out; ++i) w[i] = (float)((i * 7) % 23) * 0.01f - 0.1f;  // the table
    int dev = 0;
    CHECK(cudaGetDevice(&dev));
    cudaMemLocation gpu{cudaMemLocationTypeDevice, dev}, host{cudaMemLocationTypeHost, 0};
    if (mem == "once") CHECK(cudaMemcpy(d_w, w, w_bytes, cudaMemcpyHostToDevice));
    if (mem == "managed-prefetch") CHECK(cudaMemPrefetchAsync(w, w_bytes, gpu, 0, 0));
    double total = 0;
    for (int b = 0; b < batches; ++b) {
        for (int i = 0; i < n_in; ++i) in[i] = (float)((i + 3 * b) % 13) * 0.1f;  // the batch
        if (copies) {
            if (mem != "once") CHECK(cudaMemcpy(d_w, w, w_bytes, cudaMemcpyHostToDevice));  // again, unchanged
            CHECK(cudaMemcpy(d_in, in, in_bytes, cudaMemcpyHostToDevice));
        }
        if (mem == "managed-prefetch") {
            CHECK(cudaMemPrefetchAsync(in, in_bytes, gpu, 0, 0));
            CHECK(cudaMemPrefetchAsync(out, out_bytes, gpu, 0, 0));
        }
        infer<<<(n_out + 255) / 256, 256>>>(d_w, d_in, d_out, rows, n_out, n_in);
        CHECK(cudaGetLastError());
        if (copies) CHECK(cudaMemcpy(out, d_out, out_bytes, cudaMemcpyDeviceToHost));
        else {
            if (mem == "managed-prefetch") CHECK(cudaMemPrefetchAsync(out, out_bytes, host, 0, 0));
            CHECK(cudaDeviceSynchronize());
        }
        for (int j = 0; j < n_out; ++j) total += out[j];  // the answer, used
    }
    printf("{\"app\": \"recopy\", \"mem\": \"%s\", \"checksum\": %.9g}\n", mem.c_str(), total);
    if (copies) {
        CHECK(cudaFree(d_w)); CHECK(cudaFree(d_in)); CHECK(cudaFree(d_out));
    }
    if (managed) {
        CHECK(cudaFree(w)); CHECK(cudaFree(in)); CHECK(cudaFree(out));
    } else if (mem == "pinned") {
        CHECK(cudaFreeHost(w)); CHECK(cudaFreeHost(in)); CHECK(cudaFreeHost(out));
    } else {
        if (mem == "registered" || mem == "mapped") {
            CHECK(cudaHostUnregister(w)); CHECK(cudaHostUnregister(in)); CHECK(cudaHostUnregister(out));
        }
        free(w); free(in); free(out);
    }
    return 0;
}

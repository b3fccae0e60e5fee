// Embedding lookups, written as a recommender's inference loop usually is: a 1 GiB table (4 Mi rows of 64
// floats) built on the host and copied in once, then 100 batches, each 4096 bags of 16 row indices written by
// the host and copied in (256 KiB), a kernel that sums each bag's rows (16 MiB of the table read, scattered),
// and the 1 MiB of pooled vectors copied back and used by the host. Fixed before its first measurement, to
// check advice on a program that reads a large table sparsely, many times.
//
//   embedding [--mem MODE] [--rows 4194304] [--batches 100]
//
// Modes: pageable (as written), pinned (cudaMallocHost for the table, indices and output), registered (the
// malloc'd buffers cudaHostRegister'ed), managed, managed-prefetch (the table prefetched to the GPU once, the
// indices before each batch, the output back after it), managed-advise-accessed-by-gpu, mapped (the malloc'd
// buffers registered mapped: the kernel reads the table in host memory), zero-copy (cudaHostAlloc mapped).
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include "../cuda_check.h"

static const int DIM = 64, BAGS = 4096, PER_BAG = 16;

// one warp a bag; each lane sums two of the 64 columns over the bag's rows
__global__ void pool(const float *table, const unsigned *idx, float *out) {
    int bag = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x & 31;
    if (bag >= BAGS) return;
    float2 s = {0.f, 0.f};
    for (int k = 0; k < PER_BAG; ++k) {
        const float2 *row = (const float2 *)(table + (size_t)idx[bag * PER_BAG + k] * DIM);
        float2 v = row[lane];
        s.x += v.x; s.y += v.y;
    }
    ((float2 *)(out + (size_t)bag * DIM))[lane] = s;
}

int main(int argc, char **argv) {
    std::string mem = "pageable";
    size_t rows = 4194304;
    int batches = 100;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--mem")) mem = argv[i + 1];
        else if (!strcmp(argv[i], "--rows")) rows = strtoull(argv[i + 1], nullptr, 10);
        else if (!strcmp(argv[i], "--batches")) batches = atoi(argv[i + 1]);
        else { fprintf(stderr, "unknown option %s\n", argv[i]); return 2; }
    }
    const size_t t_bytes = rows * DIM * 4, i_bytes = (size_t)BAGS * PER_BAG * 4, o_bytes = (size_t)BAGS * DIM * 4;
    bool managed = mem.rfind("managed", 0) == 0;
    bool copies = mem == "pageable" || mem == "pinned" || mem == "registered";
    float *table = nullptr, *out = nullptr, *d_table = nullptr, *d_out = nullptr;
    unsigned *idx = nullptr, *d_idx = nullptr;
    int dev = 0;
    CHECK(cudaGetDevice(&dev));
    cudaMemLocation gpu{cudaMemLocationTypeDevice, dev}, host{cudaMemLocationTypeHost, 0};
    if (mem == "pageable" || mem == "registered" || mem == "mapped") {
        table = (float *)malloc(t_bytes);
        idx = (unsigned *)malloc(i_bytes);
        out = (float *)malloc(o_bytes);
        if (mem != "pageable") {
            unsigned f = mem == "mapped" ? cudaHostRegisterMapped : cudaHostRegisterDefault;
            CHECK(cudaHostRegister(table, t_bytes, f));
            CHECK(cudaHostRegister(idx, i_bytes, f));
            CHECK(cudaHostRegister(out, o_bytes, f));
        }
    } else if (mem == "pinned" || mem == "zero-copy") {
        unsigned f = mem == "zero-copy" ? cudaHostAllocMapped : cudaHostAllocDefault;
        CHECK(cudaHostAlloc((void **)&table, t_bytes, f));
        CHECK(cudaHostAlloc((void **)&idx, i_bytes, f));
        CHECK(cudaHostAlloc((void **)&out, o_bytes, f));
    } else if (managed && (mem == "managed" || mem == "managed-prefetch" || mem == "managed-advise-accessed-by-gpu")) {
        CHECK(cudaMallocManaged((void **)&table, t_bytes));
        CHECK(cudaMallocManaged((void **)&idx, i_bytes));
        CHECK(cudaMallocManaged((void **)&out, o_bytes));
        if (mem == "managed-advise-accessed-by-gpu") {
            CHECK(cudaMemAdvise(table, t_bytes, cudaMemAdviseSetAccessedBy, gpu));
            CHECK(cudaMemAdvise(idx, i_bytes, cudaMemAdviseSetAccessedBy, gpu));
            CHECK(cudaMemAdvise(out, o_bytes, cudaMemAdviseSetAccessedBy, gpu));
        }
    } else { fprintf(stderr, "unknown --mem %s\n", mem.c_str()); return 2; }
    if (copies) {
        CHECK(cudaMalloc((void **)&d_table, t_bytes));
        CHECK(cudaMalloc((void **)&d_idx, i_bytes));
        CHECK(cudaMalloc((void **)&d_out, o_bytes));
    } else if (mem == "mapped" || mem == "zero-copy") {
        CHECK(cudaHostGetDevicePointer((void **)&d_table, table, 0));
        CHECK(cudaHostGetDevicePointer((void **)&d_idx, idx, 0));
        CHECK(cudaHostGetDevicePointer((void **)&d_out, out, 0));
    } else {
        d_table = table; d_idx = idx; d_out = out;
    }
    for (size_t i = 0; i < rows * DIM; ++i) table[i] = (float)((i * 7) % 1009) * 1e-3f - 0.5f;
    if (copies) CHECK(cudaMemcpy(d_table, table, t_bytes, cudaMemcpyHostToDevice));
    if (mem == "managed-prefetch") CHECK(cudaMemPrefetchAsync(table, t_bytes, gpu, 0, 0));
    double total = 0;
    unsigned long long state = 88172645463325252ull;
    for (int b = 0; b < batches; ++b) {
        for (int k = 0; k < BAGS * PER_BAG; ++k) {  // the batch's rows, a xorshift's draws
            state ^= state << 13; state ^= state >> 7; state ^= state << 17;
            idx[k] = (unsigned)(state % rows);
        }
        if (copies) CHECK(cudaMemcpy(d_idx, idx, i_bytes, cudaMemcpyHostToDevice));
        if (mem == "managed-prefetch") {
            CHECK(cudaMemPrefetchAsync(idx, i_bytes, gpu, 0, 0));
            CHECK(cudaMemPrefetchAsync(out, o_bytes, gpu, 0, 0));
        }
        pool<<<BAGS / 8, 256>>>(d_table, d_idx, d_out);
        CHECK(cudaGetLastError());
        if (copies) CHECK(cudaMemcpy(out, d_out, o_bytes, cudaMemcpyDeviceToHost));
        else {
            if (mem == "managed-prefetch") CHECK(cudaMemPrefetchAsync(out, o_bytes, host, 0, 0));
            CHECK(cudaDeviceSynchronize());
        }
        for (size_t i = 0; i < (size_t)BAGS * DIM; i += 17) total += out[i];  // the scores, used
    }
    printf("{\"app\": \"embedding\", \"mem\": \"%s\", \"checksum\": %.9g}\n", mem.c_str(), total);
    if (copies) {
        CHECK(cudaFree(d_table)); CHECK(cudaFree(d_idx)); CHECK(cudaFree(d_out));
    }
    if (managed) {
        CHECK(cudaFree(table)); CHECK(cudaFree(idx)); CHECK(cudaFree(out));
    } else if (mem == "pinned" || mem == "zero-copy") {
        CHECK(cudaFreeHost(table)); CHECK(cudaFreeHost(idx)); CHECK(cudaFreeHost(out));
    } else {
        if (mem != "pageable") {
            CHECK(cudaHostUnregister(table)); CHECK(cudaHostUnregister(idx)); CHECK(cudaHostUnregister(out));
        }
        free(table); free(idx); free(out);
    }
    return 0;
}

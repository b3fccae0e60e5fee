// A 2-D Jacobi heat solver, written as a solver usually is: the grid is set up on the host, copied
// to the GPU once, swept many times there (the residual read back every 10 sweeps to watch the
// convergence), and copied back at the end. Fixed before its first measurement, to check advice on a
// program whose copies are a small share of the run.
//
//   jacobi [--mem pageable|pinned|registered|managed|managed-prefetch] [--n 8192] [--sweeps 400]
//
// pageable is the program as written; the other modes are the ways advice can ask for.
#include <cuda_runtime.h>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include "../cuda_check.h"

__global__ void sweep(const float *a, float *b, int n) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= n || y >= n) return;
    size_t i = (size_t)y * n + x;
    if (x == 0 || y == 0 || x == n - 1 || y == n - 1) { b[i] = a[i]; return; }
    b[i] = 0.25f * (a[i - 1] + a[i + 1] + a[i - n] + a[i + n]);
}

__global__ void residual(const float *a, const float *b, size_t count, float *out) {
    float s = 0.f;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count; i += (size_t)gridDim.x * blockDim.x)
        s += fabsf(a[i] - b[i]);
    for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
    if ((threadIdx.x & 31) == 0) atomicAdd(out, s);
}

int main(int argc, char **argv) {
    std::string mem = "pageable";
    int n = 8192, sweeps = 400;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--mem")) mem = argv[i + 1];
        else if (!strcmp(argv[i], "--n")) n = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--sweeps")) sweeps = atoi(argv[i + 1]);
        else { fprintf(stderr, "unknown option %s\n", argv[i]); return 2; }
    }
    const size_t count = (size_t)n * n, bytes = count * sizeof(float);
    bool managed = mem.rfind("managed", 0) == 0;
    float *grid = nullptr, *d_a = nullptr, *d_b = nullptr, *d_res = nullptr;
    if (mem == "pageable" || mem == "registered") {
        grid = (float *)malloc(bytes);
        if (mem == "registered") CHECK(cudaHostRegister(grid, bytes, cudaHostRegisterDefault));
    } else if (mem == "pinned") {
        CHECK(cudaMallocHost((void **)&grid, bytes));
    } else if (managed) {
        CHECK(cudaMallocManaged((void **)&grid, bytes));
        CHECK(cudaMallocManaged((void **)&d_b, bytes));
        d_a = grid;
    } else { fprintf(stderr, "unknown --mem %s\n", mem.c_str()); return 2; }
    if (!managed) {
        CHECK(cudaMalloc((void **)&d_a, bytes));
        CHECK(cudaMalloc((void **)&d_b, bytes));
    }
    CHECK(cudaMalloc((void **)&d_res, sizeof(float)));
    // the initial state: a hot top edge, the rest cold, a little structure inside
    for (int y = 0; y < n; ++y)
        for (int x = 0; x < n; ++x) grid[(size_t)y * n + x] = y == 0 ? 100.f : (float)((x * 31 + y * 17) % 7) * 0.01f;
    int dev = 0;
    CHECK(cudaGetDevice(&dev));
    cudaMemLocation gpu{cudaMemLocationTypeDevice, dev}, host{cudaMemLocationTypeHost, 0};
    if (managed) {
        if (mem == "managed-prefetch") {
            CHECK(cudaMemPrefetchAsync(grid, bytes, gpu, 0, 0));
            CHECK(cudaMemPrefetchAsync(d_b, bytes, gpu, 0, 0));
        }
    } else {
        CHECK(cudaMemcpy(d_a, grid, bytes, cudaMemcpyHostToDevice));
    }
    dim3 block(32, 8), blocks((n + 31) / 32, (n + 7) / 8);
    float res = 0.f;
    for (int s = 0; s < sweeps; ++s) {
        sweep<<<blocks, block>>>(d_a, d_b, n);
        CHECK(cudaGetLastError());
        if (s % 10 == 9) {
            CHECK(cudaMemset(d_res, 0, sizeof(float)));
            residual<<<1024, 256>>>(d_a, d_b, count, d_res);
            CHECK(cudaMemcpy(&res, d_res, sizeof(float), cudaMemcpyDeviceToHost));
        }
        std::swap(d_a, d_b);
    }
    if (managed) {
        if (mem == "managed-prefetch") CHECK(cudaMemPrefetchAsync(d_a, bytes, host, 0, 0));
        CHECK(cudaDeviceSynchronize());
    } else {
        CHECK(cudaMemcpy(grid, d_a, bytes, cudaMemcpyDeviceToHost));
    }
    const float *result = managed ? d_a : grid;
    double sum = 0;
    for (size_t i = 0; i < count; ++i) sum += result[i];
    printf("{\"app\": \"jacobi\", \"mem\": \"%s\", \"residual\": %g, \"checksum\": %.9g}\n", mem.c_str(), res, sum);
    CHECK(cudaFree(d_res));
    if (managed) {
        CHECK(cudaFree(grid));
        CHECK(cudaFree(d_b));
    } else {
        CHECK(cudaFree(d_a));
        CHECK(cudaFree(d_b));
        if (mem == "pinned") CHECK(cudaFreeHost(grid));
        else {
            if (mem == "registered") CHECK(cudaHostUnregister(grid));
            free(grid);
        }
    }
    return 0;
}

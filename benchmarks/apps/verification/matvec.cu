// A matrix held on the GPU and many small requests against it, written plainly: a 512 MiB matrix built on the
// host and copied in once, then 100 requests, each a 64 KiB vector copied in, y = A x computed, and the
// 32 KiB answer copied back and used by the host. Fixed before its first measurement, to check advice on a
// program whose large data crosses once and whose loop moves little.
//
//   matvec [--mem MODE] [--rows 8192] [--cols 16384] [--requests 100]
//
// Modes: pageable (as written), pinned (cudaMallocHost for all three), registered (the malloc'd buffers
// cudaHostRegister'ed), managed, managed-prefetch (the matrix prefetched to the GPU once, the vectors each
// request), mapped (the malloc'd buffers registered mapped, the kernel reads them in place).
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include "../cuda_check.h"

// one warp a row
__global__ void gemv(const float *a, const float *x, float *y, int rows, int cols) {
    int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x & 31;
    if (row >= rows) return;
    const float *r = a + (size_t)row * cols;
    float s = 0.f;
    for (int c = lane; c < cols; c += 32) s += r[c] * x[c];
    for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
    if (lane == 0) y[row] = s;
}

int main(int argc, char **argv) {
    std::string mem = "pageable";
    int rows = 8192, cols = 16384, requests = 100;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--mem")) mem = argv[i + 1];
        else if (!strcmp(argv[i], "--rows")) rows = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--cols")) cols = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--requests")) requests = atoi(argv[i + 1]);
        else { fprintf(stderr, "unknown option %s\n", argv[i]); return 2; }
    }
    const size_t a_bytes = (size_t)rows * cols * 4, x_bytes = (size_t)cols * 4, y_bytes = (size_t)rows * 4;
    bool managed = mem == "managed" || mem == "managed-prefetch";
    bool copies = mem == "pageable" || mem == "pinned" || mem == "registered";
    float *a = nullptr, *x = nullptr, *y = nullptr, *d_a = nullptr, *d_x = nullptr, *d_y = nullptr;
    if (mem == "pageable" || mem == "registered" || mem == "mapped") {
        a = (float *)malloc(a_bytes);
        x = (float *)malloc(x_bytes);
        y = (float *)malloc(y_bytes);
        if (mem != "pageable") {
            unsigned f = mem == "mapped" ? cudaHostRegisterMapped : cudaHostRegisterDefault;
            CHECK(cudaHostRegister(a, a_bytes, f));
            CHECK(cudaHostRegister(x, x_bytes, f));
            CHECK(cudaHostRegister(y, y_bytes, f));
        }
    } else if (mem == "pinned") {
        CHECK(cudaMallocHost((void **)&a, a_bytes));
        CHECK(cudaMallocHost((void **)&x, x_bytes));
        CHECK(cudaMallocHost((void **)&y, y_bytes));
    } else if (managed) {
        CHECK(cudaMallocManaged((void **)&a, a_bytes));
        CHECK(cudaMallocManaged((void **)&x, x_bytes));
        CHECK(cudaMallocManaged((void **)&y, y_bytes));
    } else { fprintf(stderr, "unknown --mem %s\n", mem.c_str()); return 2; }
    if (copies) {
        CHECK(cudaMalloc((void **)&d_a, a_bytes));
        CHECK(cudaMalloc((void **)&d_x, x_bytes));
        CHECK(cudaMalloc((void **)&d_y, y_bytes));
    } else if (mem == "mapped") {
        CHECK(cudaHostGetDevicePointer((void **)&d_a, a, 0));
        CHECK(cudaHostGetDevicePointer((void **)&d_x, x, 0));
        CHECK(cudaHostGetDevicePointer((void **)&d_y, y, 0));
    } else {
        d_a = a; d_x = x; d_y = y;
    }
    for (size_t i = 0; i < (size_t)rows * cols; ++i) a[i] = (float)((i * 13) % 101) * 0.01f - 0.5f;
    int dev = 0;
    CHECK(cudaGetDevice(&dev));
    cudaMemLocation gpu{cudaMemLocationTypeDevice, dev}, host{cudaMemLocationTypeHost, 0};
    if (copies) CHECK(cudaMemcpy(d_a, a, a_bytes, cudaMemcpyHostToDevice));
    if (mem == "managed-prefetch") CHECK(cudaMemPrefetchAsync(a, a_bytes, gpu, 0, 0));
    double total = 0;
    for (int r = 0; r < requests; ++r) {
        for (int c = 0; c < cols; ++c) x[c] = (float)((c + r) % 17) * 0.1f;  // the request
        if (copies) CHECK(cudaMemcpy(d_x, x, x_bytes, cudaMemcpyHostToDevice));
        if (mem == "managed-prefetch") {
            CHECK(cudaMemPrefetchAsync(x, x_bytes, gpu, 0, 0));
            CHECK(cudaMemPrefetchAsync(y, y_bytes, gpu, 0, 0));
        }
        gemv<<<(rows + 7) / 8, 256>>>(d_a, d_x, d_y, rows, cols);
        CHECK(cudaGetLastError());
        if (copies) CHECK(cudaMemcpy(y, d_y, y_bytes, cudaMemcpyDeviceToHost));
        else {
            if (mem == "managed-prefetch") CHECK(cudaMemPrefetchAsync(y, y_bytes, host, 0, 0));
            CHECK(cudaDeviceSynchronize());
        }
        for (int i = 0; i < rows; ++i) total += y[i];  // the answer, used
    }
    printf("{\"app\": \"matvec\", \"mem\": \"%s\", \"checksum\": %.9g}\n", mem.c_str(), total);
    if (copies) {
        CHECK(cudaFree(d_a)); CHECK(cudaFree(d_x)); CHECK(cudaFree(d_y));
    }
    if (managed) {
        CHECK(cudaFree(a)); CHECK(cudaFree(x)); CHECK(cudaFree(y));
    } else if (mem == "pinned") {
        CHECK(cudaFreeHost(a)); CHECK(cudaFreeHost(x)); CHECK(cudaFreeHost(y));
    } else {
        if (mem != "pageable") {
            CHECK(cudaHostUnregister(a)); CHECK(cudaHostUnregister(x)); CHECK(cudaHostUnregister(y));
        }
        free(a); free(x); free(y);
    }
    return 0;
}

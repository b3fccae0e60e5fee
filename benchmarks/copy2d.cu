// A pitched copy's rate beside a contiguous copy's of the same bytes, by the host memory it reads or writes: 16 MiB
// as one cudaMemcpy, and as cudaMemcpy2D of 2048 rows of 8 KiB out of rows of 64 KiB (a tile of a larger image, as
// benchmarks/apps/verification/tiles.cu copies), each way, from malloc'd (pageable) and cudaMallocHost (pinned) memory.
// `umprof advise` prices a copy by its bytes alone; this says what a pitched copy's rows cost beyond that.
//
//   nvcc -O2 -arch=sm_90 -o copy2d benchmarks/copy2d.cu && ./copy2d [--reps 20]
//
// Prints one JSON line a case: memory, direction, shape, bytes, the median and least time of --reps copies (after
// one not counted), and the median's rate.
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include "apps/cuda_check.h"

int main(int argc, char **argv) {
    int reps = 20;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--reps")) reps = atoi(argv[i + 1]);
        else { fprintf(stderr, "unknown option %s\n", argv[i]); return 2; }
    }
    if (reps < 1) { fprintf(stderr, "--reps must be positive\n"); return 2; }
    const size_t rows = 2048, row = 8192, pitch = 65536, bytes = rows * row;
    void *dev = nullptr;
    CHECK(cudaMalloc(&dev, bytes));
    cudaEvent_t a, b;
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreate(&b));
    for (const char *memory : {"pageable", "pinned"}) {
        const bool pinned = !strcmp(memory, "pinned");
        char *host = nullptr;
        if (pinned) CHECK(cudaMallocHost((void **)&host, rows * pitch));
        else host = (char *)malloc(rows * pitch);
        memset(host, 1, rows * pitch);  // every page present before any copy
        for (const char *dir : {"h2d", "d2h"}) {
            const bool in = !strcmp(dir, "h2d");
            for (const char *shape : {"contiguous", "pitched"}) {
                const bool flat = !strcmp(shape, "contiguous");
                std::vector<float> ms;
                for (int r = 0; r <= reps; ++r) {
                    CHECK(cudaEventRecord(a));
                    if (flat) CHECK(cudaMemcpy(in ? dev : host, in ? host : dev, bytes,
                                               in ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost));
                    else if (in) CHECK(cudaMemcpy2D(dev, row, host, pitch, row, rows, cudaMemcpyHostToDevice));
                    else CHECK(cudaMemcpy2D(host, pitch, dev, row, row, rows, cudaMemcpyDeviceToHost));
                    CHECK(cudaEventRecord(b));
                    CHECK(cudaEventSynchronize(b));
                    float t = 0;
                    CHECK(cudaEventElapsedTime(&t, a, b));
                    if (r) ms.push_back(t);  // the first (its staging set up, its pages mapped) not counted
                }
                std::sort(ms.begin(), ms.end());
                const float med = ms[ms.size() / 2];
                printf("{\"memory\": \"%s\", \"direction\": \"%s\", \"shape\": \"%s\", \"bytes\": %zu, \"median_ms\": %.4f, "
                       "\"min_ms\": %.4f, \"gb_per_s\": %.2f}\n", memory, dir, shape, bytes, med, ms[0],
                       bytes / (med * 1e-3) / 1e9);
            }
        }
        if (pinned) CHECK(cudaFreeHost(host));
        else free(host);
    }
    CHECK(cudaEventDestroy(a));
    CHECK(cudaEventDestroy(b));
    CHECK(cudaFree(dev));
    return 0;
}

// The host's first write of a fresh buffer, as a C program makes it, by the memory it lands in: malloc'd pages,
// cudaMallocManaged pages, and cudaMallocHost pages; and the same buffer's second write (its pages present).
// umprof's calibration measures a first write with numpy (np.add into the buffer); a C program's producer stores a
// word at a time, as frame_loop.h's produce() does (docs/guide/calibrations.md, the first write as a program makes it).
//
//   nvcc -O3 -std=c++17 -o first_write benchmarks/first_write.cu && ./first_write [--mib 1024] [--reps 3]
//
// Each rep, for each memory: allocate, write every float once by a scalar loop (the first write), write it again
// (the second), check a few words, free. One JSON line a rep and memory:
// {"memory": M, "mib": N, "alloc_s": ..., "first_s": ..., "second_s": ..., "free_s": ...}
#include <cuda_runtime.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include "apps/cuda_check.h"

static double now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// every word stored once, computed from its index (a producer of the cheapest kind); volatile-free so the compiler
// may vectorize it, as it would a real producer's loop
static void produce(float *p, size_t n, int it) {
    for (size_t i = 0; i < n; ++i) p[i] = (float)((i * 7 + it) & 1023);
}

int main(int argc, char **argv) {
    double mib = 1024;
    int reps = 3;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--mib")) mib = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--reps")) reps = atoi(argv[i + 1]);
        else { fprintf(stderr, "unknown option %s\n", argv[i]); return 2; }
    }
    const size_t bytes = (size_t)(mib * (1 << 20)) & ~(size_t)4095, n = bytes / sizeof(float);
    size_t free_b = 0, total_b = 0;
    CHECK(cudaFree(0));  // the context first: its creation is no memory's cost
    CHECK(cudaMemGetInfo(&free_b, &total_b));
    if (bytes > free_b / 2) {  // managed memory is never oversubscribed here
        fprintf(stderr, "%zu MiB is more than half the GPU's free memory (%zu MiB)\n", bytes >> 20, free_b >> 20);
        return 2;
    }
    const char *memories[] = {"malloc", "managed", "pinned"};
    for (int r = 0; r < reps; ++r) {
        for (const char *m : memories) {
            float *p = nullptr;
            double t = now_s();
            if (!strcmp(m, "malloc")) p = (float *)malloc(bytes);
            else if (!strcmp(m, "managed")) CHECK(cudaMallocManaged(&p, bytes));
            else CHECK(cudaMallocHost(&p, bytes));
            if (!p) { fprintf(stderr, "allocation failed\n"); return 1; }
            const double alloc_s = now_s() - t;
            t = now_s();
            produce(p, n, 0);
            const double first_s = now_s() - t;
            t = now_s();
            produce(p, n, 1);
            const double second_s = now_s() - t;
            for (size_t i = 0; i < n; i += n / 7 + 1)
                if (p[i] != (float)((i * 7 + 1) & 1023)) { fprintf(stderr, "%s: word %zu wrong\n", m, i); return 1; }
            t = now_s();
            if (!strcmp(m, "malloc")) free(p);
            else if (!strcmp(m, "managed")) CHECK(cudaFree(p));
            else CHECK(cudaFreeHost(p));
            const double free_s = now_s() - t;
            printf("{\"memory\": \"%s\", \"mib\": %zu, \"alloc_s\": %.6f, \"first_s\": %.6f, \"second_s\": %.6f, "
                   "\"free_s\": %.6f}\n", m, bytes >> 20, alloc_s, first_s, second_s, free_s);
            fflush(stdout);
        }
    }
    return 0;
}

// CHECK(call): a CUDA runtime call that must succeed; else the file, line, call and error on stderr, and exit 1.
// Shared by the applications (frame_loop.h, idioms.cu) and the benchmarks beside them (host_access.cu).
#pragma once
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>

#define CHECK(x)                                                                                \
    do {                                                                                        \
        cudaError_t e_ = (x);                                                                   \
        if (e_ != cudaSuccess) {                                                                \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(1);                                                                            \
        }                                                                                       \
    } while (0)

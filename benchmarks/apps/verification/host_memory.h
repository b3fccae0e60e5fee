// The host memory a verification program's mode asks for, allocated and freed one way: malloc'd (as written), malloc'd and
// cudaHostRegister'ed (plain or mapped), cudaMallocHost, cudaHostAlloc write-combined or mapped, cudaMallocManaged.
// Shared by cadence.cu, render.cu, histogram.cu, requests.cu and tiles.cu.
#pragma once
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include "../cuda_check.h"

enum Kind { MALLOC, PINNED, REGISTERED, WRITE_COMBINED, REGISTERED_MAPPED, ALLOC_MAPPED, MANAGED };

static void *host_alloc(Kind k, size_t bytes) {
    void *p = nullptr;
    switch (k) {
        case MALLOC: case REGISTERED: case REGISTERED_MAPPED:
            p = malloc(bytes);
            if (!p) { fprintf(stderr, "malloc failed\n"); exit(1); }
            if (k == REGISTERED) CHECK(cudaHostRegister(p, bytes, cudaHostRegisterDefault));
            if (k == REGISTERED_MAPPED) CHECK(cudaHostRegister(p, bytes, cudaHostRegisterMapped));
            break;
        case PINNED: CHECK(cudaMallocHost(&p, bytes)); break;
        case WRITE_COMBINED: CHECK(cudaHostAlloc(&p, bytes, cudaHostAllocWriteCombined)); break;
        case ALLOC_MAPPED: CHECK(cudaHostAlloc(&p, bytes, cudaHostAllocMapped)); break;
        case MANAGED: CHECK(cudaMallocManaged(&p, bytes)); break;
    }
    return p;
}

static void host_free(Kind k, void *p) {
    switch (k) {
        case MALLOC: free(p); break;
        case REGISTERED: case REGISTERED_MAPPED: CHECK(cudaHostUnregister(p)); free(p); break;
        case PINNED: case WRITE_COMBINED: case ALLOC_MAPPED: CHECK(cudaFreeHost(p)); break;
        case MANAGED: CHECK(cudaFree(p)); break;
    }
}

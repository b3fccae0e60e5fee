// A simulation that writes snapshots, written as a solver's output usually is: a 256 MiB field set up by the host in
// a malloc'd buffer and copied to the GPU once, then 400 diffusion steps there, and every 20th step the whole field
// copied back into the same malloc'd buffer with cudaMemcpy for the host to read all of it (a checksum, standing for
// the snapshot's writer). Fixed before its first measurement, to check advice on a program whose copies go one way
// only, every few kernels, and whose host reads all they bring.
//
//   snapshot [--mem MODE] [--mib 256] [--steps 400] [--every 20]
//
// pageable is the program as written; the other modes are the ways advice can ask for:
//   pinned, registered, write-combined  the snapshot buffer page-locked (cudaMallocHost, cudaHostRegister,
//                                       cudaHostAlloc write-combined), copied into as written
//   mapped, zero-copy                   the snapshot buffer registered mapped / allocated mapped, written by a kernel
//   managed, managed-prefetch           the field itself in managed memory, read by the host in place (prefetched
//                                       to the host before, and back to the GPU after, in managed-prefetch)
//   managed-advise-accessed-by-gpu      the snapshot buffer in managed memory advised accessed by the GPU, written
//                                       by a kernel (added after the first measurement, on the H200, advised it)
//   pinned-pipelined                    two pinned snapshot buffers: each snapshot copied on the GPU, then to the
//                                       host on a second stream while the steps go on; the host reads a snapshot
//                                       when the next is due
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include "../cuda_check.h"

__global__ void diffuse(const float *u, float *v, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float l = u[i == 0 ? 0 : i - 1], c = u[i], r = u[i + 1 == n ? i : i + 1];
        v[i] = c + 0.2f * (l - 2.f * c + r);
    }
}

__global__ void store(const float *u, float *host, size_t n) {  // a snapshot written into mapped host memory
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        host[i] = u[i];
}

static double checksum(const float *u, size_t n) {  // the host reads every value of a snapshot (n a multiple of 4)
    double s[4] = {0, 0, 0, 0};
    for (size_t i = 0; i < n; i += 4)
        for (int k = 0; k < 4; ++k) s[k] += u[i + k] * (double)(((i + k) & 7) + 1);
    return s[0] + s[1] + s[2] + s[3];
}

int main(int argc, char **argv) {
    std::string mem = "pageable";
    int mib = 256, steps = 400, every = 20;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--mem")) mem = argv[i + 1];
        else if (!strcmp(argv[i], "--mib")) mib = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--steps")) steps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--every")) every = atoi(argv[i + 1]);
        else { fprintf(stderr, "unknown option %s\n", argv[i]); return 2; }
    }
    const size_t bytes = (size_t)mib << 20, n = bytes / sizeof(float);
    const bool managed = mem == "managed" || mem == "managed-prefetch", mapped = mem == "mapped" || mem == "zero-copy";
    const bool pipelined = mem == "pinned-pipelined", accessed = mem == "managed-advise-accessed-by-gpu";
    int dev = 0;
    CHECK(cudaGetDevice(&dev));
    cudaMemLocation gpu{cudaMemLocationTypeDevice, dev}, host{cudaMemLocationTypeHost, 0};
    float *field = nullptr, *snap[2] = {nullptr, nullptr}, *d_u = nullptr, *d_v = nullptr, *d_snap = nullptr;
    float *d_host = nullptr;  // the mapped snapshot buffer, as the GPU addresses it
    if (mem == "pageable" || mem == "registered" || mem == "mapped") {
        snap[0] = (float *)malloc(bytes);
        if (mem == "registered") CHECK(cudaHostRegister(snap[0], bytes, cudaHostRegisterDefault));
        if (mem == "mapped") CHECK(cudaHostRegister(snap[0], bytes, cudaHostRegisterMapped));
    } else if (mem == "pinned") {
        CHECK(cudaMallocHost((void **)&snap[0], bytes));
    } else if (mem == "write-combined") {
        CHECK(cudaHostAlloc((void **)&snap[0], bytes, cudaHostAllocWriteCombined));
    } else if (mem == "zero-copy") {
        CHECK(cudaHostAlloc((void **)&snap[0], bytes, cudaHostAllocMapped));
    } else if (pipelined) {
        for (auto &s : snap) CHECK(cudaMallocHost((void **)&s, bytes));
    } else if (accessed) {
        CHECK(cudaMallocManaged((void **)&snap[0], bytes));
        CHECK(cudaMemAdvise(snap[0], bytes, cudaMemAdviseSetAccessedBy, gpu));
    } else if (managed) {
        CHECK(cudaMallocManaged((void **)&d_u, bytes));
        CHECK(cudaMallocManaged((void **)&d_v, bytes));
    } else { fprintf(stderr, "unknown --mem %s\n", mem.c_str()); return 2; }
    if (!managed) {
        CHECK(cudaMalloc((void **)&d_u, bytes));
        CHECK(cudaMalloc((void **)&d_v, bytes));
    }
    if (pipelined) CHECK(cudaMalloc((void **)&d_snap, bytes));
    if (mapped) CHECK(cudaHostGetDevicePointer((void **)&d_host, snap[0], 0));
    if (accessed) d_host = snap[0];
    // the initial field, written by the host: a warm band in the middle, the rest cold, a little structure
    field = managed ? d_u : snap[0];
    for (size_t i = 0; i < n; ++i) field[i] = (i > n / 3 && i < n / 2 ? 50.f : 0.f) + (float)((i * 31) % 7) * 0.01f;
    if (mem == "managed-prefetch") {
        CHECK(cudaMemPrefetchAsync(d_u, bytes, gpu, 0, 0));
        CHECK(cudaMemPrefetchAsync(d_v, bytes, gpu, 0, 0));
    } else if (!managed) {
        CHECK(cudaMemcpy(d_u, field, bytes, cudaMemcpyHostToDevice));
    }
    cudaStream_t side = nullptr;
    cudaEvent_t taken = nullptr, landed[2] = {nullptr, nullptr};
    if (pipelined) {
        CHECK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
        CHECK(cudaEventCreateWithFlags(&taken, cudaEventDisableTiming));
        for (auto &e : landed) CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    }
    double sum = 0;
    int snapshots = 0, pending = -1;  // pipelined: the buffer of the snapshot still to be read
    for (int s = 0; s < steps; ++s) {
        diffuse<<<2048, 256>>>(d_u, d_v, n);
        CHECK(cudaGetLastError());
        std::swap(d_u, d_v);
        if (s % every != every - 1) continue;
        if (mem == "pageable" || mem == "pinned" || mem == "registered" || mem == "write-combined") {
            CHECK(cudaMemcpy(snap[0], d_u, bytes, cudaMemcpyDeviceToHost));
            sum += checksum(snap[0], n);
        } else if (mapped || accessed) {
            store<<<2048, 256>>>(d_u, d_host, n);
            CHECK(cudaGetLastError());
            CHECK(cudaDeviceSynchronize());
            sum += checksum(snap[0], n);
        } else if (managed) {
            if (mem == "managed-prefetch") CHECK(cudaMemPrefetchAsync(d_u, bytes, host, 0, 0));
            CHECK(cudaDeviceSynchronize());
            sum += checksum(d_u, n);
            if (mem == "managed-prefetch") CHECK(cudaMemPrefetchAsync(d_u, bytes, gpu, 0, 0));
        } else {  // pinned-pipelined: take the snapshot on the GPU, send it on the side stream, read the one before
            int b = snapshots % 2;
            CHECK(cudaStreamWaitEvent(0, landed[1 - b], 0));  // d_snap is free once the last snapshot has landed
            CHECK(cudaMemcpyAsync(d_snap, d_u, bytes, cudaMemcpyDeviceToDevice, 0));
            CHECK(cudaEventRecord(taken, 0));
            CHECK(cudaStreamWaitEvent(side, taken, 0));
            CHECK(cudaMemcpyAsync(snap[b], d_snap, bytes, cudaMemcpyDeviceToHost, side));
            CHECK(cudaEventRecord(landed[b], side));
            if (pending >= 0) {
                CHECK(cudaEventSynchronize(landed[pending]));
                sum += checksum(snap[pending], n);
            }
            pending = b;
        }
        ++snapshots;
    }
    if (pending >= 0) {
        CHECK(cudaEventSynchronize(landed[pending]));
        sum += checksum(snap[pending], n);
    }
    CHECK(cudaDeviceSynchronize());
    printf("{\"app\": \"snapshot\", \"mem\": \"%s\", \"snapshots\": %d, \"checksum\": %.9g}\n", mem.c_str(), snapshots,
           sum);
    if (pipelined) {
        CHECK(cudaStreamDestroy(side));
        CHECK(cudaEventDestroy(taken));
        for (auto &e : landed) CHECK(cudaEventDestroy(e));
        CHECK(cudaFree(d_snap));
        for (auto &b : snap) CHECK(cudaFreeHost(b));
    }
    CHECK(cudaFree(d_u));
    CHECK(cudaFree(d_v));
    if (mem == "pinned" || mem == "write-combined" || mem == "zero-copy") CHECK(cudaFreeHost(snap[0]));
    if (accessed) CHECK(cudaFree(snap[0]));
    if (mem == "pageable" || mem == "registered" || mem == "mapped") {
        if (mem != "pageable") CHECK(cudaHostUnregister(snap[0]));
        free(snap[0]);
    }
    return 0;
}

// A histogram of sensor batches, written as a monitoring job usually is: 40 batches, each of 16 Mi samples (64 MiB)
// decoded by the host into one malloc'd buffer (every sample written), copied in with cudaMemcpy, binned by a kernel
// into 1024 counters (shared-memory bins, one atomic add a sample), and the 4 KiB of counters copied back with
// cudaMemcpy into a malloc'd array the host adds to its running totals. Fixed before its first measurement, to check
// advice on a loop with one large copy in and one small copy out an iteration.
//
//   histogram [--mem MODE] [--batches 40]
//
// pageable is the program as written; the other modes are the ways advice can ask for, applied to the host buffers:
//   pinned, registered      the batch and counter buffers from cudaMallocHost / malloc'd and cudaHostRegister'ed,
//                           copied as written
//   write-combined          the batch buffer (the host only writes it) from cudaHostAlloc write-combined, the counters
//                           from cudaMallocHost
//   mapped, zero-copy       both registered mapped / from cudaHostAlloc mapped: the kernel reads the batch and writes
//                           the counters in host memory (no copies)
//   managed                 both from cudaMallocManaged, written and read by the host in place
//   managed-prefetch        the same, the batch prefetched to the GPU before each kernel and back to the host before the
//                           host decodes the next batch into it, the counters back to the host after the kernel
//   managed-advise-accessed-by-gpu  the same buffers, advised accessed by the GPU once
//   pinned-pipelined        pinned buffers, two of each: the host decodes the next batch while the current one's copy,
//                           kernel and counters' copy run on a stream (an event a buffer)
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include "host_memory.h"

static const size_t SAMPLES = 16u << 20;
static const int BINS = 1024;

__global__ void bin(const unsigned *x, unsigned *counts, size_t n) {
    __shared__ unsigned local[BINS];
    for (int b = threadIdx.x; b < BINS; b += blockDim.x) local[b] = 0;
    __syncthreads();
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        atomicAdd(&local[(x[i] >> 6) & (BINS - 1)], 1u);
    __syncthreads();
    for (int b = threadIdx.x; b < BINS; b += blockDim.x) atomicAdd(&counts[b], local[b]);
}

static void decode(unsigned *x, int batch) {  // the host's whole write of the batch: a hash of each sample's index
    const unsigned salt = 2654435761u * (unsigned)(batch + 1);
    for (size_t i = 0; i < SAMPLES; ++i) {
        unsigned v = (unsigned)i * 2246822519u + salt;
        x[i] = v ^ (v >> 13);
    }
}

int main(int argc, char **argv) {
    std::string mem = "pageable";
    int batches = 40;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--mem")) mem = argv[i + 1];
        else if (!strcmp(argv[i], "--batches")) batches = atoi(argv[i + 1]);
        else { fprintf(stderr, "unknown option %s\n", argv[i]); return 2; }
    }
    if (batches < 1) { fprintf(stderr, "--batches must be positive\n"); return 2; }
    Kind xk, ck;
    if (mem == "pageable") xk = ck = MALLOC;
    else if (mem == "pinned" || mem == "pinned-pipelined") xk = ck = PINNED;
    else if (mem == "registered") xk = ck = REGISTERED;
    else if (mem == "write-combined") { xk = WRITE_COMBINED; ck = PINNED; }
    else if (mem == "mapped") xk = ck = REGISTERED_MAPPED;
    else if (mem == "zero-copy") xk = ck = ALLOC_MAPPED;
    else if (mem == "managed" || mem == "managed-prefetch" || mem == "managed-advise-accessed-by-gpu") xk = ck = MANAGED;
    else { fprintf(stderr, "unknown --mem %s\n", mem.c_str()); return 2; }
    const bool managed = xk == MANAGED, prefetch = mem == "managed-prefetch", pipelined = mem == "pinned-pipelined";
    const bool in_place = xk == REGISTERED_MAPPED || xk == ALLOC_MAPPED;
    const size_t xbytes = SAMPLES * sizeof(unsigned), cbytes = BINS * sizeof(unsigned);
    size_t free_b = 0, total_b = 0;
    CHECK(cudaMemGetInfo(&free_b, &total_b));
    if (managed && xbytes + cbytes > free_b / 2) {  // managed memory is never oversubscribed here
        fprintf(stderr, "the managed buffers (%zu MiB) are more than half the GPU's free memory (%zu MiB)\n",
                (xbytes + cbytes) >> 20, free_b >> 20);
        return 2;
    }
    int dev = 0;
    CHECK(cudaGetDevice(&dev));
    cudaMemLocation gpu{cudaMemLocationTypeDevice, dev}, cpu{cudaMemLocationTypeHost, 0};
    const int nbuf = pipelined ? 2 : 1;
    unsigned *x[2] = {nullptr, nullptr}, *c[2] = {nullptr, nullptr}, *dx[2] = {nullptr, nullptr}, *dc[2] = {nullptr, nullptr};
    for (int b = 0; b < nbuf; ++b) {
        x[b] = (unsigned *)host_alloc(xk, xbytes);
        c[b] = (unsigned *)host_alloc(ck, cbytes);
        if (in_place) {
            CHECK(cudaHostGetDevicePointer((void **)&dx[b], x[b], 0));
            CHECK(cudaHostGetDevicePointer((void **)&dc[b], c[b], 0));
        } else if (managed) {
            dx[b] = x[b];
            dc[b] = c[b];
        } else {
            CHECK(cudaMalloc((void **)&dx[b], xbytes));
            CHECK(cudaMalloc((void **)&dc[b], cbytes));
        }
    }
    if (mem == "managed-advise-accessed-by-gpu") {
        CHECK(cudaMemAdvise(x[0], xbytes, cudaMemAdviseSetAccessedBy, gpu));
        CHECK(cudaMemAdvise(c[0], cbytes, cudaMemAdviseSetAccessedBy, gpu));
    }
    const dim3 grid(132 * 4), block(512);
    unsigned long long totals[BINS] = {0};
    auto add = [&](const unsigned *counts) { for (int b = 0; b < BINS; ++b) totals[b] += counts[b]; };
    if (pipelined) {
        cudaStream_t st;
        cudaEvent_t done[2];
        CHECK(cudaStreamCreate(&st));
        for (auto &e : done) CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
        for (int s = 0; s < batches; ++s) {
            const int b = s & 1;
            if (s >= 2) {  // this buffer pair's batch of two steps ago: its counters are back
                CHECK(cudaEventSynchronize(done[b]));
                add(c[b]);
            }
            decode(x[b], s);  // while the other batch's copy and kernel run
            CHECK(cudaMemcpyAsync(dx[b], x[b], xbytes, cudaMemcpyHostToDevice, st));
            CHECK(cudaMemsetAsync(dc[b], 0, cbytes, st));
            bin<<<grid, block, 0, st>>>(dx[b], dc[b], SAMPLES);
            CHECK(cudaGetLastError());
            CHECK(cudaMemcpyAsync(c[b], dc[b], cbytes, cudaMemcpyDeviceToHost, st));
            CHECK(cudaEventRecord(done[b], st));
        }
        for (int s = batches < 2 ? 0 : batches - 2; s < batches; ++s) {
            CHECK(cudaEventSynchronize(done[s & 1]));
            add(c[s & 1]);
        }
        for (auto &e : done) CHECK(cudaEventDestroy(e));
        CHECK(cudaStreamDestroy(st));
    } else {
        for (int s = 0; s < batches; ++s) {
            decode(x[0], s);
            if (prefetch) CHECK(cudaMemPrefetchAsync(x[0], xbytes, gpu, 0, 0));
            if (!managed && !in_place) CHECK(cudaMemcpy(dx[0], x[0], xbytes, cudaMemcpyHostToDevice));
            CHECK(cudaMemset(dc[0], 0, cbytes));
            bin<<<grid, block>>>(dx[0], dc[0], SAMPLES);
            CHECK(cudaGetLastError());
            if (prefetch) {
                CHECK(cudaMemPrefetchAsync(c[0], cbytes, cpu, 0, 0));
                CHECK(cudaMemPrefetchAsync(x[0], xbytes, cpu, 0, 0));
            }
            if (!managed && !in_place) CHECK(cudaMemcpy(c[0], dc[0], cbytes, cudaMemcpyDeviceToHost));
            CHECK(cudaDeviceSynchronize());
            add(c[0]);
        }
    }
    double checksum = 0;
    for (int b = 0; b < BINS; ++b) checksum += (double)totals[b] * (double)(b + 1);
    printf("{\"app\": \"histogram\", \"mem\": \"%s\", \"checksum\": %.9g}\n", mem.c_str(), checksum);
    for (int b = 0; b < nbuf; ++b) {
        if (!managed && !in_place) {
            CHECK(cudaFree(dx[b]));
            CHECK(cudaFree(dc[b]));
        }
        host_free(xk, x[b]);
        host_free(ck, c[b]);
    }
    return 0;
}

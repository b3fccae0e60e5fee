// An inference server's request loop, written as a first version usually is: 160 requests of varying size, one after
// another, each a batch the host decodes into one malloc'd input buffer sized for the largest request (every float
// written), copied in with cudaMemcpy, reduced four to one by a kernel (each output a function of four inputs), and
// its answer (a quarter of the request) copied back with cudaMemcpy into a malloc'd buffer the host reads whole (the
// response's checksum). Request sizes are log-uniform from 256 KiB to 32 MiB (a fixed sequence: about 1 GiB in all).
// Fixed before its first measurement, to check advice on a loop whose copies change size every iteration.
//
//   requests [--mem MODE] [--requests 160]
//
// Prints one JSON line: its checksum, its loop's time and, in the modes that copy one request at a time, the host's
// time inside its cudaMemcpy calls (loop_s, copies_s: a trace's copies against the program's own clock).
//
// pageable is the program as written; the other modes are the ways advice can ask for, applied to the host buffers:
//   pinned, registered      both buffers from cudaMallocHost / malloc'd and cudaHostRegister'ed, copied as written
//   write-combined          the input buffer (the host only writes it) from cudaHostAlloc write-combined, the answer
//                           buffer from cudaMallocHost
//   mapped, zero-copy       both registered mapped / from cudaHostAlloc mapped: the kernel reads the request and writes
//                           the answer in host memory (no copies)
//   managed                 both from cudaMallocManaged, written and read by the host in place
//   managed-prefetch        the same, the request prefetched to the GPU before its kernel, the answer back to the host
//                           after it, and the input buffer back to the host before the next request is decoded into it
//   managed-advise-accessed-by-gpu  the same buffers, advised accessed by the GPU once
//   pinned-pipelined        pinned buffers, two of each: the host decodes the next request while the current one's
//                           copy, kernel and answer's copy run on a stream (an event a buffer pair)
#include <cuda_runtime.h>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>
#include "host_memory.h"

static const size_t MIN_FLOATS = 64u << 10, MAX_FLOATS = 8u << 20;  // 256 KiB .. 32 MiB of floats

// out[j] = f(in[4j..4j+3]): every input read once, a quarter of it written
__global__ void reduce4(const float4 *in, float *out, size_t n_out) {
    for (size_t j = blockIdx.x * (size_t)blockDim.x + threadIdx.x; j < n_out; j += (size_t)gridDim.x * blockDim.x) {
        const float4 v = in[j];
        out[j] = fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w)) + 0.25f * (v.x + v.y + v.z + v.w);
    }
}

static void decode(float *x, size_t n, int r) {  // the host's whole write of the request: a hash of each index
    const unsigned salt = 2654435761u * (unsigned)(r + 1);
    for (size_t i = 0; i < n; ++i) {
        unsigned v = (unsigned)i * 2246822519u + salt;
        x[i] = (float)((v ^ (v >> 13)) & 0xffff) * (1.0f / 65536.0f);
    }
}

static double now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

static double respond(const float *y, size_t n) {  // the host reads the whole answer
    double s = 0;
    for (size_t j = 0; j < n; ++j) s += y[j];
    return s;
}

int main(int argc, char **argv) {
    std::string mem = "pageable";
    int requests = 160;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--mem")) mem = argv[i + 1];
        else if (!strcmp(argv[i], "--requests")) requests = atoi(argv[i + 1]);
        else { fprintf(stderr, "unknown option %s\n", argv[i]); return 2; }
    }
    if (requests < 1) { fprintf(stderr, "--requests must be positive\n"); return 2; }
    Kind xk, yk;
    if (mem == "pageable") xk = yk = MALLOC;
    else if (mem == "pinned" || mem == "pinned-pipelined") xk = yk = PINNED;
    else if (mem == "registered") xk = yk = REGISTERED;
    else if (mem == "write-combined") { xk = WRITE_COMBINED; yk = PINNED; }
    else if (mem == "mapped") xk = yk = REGISTERED_MAPPED;
    else if (mem == "zero-copy") xk = yk = ALLOC_MAPPED;
    else if (mem == "managed" || mem == "managed-prefetch" || mem == "managed-advise-accessed-by-gpu") xk = yk = MANAGED;
    else { fprintf(stderr, "unknown --mem %s\n", mem.c_str()); return 2; }
    const bool managed = xk == MANAGED, prefetch = mem == "managed-prefetch", pipelined = mem == "pinned-pipelined";
    const bool in_place = xk == REGISTERED_MAPPED || xk == ALLOC_MAPPED;
    // the request sizes: log-uniform, a fixed sequence (a multiple of 1024 floats each)
    std::vector<size_t> sizes(requests);
    unsigned long long lcg = 88172645463325252ull;
    for (auto &n : sizes) {
        lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
        const double u = (double)(lcg >> 11) / 9007199254740992.0;
        n = ((size_t)(MIN_FLOATS * std::exp(u * std::log((double)MAX_FLOATS / MIN_FLOATS))) + 1023) & ~(size_t)1023;
        if (n > MAX_FLOATS) n = MAX_FLOATS;
    }
    const size_t xbytes = MAX_FLOATS * sizeof(float), ybytes = xbytes / 4;
    size_t free_b = 0, total_b = 0;
    CHECK(cudaMemGetInfo(&free_b, &total_b));
    if (managed && xbytes + ybytes > free_b / 2) {  // managed memory is never oversubscribed here
        fprintf(stderr, "the managed buffers (%zu MiB) are more than half the GPU's free memory (%zu MiB)\n",
                (xbytes + ybytes) >> 20, free_b >> 20);
        return 2;
    }
    int dev = 0;
    CHECK(cudaGetDevice(&dev));
    cudaMemLocation gpu{cudaMemLocationTypeDevice, dev}, cpu{cudaMemLocationTypeHost, 0};
    const int nbuf = pipelined ? 2 : 1;
    float *x[2] = {nullptr, nullptr}, *y[2] = {nullptr, nullptr}, *dx[2] = {nullptr, nullptr}, *dy[2] = {nullptr, nullptr};
    for (int b = 0; b < nbuf; ++b) {
        x[b] = (float *)host_alloc(xk, xbytes);
        y[b] = (float *)host_alloc(yk, ybytes);
        if (in_place) {
            CHECK(cudaHostGetDevicePointer((void **)&dx[b], x[b], 0));
            CHECK(cudaHostGetDevicePointer((void **)&dy[b], y[b], 0));
        } else if (managed) {
            dx[b] = x[b];
            dy[b] = y[b];
        } else {
            CHECK(cudaMalloc((void **)&dx[b], xbytes));
            CHECK(cudaMalloc((void **)&dy[b], ybytes));
        }
    }
    if (mem == "managed-advise-accessed-by-gpu") {
        CHECK(cudaMemAdvise(x[0], xbytes, cudaMemAdviseSetAccessedBy, gpu));
        CHECK(cudaMemAdvise(y[0], ybytes, cudaMemAdviseSetAccessedBy, gpu));
    }
    auto launch = [&](int b, size_t n, cudaStream_t st) {
        const size_t n_out = n / 4;
        const unsigned blocks = (unsigned)std::min<size_t>((n_out + 255) / 256, 132 * 8);
        reduce4<<<blocks, 256, 0, st>>>((const float4 *)dx[b], dy[b], n_out);
        CHECK(cudaGetLastError());
    };
    double checksum = 0, copies_s = 0;  // the host's time in the plain loop's cudaMemcpy calls
    const double loop_start = now_s();
    if (pipelined) {
        cudaStream_t st;
        cudaEvent_t done[2];
        CHECK(cudaStreamCreate(&st));
        for (auto &e : done) CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
        for (int r = 0; r < requests; ++r) {
            const int b = r & 1;
            if (r >= 2) {  // this buffer pair's request of two steps ago: its answer is back
                CHECK(cudaEventSynchronize(done[b]));
                checksum += respond(y[b], sizes[r - 2] / 4);
            }
            decode(x[b], sizes[r], r);  // while the other request's copies and kernel run
            CHECK(cudaMemcpyAsync(dx[b], x[b], sizes[r] * sizeof(float), cudaMemcpyHostToDevice, st));
            launch(b, sizes[r], st);
            CHECK(cudaMemcpyAsync(y[b], dy[b], sizes[r] / 4 * sizeof(float), cudaMemcpyDeviceToHost, st));
            CHECK(cudaEventRecord(done[b], st));
        }
        for (int r = requests < 2 ? 0 : requests - 2; r < requests; ++r) {
            CHECK(cudaEventSynchronize(done[r & 1]));
            checksum += respond(y[r & 1], sizes[r] / 4);
        }
        for (auto &e : done) CHECK(cudaEventDestroy(e));
        CHECK(cudaStreamDestroy(st));
    } else {
        for (int r = 0; r < requests; ++r) {
            const size_t n = sizes[r], in_b = n * sizeof(float), out_b = in_b / 4;
            decode(x[0], n, r);
            if (prefetch) CHECK(cudaMemPrefetchAsync(x[0], in_b, gpu, 0, 0));
            double t = now_s();
            if (!managed && !in_place) CHECK(cudaMemcpy(dx[0], x[0], in_b, cudaMemcpyHostToDevice));
            copies_s += now_s() - t;
            launch(0, n, 0);
            if (prefetch) {
                CHECK(cudaMemPrefetchAsync(y[0], out_b, cpu, 0, 0));
                CHECK(cudaMemPrefetchAsync(x[0], in_b, cpu, 0, 0));
            }
            t = now_s();
            if (!managed && !in_place) CHECK(cudaMemcpy(y[0], dy[0], out_b, cudaMemcpyDeviceToHost));
            copies_s += now_s() - t;
            CHECK(cudaDeviceSynchronize());
            checksum += respond(y[0], n / 4);
        }
    }
    const double loop_s = now_s() - loop_start;
    printf("{\"app\": \"requests\", \"mem\": \"%s\", \"loop_s\": %.6f, \"copies_s\": %.6f, \"checksum\": %.9g}\n",
           mem.c_str(), loop_s, copies_s, checksum);
    for (int b = 0; b < nbuf; ++b) {
        if (!managed && !in_place) {
            CHECK(cudaFree(dx[b]));
            CHECK(cudaFree(dy[b]));
        }
        host_free(xk, x[b]);
        host_free(yk, y[b]);
    }
    return 0;
}

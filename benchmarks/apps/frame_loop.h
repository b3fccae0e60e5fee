// A frame loop, written the ways an application can move its data: the host produces `in`
// (all of it, or its first `--new` fraction, each iteration), kernels read it and write `out`,
// and the host consumes `out`. One binary per application, `--mem MODE` picks the memory
// strategy, so that advice from a trace of one mode can be applied and timed as another.
//
// Modes (umprof's strategy names): pageable, pinned, write-combined, zero-copy, mapped, managed,
// managed-prefetch, managed-advise-read-mostly (`in` advised read-mostly: the kernel only reads
// it), managed-advise-prefer-gpu, managed-advise-prefer-host, managed-advise-accessed-by-gpu (both
// buffers advised so), pinned-pipelined (chunks over streams, the host writing the next chunk while
// the last is in flight), pageable-staged (pageable data through two pinned slots, host threads
// copying into one while the other is copied), pageable-registered (the pageable buffers page-locked
// in place with cudaHostRegister once, then copied as pageable ones are). Every mode releases what it
// allocated before it returns (a registered buffer unregistered first), as the advice for each way says; until
// 2026-11-26 (umprof 0.9.0) the applications left their memory to the process's exit. managed-prefetch prefetches
// the input back to the host before the host rewrites it (since umprof 0.11.0, as its advice says; before, the
// host's writes faulted it back page by page).
#pragma once
#include <cuda_runtime.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "cuda_check.h"

struct Args {
    std::string mem;
    double mib_in = 64, mib_out = 64, fresh = 1.0;  // MiB in and out; fraction of `in` new each iteration
    int iters = 40, work = 1, chunks = 8, streams = 4, copies = 1;
    int host_work = 0;  // dependent multiply-adds the host computes per input value (its producer's own work)
};

// the application's own settings, with any option given on the command line in their place
static Args parse(int argc, char **argv, Args a) {
    for (int i = 1; i < argc; i += 2) {
        std::string k = argv[i], v = i + 1 < argc ? argv[i + 1] : "";
        if (v.empty()) { fprintf(stderr, "option %s: expected a value\n", k.c_str()); exit(2); }
        if (k == "--mem") a.mem = v;
        else if (k == "--in") a.mib_in = atof(v.c_str());
        else if (k == "--out") a.mib_out = atof(v.c_str());
        else if (k == "--new") a.fresh = atof(v.c_str());
        else if (k == "--iters") a.iters = atoi(v.c_str());
        else if (k == "--work") a.work = atoi(v.c_str());
        else if (k == "--chunks") a.chunks = atoi(v.c_str());
        else if (k == "--streams") a.streams = atoi(v.c_str());
        else if (k == "--copies") a.copies = atoi(v.c_str());
        else if (k == "--host-work") a.host_work = atoi(v.c_str());
        else { fprintf(stderr, "unknown option %s\n", k.c_str()); exit(2); }
    }
    return a;
}

static double now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// when each part of the run ended (seconds from the start of main): allocations, the first write, the loop,
// the releases; printed with the result, so that a run's parts are known untraced (mode_phases.py)
static double marks[4];
static double t_start;

// the host's part: new input values (cheap arithmetic, every word written, then `host_work` dependent
// multiply-adds each: a producer that computes its values) and the output's sum
static void produce(float *in, size_t first, size_t count, int it, int host_work) {
    for (size_t i = first; i < first + count; ++i) {
        float x = (float)((i * 7 + it) & 1023);
        for (int k = 0; k < host_work; ++k) x = x * 0.999f + 0.5f;
        in[i] = x;
    }
}
static double consume(const float *out, size_t first, size_t count) {
    double s = 0;
    for (size_t i = first; i < first + count; ++i) s += out[i];
    return s;
}

// out[i] = f(the sum of in[j] for j = i, i + n_out, ... < n_in): every input word read once (the
// whole input folded into a smaller output, or mapped one to one when they are the same size),
// then `work` dependent multiply-adds per output element (the kernel's compute)
__global__ void frame_kernel(const float *in, float *out, size_t n_in, size_t n_out, size_t first, size_t count,
                             int work) {
    for (size_t i = first + blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < first + count;
         i += (size_t)gridDim.x * blockDim.x) {
        float x = 0.f;
        for (size_t j = i; j < n_in; j += n_out) x += in[j];
        for (int k = 0; k < work; ++k) x = x * 0.999f + 0.5f;
        out[i] = x;
    }
}

static void launch(const float *in, float *out, size_t n_in, size_t n_out, size_t first, size_t count, int work,
                   cudaStream_t s = 0) {
    if (!count) return;
    unsigned blocks = (unsigned)std::min<size_t>((count + 255) / 256, 132 * 16);
    frame_kernel<<<blocks, 256, 0, s>>>(in, out, n_in, n_out, first, count, work);
    CHECK(cudaGetLastError());
}

// host copies on several threads (what a staging ring's host side does)
static void threaded_copy(void *dst, const void *src, size_t bytes, int threads = 8) {
    std::vector<std::thread> ts;
    size_t part = (bytes / threads + 4095) & ~(size_t)4095;
    for (int t = 0; t < threads; ++t) {
        size_t off = (size_t)t * part;
        if (off >= bytes) break;
        size_t len = std::min(part, bytes - off);
        ts.emplace_back([=] { memcpy((char *)dst + off, (const char *)src + off, len); });
    }
    for (auto &t : ts) t.join();
}

// pageable <-> device through two pinned slots: the host fills one while the other is copied
struct Ring {
    char *slot[2];
    cudaEvent_t done[2];
    cudaStream_t stream;
    size_t bytes;
    explicit Ring(size_t slot_bytes) : bytes(slot_bytes) {
        for (int i = 0; i < 2; ++i) {
            CHECK(cudaMallocHost((void **)&slot[i], bytes));
            CHECK(cudaEventCreateWithFlags(&done[i], cudaEventDisableTiming));
            CHECK(cudaEventRecord(done[i], 0));
        }
        CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    }
    ~Ring() {
        for (int i = 0; i < 2; ++i) {
            CHECK(cudaFreeHost(slot[i]));
            CHECK(cudaEventDestroy(done[i]));
        }
        CHECK(cudaStreamDestroy(stream));
    }
    void to_device(char *dst, const char *src, size_t total) {
        for (size_t off = 0, k = 0; off < total; off += bytes, ++k) {
            size_t len = std::min(bytes, total - off);
            int s = k & 1;
            CHECK(cudaEventSynchronize(done[s]));
            threaded_copy(slot[s], src + off, len);
            CHECK(cudaMemcpyAsync(dst + off, slot[s], len, cudaMemcpyHostToDevice, stream));
            CHECK(cudaEventRecord(done[s], stream));
        }
        CHECK(cudaStreamSynchronize(stream));
    }
    void to_host(char *dst, const char *src, size_t total) {
        size_t n = (total + bytes - 1) / bytes;
        for (size_t k = 0; k <= n; ++k) {
            if (k < n) {  // copy chunk k into its slot
                size_t off = k * bytes, len = std::min(bytes, total - off);
                int s = k & 1;
                CHECK(cudaEventSynchronize(done[s]));
                CHECK(cudaMemcpyAsync(slot[s], src + off, len, cudaMemcpyDeviceToHost, stream));
                CHECK(cudaEventRecord(done[s], stream));
            }
            if (k > 0) {  // empty the slot of chunk k - 1 while chunk k is copied
                size_t off = (k - 1) * bytes, len = std::min(bytes, total - off);
                int s = (k - 1) & 1;
                CHECK(cudaEventSynchronize(done[s]));
                threaded_copy(dst + off, slot[s], len);
            }
        }
    }
};

// `copies` copies of equal parts (an application that sends records one by one)
static void copy_in_parts(void *dst, const void *src, size_t bytes, int copies, cudaMemcpyKind kind) {
    size_t part = (bytes + copies - 1) / copies;
    for (size_t off = 0; off < bytes; off += part)
        CHECK(cudaMemcpy((char *)dst + off, (const char *)src + off, std::min(part, bytes - off), kind));
}

// Runs the loop in `a.mem`; returns the checksum of everything the host consumed.
static double frame_loop(const Args &a) {
    const size_t n_in = (size_t)(a.mib_in * 1048576 / 4), n_out = (size_t)(a.mib_out * 1048576 / 4);
    const size_t b_in = n_in * 4, b_out = n_out * 4, n_new = (size_t)(a.fresh * n_in);
    const std::string &m = a.mem;
    float *h_in = nullptr, *h_out = nullptr, *d_in = nullptr, *d_out = nullptr;
    bool copies = m == "pageable" || m == "pinned" || m == "write-combined" || m == "pinned-pipelined" ||
                  m == "pageable-staged" || m == "pageable-registered";
    if (m == "pageable" || m == "pageable-staged" || m == "mapped" || m == "pageable-registered") {
        h_in = (float *)aligned_alloc(4096, b_in);
        h_out = (float *)aligned_alloc(4096, b_out);
        if (m == "mapped" || m == "pageable-registered") {
            unsigned flags = m == "mapped" ? cudaHostRegisterMapped : cudaHostRegisterDefault;
            CHECK(cudaHostRegister(h_in, b_in, flags));
            CHECK(cudaHostRegister(h_out, b_out, flags));
        }
    } else if (m == "pinned" || m == "pinned-pipelined") {
        CHECK(cudaMallocHost((void **)&h_in, b_in));
        CHECK(cudaMallocHost((void **)&h_out, b_out));
    } else if (m == "write-combined") {
        CHECK(cudaHostAlloc((void **)&h_in, b_in, cudaHostAllocWriteCombined));  // the host only writes `in`
        CHECK(cudaMallocHost((void **)&h_out, b_out));
    } else if (m == "zero-copy") {
        CHECK(cudaHostAlloc((void **)&h_in, b_in, cudaHostAllocMapped));
        CHECK(cudaHostAlloc((void **)&h_out, b_out, cudaHostAllocMapped));
    } else if (m == "managed" || m == "managed-prefetch" || m.rfind("managed-advise-", 0) == 0) {
        CHECK(cudaMallocManaged((void **)&h_in, b_in));
        CHECK(cudaMallocManaged((void **)&h_out, b_out));
    } else {
        fprintf(stderr, "unknown --mem %s\n", m.c_str());
        exit(2);
    }
    if (m.rfind("managed-advise-", 0) == 0 && m != "managed-advise-read-mostly" && m != "managed-advise-prefer-gpu" &&
        m != "managed-advise-prefer-host" && m != "managed-advise-accessed-by-gpu") {
        fprintf(stderr, "unknown --mem %s\n", m.c_str());
        exit(2);
    }
    if (copies) {
        CHECK(cudaMalloc((void **)&d_in, b_in));
        CHECK(cudaMalloc((void **)&d_out, b_out));
    } else if (m == "zero-copy" || m == "mapped") {
        CHECK(cudaHostGetDevicePointer((void **)&d_in, h_in, 0));
        CHECK(cudaHostGetDevicePointer((void **)&d_out, h_out, 0));
    } else {
        d_in = h_in;
        d_out = h_out;
    }
    int dev = 0;
    CHECK(cudaGetDevice(&dev));
    cudaMemLocation gpu_loc{cudaMemLocationTypeDevice, dev}, host_loc{cudaMemLocationTypeHost, 0};
    std::vector<cudaStream_t> st(a.streams);
    for (auto &s : st) CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    Ring *ring = m == "pageable-staged" ? new Ring(32u << 20) : nullptr;
    if (m == "managed-advise-read-mostly") CHECK(cudaMemAdvise(h_in, b_in, cudaMemAdviseSetReadMostly, gpu_loc));
    for (float *buf : {h_in, h_out}) {
        size_t bytes = buf == h_in ? b_in : b_out;
        if (m == "managed-advise-prefer-gpu") CHECK(cudaMemAdvise(buf, bytes, cudaMemAdviseSetPreferredLocation, gpu_loc));
        if (m == "managed-advise-prefer-host") CHECK(cudaMemAdvise(buf, bytes, cudaMemAdviseSetPreferredLocation, host_loc));
        if (m == "managed-advise-accessed-by-gpu") CHECK(cudaMemAdvise(buf, bytes, cudaMemAdviseSetAccessedBy, gpu_loc));
    }
    marks[0] = now_s() - t_start;
    produce(h_in, 0, n_in, -1, a.host_work);  // the first input: all of it
    marks[1] = now_s() - t_start;
    double sum = 0;
    for (int it = 0; it < a.iters; ++it) {
        size_t fresh = it == 0 ? n_in : n_new;
        if (m == "pinned-pipelined") {
            if (n_in != n_out) {
                fprintf(stderr, "pinned-pipelined needs --in equal to --out (a chunk's kernel reads its own chunk)\n");
                exit(2);
            }
            // chunk c: the host writes its new part, copies it in, runs its kernel, copies its output back
            size_t cin = (n_in + a.chunks - 1) / a.chunks, cout = (n_out + a.chunks - 1) / a.chunks;
            for (int c = 0; c < a.chunks; ++c) {
                cudaStream_t s = st[c % a.streams];
                size_t i0 = std::min(n_in, c * cin), i1 = std::min(n_in, i0 + cin);
                size_t w0 = std::min(i0, fresh), w1 = std::min(i1, fresh);
                if (it > 0 && w1 > w0) produce(h_in, w0, w1 - w0, it, a.host_work);
                if (w1 > w0 || it == 0)
                    CHECK(cudaMemcpyAsync(d_in + i0, h_in + i0, (it == 0 ? i1 - i0 : w1 - w0) * 4,
                                          cudaMemcpyHostToDevice, s));
                size_t o0 = std::min(n_out, c * cout), o1 = std::min(n_out, o0 + cout);
                launch(d_in, d_out, n_in, n_out, o0, o1 - o0, a.work, s);
                CHECK(cudaMemcpyAsync(h_out + o0, d_out + o0, (o1 - o0) * 4, cudaMemcpyDeviceToHost, s));
            }
            for (int c = 0; c < a.chunks; ++c) {
                CHECK(cudaStreamSynchronize(st[c % a.streams]));
                size_t o0 = std::min(n_out, c * cout), o1 = std::min(n_out, o0 + cout);
                sum += consume(h_out, o0, o1 - o0);
            }
            continue;
        }
        if (it > 0 && fresh && m == "managed-prefetch") {  // back before the host rewrites it, as the advice says
            CHECK(cudaMemPrefetchAsync(h_in, fresh * 4, host_loc, 0, 0));
            CHECK(cudaStreamSynchronize(0));
        }
        if (it > 0) produce(h_in, 0, fresh, it, a.host_work);
        if (m == "pageable" || m == "pinned" || m == "write-combined" || m == "pageable-registered") {
            copy_in_parts(d_in, h_in, fresh * 4, a.copies, cudaMemcpyHostToDevice);
            launch(d_in, d_out, n_in, n_out, 0, n_out, a.work);
            copy_in_parts(h_out, d_out, b_out, a.copies, cudaMemcpyDeviceToHost);
        } else if (m == "pageable-staged") {
            ring->to_device((char *)d_in, (const char *)h_in, fresh * 4);
            launch(d_in, d_out, n_in, n_out, 0, n_out, a.work);
            CHECK(cudaDeviceSynchronize());
            ring->to_host((char *)h_out, (const char *)d_out, b_out);
        } else if (m == "managed-prefetch") {
            if (fresh) CHECK(cudaMemPrefetchAsync(d_in, fresh * 4, gpu_loc, 0, 0));  // a read-only table: once
            CHECK(cudaMemPrefetchAsync(d_out, b_out, gpu_loc, 0, 0));
            launch(d_in, d_out, n_in, n_out, 0, n_out, a.work);
            CHECK(cudaMemPrefetchAsync(d_out, b_out, host_loc, 0, 0));
            CHECK(cudaDeviceSynchronize());
        } else {  // zero-copy, mapped, managed (advised or not): the kernel reads and writes the host's buffers
            launch(d_in, d_out, n_in, n_out, 0, n_out, a.work);
            CHECK(cudaDeviceSynchronize());
        }
        sum += consume(h_out, 0, n_out);
    }
    CHECK(cudaDeviceSynchronize());
    marks[2] = now_s() - t_start;
    // what it allocated, released as a program that follows each way's advice does (a registered buffer
    // unregistered before its free): a program that leaves registered or pinned memory to its exit pays more
    // there (benchmarks/exit_teardown.py)
    delete ring;
    for (auto &s : st) CHECK(cudaStreamDestroy(s));
    if (copies) {
        CHECK(cudaFree(d_in));
        CHECK(cudaFree(d_out));
    }
    if (m == "mapped" || m == "pageable-registered") {
        CHECK(cudaHostUnregister(h_in));
        CHECK(cudaHostUnregister(h_out));
    }
    if (m == "pageable" || m == "pageable-staged" || m == "mapped" || m == "pageable-registered") {
        free(h_in);
        free(h_out);
    } else if (m.rfind("managed", 0) == 0) {
        CHECK(cudaFree(h_in));
        CHECK(cudaFree(h_out));
    } else {
        CHECK(cudaFreeHost(h_in));
        CHECK(cudaFreeHost(h_out));
    }
    marks[3] = now_s() - t_start;
    return sum;
}

// runs the application's loop and prints one JSON line: its mode, the loop's seconds, the checksum
static int run_app(const char *name, int argc, char **argv, Args defaults) {
    Args a = parse(argc, argv, defaults);
    t_start = now_s();
    double sum = frame_loop(a);
    printf("{\"app\": \"%s\", \"mem\": \"%s\", \"loop_s\": %.6f, \"checksum\": %.17g, \"marks_s\": {\"alloc\": %.6f, "
           "\"write\": %.6f, \"loop\": %.6f, \"free\": %.6f}}\n",
           name, a.mem.c_str(), now_s() - t_start, sum, marks[0], marks[1], marks[2], marks[3]);
    return 0;
}

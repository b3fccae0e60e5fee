// Ways real applications move their data that the frame loop (frame_loop.h) does not: thrust vectors
// (a device vector built from a host vector every step), pitched images (cudaMallocPitch, cudaMemcpy2D),
// a CUDA graph captured once and launched every step, stream-ordered allocation (cudaMallocAsync and
// cudaFreeAsync around every step's copies) and two host threads, each with its stream and buffers.
// Each is an application of its own for `umprof advise` to read: `idioms IDIOM [--mem MODE]`, where
// MODE is how the host buffers are allocated: pageable (malloc'd, the default; the graph's is pinned:
// stream capture cannot take a pageable copy), pinned (cudaMallocHost) or pageable-registered (malloc'd, then
// cudaHostRegister), so that the advice read from the trace of one mode can be timed as another.
// Every step the host writes the whole input (a producer computing its values), the GPU maps it to an
// output of the same size, and the host reads all of it; prints one JSON line (checksum, wall time).
#include <cuda_runtime.h>
#include <thrust/copy.h>
#include <thrust/device_vector.h>
#include <thrust/host_vector.h>
#include <thrust/transform.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "cuda_check.h"

static const size_t N = (48u << 20) / sizeof(float);  // 48 MiB each way a step
static const int STEPS = 30;
static std::string mem = "pageable";

static float *host_alloc(size_t bytes) {
    float *p = nullptr;
    if (mem == "pinned") {
        CHECK(cudaMallocHost((void **)&p, bytes));
        return p;
    }
    p = (float *)aligned_alloc(4096, (bytes + 4095) & ~(size_t)4095);
    if (!p) { fprintf(stderr, "out of host memory\n"); exit(1); }
    if (mem == "pageable-registered") CHECK(cudaHostRegister(p, bytes, cudaHostRegisterDefault));
    return p;
}

static void host_free(float *p) {
    if (mem == "pinned") {
        CHECK(cudaFreeHost(p));
        return;
    }
    if (mem == "pageable-registered") CHECK(cudaHostUnregister(p));
    free(p);
}

static void produce(float *in, size_t n, int step) {
    for (size_t i = 0; i < n; ++i) in[i] = (float)((i * 7 + step) & 1023) * 0.5f;
}
static double consume(const float *out, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; ++i) s += out[i];
    return s;
}

__global__ void scale(const float *in, float *out, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        out[i] = in[i] * 2.0f + 1.0f;
}
static void launch(const float *in, float *out, size_t n, cudaStream_t s = 0) {
    scale<<<132 * 8, 256, 0, s>>>(in, out, n);
    CHECK(cudaGetLastError());
}

struct twice_plus_one {
    __host__ __device__ float operator()(float x) const { return x * 2.0f + 1.0f; }
};

// a device vector made from the host's every step (cudaMalloc, a copy in, cudaFree at the step's end), as
// code that treats thrust's vectors as values does
static double thrust_vectors() {
    float *h_in = host_alloc(N * 4), *h_out = host_alloc(N * 4);
    double sum = 0;
    for (int step = 0; step < STEPS; ++step) {
        produce(h_in, N, step);
        thrust::device_vector<float> d_in(h_in, h_in + N);
        thrust::device_vector<float> d_out(N);
        thrust::transform(d_in.begin(), d_in.end(), d_out.begin(), twice_plus_one());
        thrust::copy(d_out.begin(), d_out.end(), h_out);
        sum += consume(h_out, N);
    }
    host_free(h_in);
    host_free(h_out);
    return sum;
}

// an image with rows padded on the GPU (cudaMallocPitch) and packed on the host: 2D copies each way
static double pitched_image() {
    const size_t width = 4096, height = N / width, row = width * 4;
    float *h_in = host_alloc(N * 4), *h_out = host_alloc(N * 4);
    float *d_in, *d_out;
    size_t pitch;
    CHECK(cudaMallocPitch((void **)&d_in, &pitch, row, height));
    CHECK(cudaMallocPitch((void **)&d_out, &pitch, row, height));
    double sum = 0;
    for (int step = 0; step < STEPS; ++step) {
        produce(h_in, N, step);
        CHECK(cudaMemcpy2D(d_in, pitch, h_in, row, row, height, cudaMemcpyHostToDevice));
        launch(d_in, d_out, pitch / 4 * height);  // the padding too: every word of both pitched buffers
        CHECK(cudaMemcpy2D(h_out, row, d_out, pitch, row, height, cudaMemcpyDeviceToHost));
        sum += consume(h_out, N);
    }
    CHECK(cudaFree(d_in));
    CHECK(cudaFree(d_out));
    host_free(h_in);
    host_free(h_out);
    return sum;
}

// copy in, kernel, copy out captured once into a graph, launched every step (pinned buffers: a pageable
// copy cannot be captured)
static double graph_steps() {
    if (mem == "pageable") mem = "pinned";
    float *h_in = host_alloc(N * 4), *h_out = host_alloc(N * 4);
    float *d_in, *d_out;
    CHECK(cudaMalloc((void **)&d_in, N * 4));
    CHECK(cudaMalloc((void **)&d_out, N * 4));
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CHECK(cudaMemcpyAsync(d_in, h_in, N * 4, cudaMemcpyHostToDevice, s));
    launch(d_in, d_out, N, s);
    CHECK(cudaMemcpyAsync(h_out, d_out, N * 4, cudaMemcpyDeviceToHost, s));
    CHECK(cudaStreamEndCapture(s, &graph));
    CHECK(cudaGraphInstantiate(&exec, graph, 0));
    double sum = 0;
    for (int step = 0; step < STEPS; ++step) {
        produce(h_in, N, step);
        CHECK(cudaGraphLaunch(exec, s));
        CHECK(cudaStreamSynchronize(s));
        sum += consume(h_out, N);
    }
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(graph));
    CHECK(cudaStreamDestroy(s));
    CHECK(cudaFree(d_in));
    CHECK(cudaFree(d_out));
    host_free(h_in);
    host_free(h_out);
    return sum;
}

// device buffers from the stream's pool every step (cudaMallocAsync, cudaFreeAsync), copies on that stream
static double pool_steps() {
    float *h_in = host_alloc(N * 4), *h_out = host_alloc(N * 4);
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    double sum = 0;
    for (int step = 0; step < STEPS; ++step) {
        produce(h_in, N, step);
        float *d_in, *d_out;
        CHECK(cudaMallocAsync((void **)&d_in, N * 4, s));
        CHECK(cudaMallocAsync((void **)&d_out, N * 4, s));
        CHECK(cudaMemcpyAsync(d_in, h_in, N * 4, cudaMemcpyHostToDevice, s));
        launch(d_in, d_out, N, s);
        CHECK(cudaMemcpyAsync(h_out, d_out, N * 4, cudaMemcpyDeviceToHost, s));
        CHECK(cudaFreeAsync(d_in, s));
        CHECK(cudaFreeAsync(d_out, s));
        CHECK(cudaStreamSynchronize(s));
        sum += consume(h_out, N);
    }
    CHECK(cudaStreamDestroy(s));
    host_free(h_in);
    host_free(h_out);
    return sum;
}

// two host threads, each with its own stream and half of the data, stepping at the same time
static double two_threads() {
    const size_t half = N / 2;
    double sums[2] = {0, 0};
    auto worker = [&](int t) {
        float *h_in = host_alloc(half * 4), *h_out = host_alloc(half * 4);
        float *d_in, *d_out;
        CHECK(cudaMalloc((void **)&d_in, half * 4));
        CHECK(cudaMalloc((void **)&d_out, half * 4));
        cudaStream_t s;
        CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
        for (int step = 0; step < STEPS; ++step) {
            produce(h_in, half, step + t);
            CHECK(cudaMemcpyAsync(d_in, h_in, half * 4, cudaMemcpyHostToDevice, s));
            launch(d_in, d_out, half, s);
            CHECK(cudaMemcpyAsync(h_out, d_out, half * 4, cudaMemcpyDeviceToHost, s));
            CHECK(cudaStreamSynchronize(s));
            sums[t] += consume(h_out, half);
        }
        CHECK(cudaStreamDestroy(s));
        CHECK(cudaFree(d_in));
        CHECK(cudaFree(d_out));
        host_free(h_in);
        host_free(h_out);
    };
    std::thread a(worker, 0), b(worker, 1);
    a.join();
    b.join();
    return sums[0] + sums[1];
}

int main(int argc, char **argv) {
    auto t0 = std::chrono::steady_clock::now();
    if (argc < 2) {
        fprintf(stderr, "usage: idioms thrust|pitched|graph|pool|threads [--mem pageable|pinned|pageable-registered]\n");
        return 2;
    }
    std::string idiom = argv[1];
    if (argc == 4 && std::string(argv[2]) == "--mem") mem = argv[3];
    if (mem != "pageable" && mem != "pinned" && mem != "pageable-registered") {
        fprintf(stderr, "--mem: expected pageable, pinned or pageable-registered, got %s\n", mem.c_str());
        return 2;
    }
    CHECK(cudaFree(0));  // the context, before the host allocates (as the frame loop does)
    double sum;
    if (idiom == "thrust") sum = thrust_vectors();
    else if (idiom == "pitched") sum = pitched_image();
    else if (idiom == "graph") sum = graph_steps();
    else if (idiom == "pool") sum = pool_steps();
    else if (idiom == "threads") sum = two_threads();
    else {
        fprintf(stderr, "unknown idiom %s\n", idiom.c_str());
        return 2;
    }
    CHECK(cudaDeviceSynchronize());
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    printf("{\"app\": \"%s\", \"mem\": \"%s\", \"checksum\": %.17g, \"main_s\": %.6f}\n", idiom.c_str(), mem.c_str(),
           sum, wall);
    return 0;
}

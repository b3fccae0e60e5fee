// A renderer's frame loop, written as a first version usually is: 16 frames, each rendered by a kernel into a
// 192 MiB image on the GPU (every pixel computed from its position and the frame's camera, passed to the kernel as
// arguments), copied back with cudaMemcpy into one malloc'd frame buffer that nothing wrote before the first frame,
// and encoded by the host, which reads every pixel (a checksum, standing for the encoder). No copies in. Fixed before
// its first measurement, to check advice on a loop whose only copy lands in pages its first copy faults in.
//
//   render [--mem MODE] [--frames 16]
//
// pageable is the program as written; the other modes are the ways advice can ask for, applied to the frame buffer:
//   pinned, registered      the frame buffer from cudaMallocHost / malloc'd and cudaHostRegister'ed, copied as written
//   write-combined          the frame buffer from cudaHostAlloc write-combined (the host reads it uncached: run.sh
//                           leaves it out)
//   mapped, zero-copy       the frame buffer registered mapped / from cudaHostAlloc mapped: the kernel writes the
//                           image in host memory (no device image, no copies)
//   managed                 the frame buffer from cudaMallocManaged, written by the kernel and read by the host in place
//   managed-prefetch        the same, prefetched to the GPU before each frame's kernel and back to the host after it
//   managed-advise-accessed-by-gpu  the same buffer, advised accessed by the GPU once
//   pinned-pipelined        two pinned frame buffers and two device images: the GPU renders and copies back the next
//                           frame on a stream while the host encodes the current one (an event a buffer)
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include "host_memory.h"

static const size_t WIDTH = 8192, HEIGHT = 6144, PIXELS = WIDTH * HEIGHT;  // floats: 192 MiB

// a shaded surface seen from the frame's camera: a few multiply-adds a pixel
__global__ void shade(float *img, float cx, float cy, float zoom) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < PIXELS; i += (size_t)gridDim.x * blockDim.x) {
        const float x = ((float)(i % WIDTH) - cx) * zoom, y = ((float)(i / WIDTH) - cy) * zoom;
        const float r = x * x + y * y;
        img[i] = r / (1.0f + r) + 0.25f * x - 0.125f * y;
    }
}

static double encode(const float *img) {  // the host reads every pixel
    double a[4] = {0, 0, 0, 0};
    for (size_t j = 0; j < PIXELS; j += 4)
        for (int k = 0; k < 4; ++k) a[k] += img[j + k];
    return a[0] + a[1] + a[2] + a[3];
}

int main(int argc, char **argv) {
    std::string mem = "pageable";
    int frames = 16;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--mem")) mem = argv[i + 1];
        else if (!strcmp(argv[i], "--frames")) frames = atoi(argv[i + 1]);
        else { fprintf(stderr, "unknown option %s\n", argv[i]); return 2; }
    }
    if (frames < 1) { fprintf(stderr, "--frames must be positive\n"); return 2; }
    Kind k;
    if (mem == "pageable") k = MALLOC;
    else if (mem == "pinned" || mem == "pinned-pipelined") k = PINNED;
    else if (mem == "registered") k = REGISTERED;
    else if (mem == "write-combined") k = WRITE_COMBINED;
    else if (mem == "mapped") k = REGISTERED_MAPPED;
    else if (mem == "zero-copy") k = ALLOC_MAPPED;
    else if (mem == "managed" || mem == "managed-prefetch" || mem == "managed-advise-accessed-by-gpu") k = MANAGED;
    else { fprintf(stderr, "unknown --mem %s\n", mem.c_str()); return 2; }
    const bool managed = k == MANAGED, prefetch = mem == "managed-prefetch", pipelined = mem == "pinned-pipelined";
    const bool in_place = k == REGISTERED_MAPPED || k == ALLOC_MAPPED;
    const size_t bytes = PIXELS * sizeof(float);
    size_t free_b = 0, total_b = 0;
    CHECK(cudaMemGetInfo(&free_b, &total_b));
    if (managed && bytes > free_b / 2) {  // managed memory is never oversubscribed here
        fprintf(stderr, "the managed frame buffer (%zu MiB) is more than half the GPU's free memory (%zu MiB)\n",
                bytes >> 20, free_b >> 20);
        return 2;
    }
    int dev = 0;
    CHECK(cudaGetDevice(&dev));
    cudaMemLocation gpu{cudaMemLocationTypeDevice, dev}, cpu{cudaMemLocationTypeHost, 0};
    float *h[2] = {(float *)host_alloc(k, bytes), pipelined ? (float *)host_alloc(k, bytes) : nullptr};
    if (mem == "managed-advise-accessed-by-gpu") CHECK(cudaMemAdvise(h[0], bytes, cudaMemAdviseSetAccessedBy, gpu));
    float *d[2] = {h[0], nullptr};
    if (in_place) CHECK(cudaHostGetDevicePointer((void **)&d[0], h[0], 0));
    else if (!managed) {
        CHECK(cudaMalloc((void **)&d[0], bytes));
        if (pipelined) CHECK(cudaMalloc((void **)&d[1], bytes));
    }
    const dim3 grid(132 * 8), block(256);
    auto render = [&](int f, float *img, cudaStream_t s) {
        shade<<<grid, block, 0, s>>>(img, 0.5f * WIDTH + 8.0f * f, 0.5f * HEIGHT - 4.0f * f, 1.0f / (1024.0f + f));
        CHECK(cudaGetLastError());
    };
    double checksum = 0;
    if (pipelined) {  // frame f+1 renders and copies back on the stream while the host encodes frame f
        cudaStream_t st;
        cudaEvent_t ready[2];
        CHECK(cudaStreamCreate(&st));
        for (auto &e : ready) CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
        auto issue = [&](int f) {
            const int b = f & 1;
            render(f, d[b], st);
            CHECK(cudaMemcpyAsync(h[b], d[b], bytes, cudaMemcpyDeviceToHost, st));
            CHECK(cudaEventRecord(ready[b], st));
        };
        issue(0);
        for (int f = 0; f < frames; ++f) {
            if (f + 1 < frames) issue(f + 1);  // its buffer's last frame (f - 1) was encoded before this
            CHECK(cudaEventSynchronize(ready[f & 1]));
            checksum += encode(h[f & 1]);
        }
        for (auto &e : ready) CHECK(cudaEventDestroy(e));
        CHECK(cudaStreamDestroy(st));
    } else {
        for (int f = 0; f < frames; ++f) {
            if (prefetch) CHECK(cudaMemPrefetchAsync(h[0], bytes, gpu, 0, 0));
            render(f, d[0], 0);
            if (prefetch) CHECK(cudaMemPrefetchAsync(h[0], bytes, cpu, 0, 0));
            if (!managed && !in_place) CHECK(cudaMemcpy(h[0], d[0], bytes, cudaMemcpyDeviceToHost));
            CHECK(cudaDeviceSynchronize());
            checksum += encode(h[0]);
        }
    }
    printf("{\"app\": \"render\", \"mem\": \"%s\", \"checksum\": %.9g}\n", mem.c_str(), checksum);
    if (!managed && !in_place) {
        CHECK(cudaFree(d[0]));
        if (d[1]) CHECK(cudaFree(d[1]));
    }
    host_free(k, h[0]);
    if (h[1]) host_free(k, h[1]);
    return 0;
}

/* A batch loop already at its best: a 1 GiB float buffer in pinned memory (cudaMallocHost) that the host fills
 * batch by batch (64 MiB batches, new values every pass), each batch copied with cudaMemcpyAsync on one of two
 * streams as soon as it is filled, summed by a kernel (a sum a 32-float group) and its 2 MiB of sums copied back
 * into pinned memory, while the host fills the next batch; 3 passes.
 *
 *     batch_loop [--mode MODE] [--mib 1024] [--batch-mib 64] [--passes 3]
 *
 * Modes (the same sums, the same checksum):
 *   as_written        pinned memory, two streams, asynchronous copies (the program as its author wrote it)
 *   pageable          malloc'd memory, one stream, cudaMemcpy each way
 *   managed_prefetch  the dataset and sums in managed memory, each batch cudaMemPrefetchAsync'ed to the GPU
 *                     before its kernel and its sums to the host after it, two streams
 * Prints one JSON line: program, mode, loop_s, checksum. */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "../apps/cuda_check.h"  // CHECK(call)

#define GROUP 32

__global__ void group_sums(const float *x, float *sums, size_t groups) {
    for (size_t g = blockIdx.x * (size_t)blockDim.x + threadIdx.x; g < groups; g += (size_t)gridDim.x * blockDim.x) {
        const float4 *v = (const float4 *)(x + g * GROUP);
        float s = 0.f;
        for (int k = 0; k < GROUP / 4; ++k) { float4 q = v[k]; s += q.x + q.y + q.z + q.w; }
        sums[g] = s;
    }
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    const char *mode = "as_written";
    size_t mib = 1024, batch_mib = 64;
    int passes = 3;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--mode")) mode = argv[i + 1];
        else if (!strcmp(argv[i], "--mib")) mib = strtoul(argv[i + 1], 0, 10);
        else if (!strcmp(argv[i], "--batch-mib")) batch_mib = strtoul(argv[i + 1], 0, 10);
        else if (!strcmp(argv[i], "--passes")) passes = atoi(argv[i + 1]);
        else { fprintf(stderr, "batch_loop: unknown option %s\n", argv[i]); return 2; }
    }
    int pinned = !strcmp(mode, "as_written"), pageable = !strcmp(mode, "pageable");
    int managed = !strcmp(mode, "managed_prefetch");
    if (!pinned && !pageable && !managed) {
        fprintf(stderr, "batch_loop: --mode: expected as_written, pageable or managed_prefetch, got %s\n", mode);
        return 2;
    }
    size_t n = mib << 20 >> 2, per = batch_mib << 20 >> 2, batches = n / per, groups = per / GROUP;
    int dev = 0;
    CHECK(cudaSetDevice(dev));
    cudaStream_t st[2];
    for (int b = 0; b < 2; ++b) CHECK(cudaStreamCreate(&st[b]));
    float *x, *sums, *dx[2] = {0, 0}, *dsums[2] = {0, 0};
    size_t xb = n * sizeof(float), sb = n / GROUP * sizeof(float);
    if (pinned) { CHECK(cudaMallocHost(&x, xb)); CHECK(cudaMallocHost(&sums, sb)); }
    if (pageable) { x = (float *)malloc(xb); sums = (float *)malloc(sb); if (!x || !sums) return 1; }
    if (managed) { CHECK(cudaMallocManaged(&x, xb, cudaMemAttachGlobal)); CHECK(cudaMallocManaged(&sums, sb, cudaMemAttachGlobal)); }
    if (!managed)
        for (int b = 0; b < 2; ++b) {
            CHECK(cudaMalloc(&dx[b], per * sizeof(float)));
            CHECK(cudaMalloc(&dsums[b], groups * sizeof(float)));
        }
    float table[4096];
    for (int i = 0; i < 4096; ++i) table[i] = (float)(i % 4093) * 1e-3f;
    cudaMemLocation gpu = {cudaMemLocationTypeDevice, dev}, host = {cudaMemLocationTypeHost, 0};
    CHECK(cudaDeviceSynchronize());
    double checksum = 0.0, start = now();
    for (int p = 0; p < passes; ++p) {
        for (size_t b = 0; b < batches; ++b) {
            cudaStream_t s = pageable ? st[0] : st[b % 2];
            float *in = x + b * per, *out = sums + b * groups;
            for (size_t i = 0; i < per; ++i) in[i] = table[i & 4095] + (float)p;  /* the batch this pass */
            if (managed) {
                CHECK(cudaMemPrefetchAsync(in, per * sizeof(float), gpu, 0, s));
                CHECK(cudaMemPrefetchAsync(out, groups * sizeof(float), gpu, 0, s));
                group_sums<<<1056, 256, 0, s>>>(in, out, groups);
                CHECK(cudaGetLastError());
                CHECK(cudaMemPrefetchAsync(out, groups * sizeof(float), host, 0, s));
                continue;
            }
            if (pageable) CHECK(cudaMemcpy(dx[0], in, per * sizeof(float), cudaMemcpyHostToDevice));
            else CHECK(cudaMemcpyAsync(dx[b % 2], in, per * sizeof(float), cudaMemcpyHostToDevice, s));
            group_sums<<<1056, 256, 0, s>>>(dx[pageable ? 0 : b % 2], dsums[pageable ? 0 : b % 2], groups);
            CHECK(cudaGetLastError());
            if (pageable) CHECK(cudaMemcpy(out, dsums[0], groups * sizeof(float), cudaMemcpyDeviceToHost));
            else CHECK(cudaMemcpyAsync(out, dsums[b % 2], groups * sizeof(float), cudaMemcpyDeviceToHost, s));
        }
        CHECK(cudaDeviceSynchronize());
        for (size_t g = 0; g < n / GROUP; g += 1024) checksum += sums[g];
    }
    double loop_s = now() - start;
    printf("{\"program\": \"batch_loop\", \"mode\": \"%s\", \"loop_s\": %.6f, \"checksum\": %.6g}\n", mode, loop_s,
           checksum);
    return 0;
}

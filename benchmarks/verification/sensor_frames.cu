/* A camera/sensor processing loop, as a CUDA C programmer writes it: each of 60 frames of raw 16-bit sensor data
 * (4096 x 2048 uint16, 16 MiB) is made on the host (a cheap multiplicative hash of the frame and pixel index plus a
 * ramp, written into one host buffer), copied to the GPU, converted to float by a first kernel (dark-frame subtraction
 * with a dark frame uploaded once and resident on the GPU, a gain, a clamp at saturation; a 32 MiB float image that
 * stays on the GPU), binned 4x4 by a second kernel (1024 x 512 floats, 2 MiB) and copied back into a host buffer,
 * where the host consumes it: the float64 sum of the binned image plus three sampled values (first, middle, last),
 * added to the checksum. After the loop the binned images of the first, the middle and the last frame are recomputed
 * on the host with the same float arithmetic and compared with what the GPU produced; a mismatch exits 1.
 *
 *     sensor_frames [--mode MODE] [--frames 60] [--width 4096] [--height 2048]
 *
 * Modes (the same frames, the same results, the same checksum):
 *   as_written  malloc'd input and output buffers; each frame cudaMemcpy in, the two kernels on the default stream,
 *               cudaMemcpy out (pageable memory both ways; the program as its author wrote it)
 *   pinned      as as_written, but the two host buffers come from cudaMallocHost; the same synchronous cudaMemcpy
 *   registered  the malloc'd buffers page-locked once with cudaHostRegister (cudaHostUnregister after the loop); each
 *               frame cudaMemcpyAsync in, the kernels and cudaMemcpyAsync out on one created stream, then
 *               cudaStreamSynchronize before the host reads the result
 *   pipelined   two of everything (pinned input and output buffers from cudaMallocHost, device buffers, streams),
 *               double-buffered: frame i + 1 is made in buffer (i + 1) % 2 and its copy in, kernels and copy out are
 *               queued with cudaMemcpyAsync on stream (i + 1) % 2 while frame i's work runs on the other stream; the
 *               host then waits on frame i's stream (cudaStreamSynchronize) and consumes its result
 *   zero_copy   input and output in mapped pinned memory (cudaSetDeviceFlags(cudaDeviceMapHost),
 *               cudaHostAlloc(cudaHostAllocMapped), cudaHostGetDevicePointer): the first kernel reads the raw frame
 *               and the second writes the binned image across the link, no copies; cudaDeviceSynchronize before the
 *               host reads it
 *   managed     input and output from cudaMallocManaged; the host writes each frame into the input, then on one
 *               created stream cudaMemPrefetchAsync of the input and the output to the GPU, the kernels,
 *               cudaMemPrefetchAsync of the output to the host, cudaStreamSynchronize before the host reads it
 * Setup (allocations, the dark frame's upload, one launch of each kernel) happens before the timed loop, the
 * verification and the freeing after it.
 * Prints one JSON line: program, mode, loop_s, checksum. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "../apps/cuda_check.h"  // CHECK(call)

#define GAIN 0.25f       /* electrons per count */
#define SATURATION 360.0f /* clamp of the calibrated value */
#define BIN 4            /* binning factor in each direction */

enum { AS_WRITTEN, PINNED, REGISTERED, PIPELINED, ZERO_COPY, MANAGED, NMODES };
static const char *mode_names[NMODES] = {"as_written", "pinned", "registered", "pipelined", "zero_copy", "managed"};

/* raw counts -> calibrated float: dark-frame subtraction, gain, clamp */
__global__ void calibrate(const unsigned short *raw, const float *dark, float *cal, size_t n, float gain,
                          float saturation) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float v = ((float)raw[i] - dark[i]) * gain;
        cal[i] = fminf(fmaxf(v, 0.0f), saturation);
    }
}

/* 4x4 binning: each output value is the mean of a 4x4 block of the calibrated image, summed row by row */
__global__ void bin4x4(const float *cal, float *out, int width, size_t nout) {
    size_t bw = (size_t)width / BIN;
    for (size_t o = blockIdx.x * (size_t)blockDim.x + threadIdx.x; o < nout; o += (size_t)gridDim.x * blockDim.x) {
        size_t bx = o % bw, by = o / bw;
        const float *p = cal + by * BIN * (size_t)width + bx * BIN;
        float s = 0.0f;
        for (int r = 0; r < BIN; ++r)
            for (int c = 0; c < BIN; ++c) s += p[(size_t)r * width + c];
        out[o] = s * (1.0f / (BIN * BIN));
    }
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* The sensor's raw frame number `frame`: a ramp that moves with the frame plus hashed noise, 12-bit values. */
static void make_frame(unsigned short *raw, int frame, int width, int height) {
    for (int y = 0; y < height; ++y) {
        unsigned short *row = raw + (size_t)y * width;
        unsigned int ramp = 3u * (unsigned int)y + 5u * (unsigned int)frame;
        unsigned int h = (unsigned int)((size_t)y * width) * 2654435761u + (unsigned int)frame * 40503u;
        for (int x = 0; x < width; ++x) {
            unsigned int hx = h + (unsigned int)x * 2654435761u;
            row[x] = (unsigned short)(240u + (((unsigned int)x + ramp) & 1023u) + (hx >> 24));
        }
    }
}

/* What the host does with each binned frame: its float64 sum plus three sampled values. */
static double consume(const float *out, size_t nout) {
    double s = 0.0;
    for (size_t i = 0; i < nout; ++i) s += out[i];
    return s + out[0] + out[nout / 2] + out[nout - 1];
}

/* The two kernels, in the same float arithmetic, on the host (for the check after the loop). */
static void reference(const unsigned short *raw, const float *dark, float *cal, float *out, int width, int height) {
    size_t n = (size_t)width * height, bw = (size_t)width / BIN, nout = n / (BIN * BIN);
    for (size_t i = 0; i < n; ++i) {
        float v = ((float)raw[i] - dark[i]) * GAIN;
        cal[i] = fminf(fmaxf(v, 0.0f), SATURATION);
    }
    for (size_t o = 0; o < nout; ++o) {
        size_t bx = o % bw, by = o / bw;
        const float *p = cal + by * BIN * (size_t)width + bx * BIN;
        float s = 0.0f;
        for (int r = 0; r < BIN; ++r)
            for (int c = 0; c < BIN; ++c) s += p[(size_t)r * width + c];
        out[o] = s * (1.0f / (BIN * BIN));
    }
}

int main(int argc, char **argv) {
    const char *mode_arg = "as_written";
    int frames = 60, width = 4096, height = 2048;
    for (int i = 1; i < argc; i += 2) {
        if (i + 1 >= argc) { fprintf(stderr, "sensor_frames: option %s needs a value\n", argv[i]); return 2; }
        if (!strcmp(argv[i], "--mode")) mode_arg = argv[i + 1];
        else if (!strcmp(argv[i], "--frames")) frames = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--width")) width = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--height")) height = atoi(argv[i + 1]);
        else { fprintf(stderr, "sensor_frames: unknown option %s\n", argv[i]); return 2; }
    }
    int mode = -1;
    for (int m = 0; m < NMODES; ++m)
        if (!strcmp(mode_arg, mode_names[m])) mode = m;
    if (mode < 0) {
        fprintf(stderr, "sensor_frames: --mode: expected as_written, pinned, registered, pipelined, zero_copy or "
                        "managed, got %s\n", mode_arg);
        return 2;
    }
    if (frames < 1 || width < BIN || height < BIN || width % BIN || height % BIN) {
        fprintf(stderr, "sensor_frames: need --frames >= 1 and --width, --height positive multiples of %d\n", BIN);
        return 2;
    }
    size_t npix = (size_t)width * height, nout = npix / (BIN * BIN);
    size_t in_bytes = npix * sizeof(unsigned short), out_bytes = nout * sizeof(float);
    int copies = mode == AS_WRITTEN || mode == PINNED || mode == REGISTERED || mode == PIPELINED;
    int nbuf = mode == PIPELINED ? 2 : 1;

    int dev = 0;
    if (mode == ZERO_COPY) CHECK(cudaSetDeviceFlags(cudaDeviceMapHost)); /* before the context is made */
    CHECK(cudaSetDevice(dev));
    int sms = 0;
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    int block = 256, grid = sms * 8;
    cudaStream_t st[2];
    for (int b = 0; b < 2; ++b) CHECK(cudaStreamCreate(&st[b]));

    /* host buffers (h_*) and the pointers the kernels use (k_*) */
    unsigned short *h_in[2] = {0, 0}, *d_in[2] = {0, 0}, *k_in[2] = {0, 0};
    float *h_out[2] = {0, 0}, *d_out[2] = {0, 0}, *k_out[2] = {0, 0}, *d_cal[2] = {0, 0};
    for (int b = 0; b < nbuf; ++b) {
        switch (mode) {
        case AS_WRITTEN:
        case REGISTERED:
            h_in[b] = (unsigned short *)malloc(in_bytes);
            h_out[b] = (float *)malloc(out_bytes);
            if (!h_in[b] || !h_out[b]) { fprintf(stderr, "sensor_frames: malloc failed\n"); return 1; }
            if (mode == REGISTERED) {
                CHECK(cudaHostRegister(h_in[b], in_bytes, cudaHostRegisterDefault));
                CHECK(cudaHostRegister(h_out[b], out_bytes, cudaHostRegisterDefault));
            }
            break;
        case PINNED:
        case PIPELINED:
            CHECK(cudaMallocHost(&h_in[b], in_bytes));
            CHECK(cudaMallocHost(&h_out[b], out_bytes));
            break;
        case ZERO_COPY:
            CHECK(cudaHostAlloc(&h_in[b], in_bytes, cudaHostAllocMapped));
            CHECK(cudaHostAlloc(&h_out[b], out_bytes, cudaHostAllocMapped));
            CHECK(cudaHostGetDevicePointer(&k_in[b], h_in[b], 0));
            CHECK(cudaHostGetDevicePointer(&k_out[b], h_out[b], 0));
            break;
        case MANAGED:
            CHECK(cudaMallocManaged(&h_in[b], in_bytes, cudaMemAttachGlobal));
            CHECK(cudaMallocManaged(&h_out[b], out_bytes, cudaMemAttachGlobal));
            k_in[b] = h_in[b];
            k_out[b] = h_out[b];
            break;
        }
        if (copies) {
            CHECK(cudaMalloc(&d_in[b], in_bytes));
            CHECK(cudaMalloc(&d_out[b], out_bytes));
            CHECK(cudaMemset(d_in[b], 0, in_bytes));
            k_in[b] = d_in[b];
            k_out[b] = d_out[b];
        }
        CHECK(cudaMalloc(&d_cal[b], npix * sizeof(float)));
        memset(h_in[b], 0, in_bytes); /* the host touches its buffers once before the loop */
        memset(h_out[b], 0, out_bytes);
    }

    /* the dark frame: made on the host, uploaded once, resident on the GPU */
    float *h_dark = (float *)malloc(npix * sizeof(float)), *d_dark;
    if (!h_dark) { fprintf(stderr, "sensor_frames: malloc failed\n"); return 1; }
    for (int y = 0; y < height; ++y)
        for (int x = 0; x < width; ++x)
            h_dark[(size_t)y * width + x] = 32.0f + 0.5f * (float)((x * 7 + y * 13) & 63);
    CHECK(cudaMalloc(&d_dark, npix * sizeof(float)));
    CHECK(cudaMemcpy(d_dark, h_dark, npix * sizeof(float), cudaMemcpyHostToDevice));

    /* warm-up: each kernel once */
    calibrate<<<grid, block>>>(k_in[0], d_dark, d_cal[0], npix, GAIN, SATURATION);
    CHECK(cudaGetLastError());
    bin4x4<<<grid, block>>>(d_cal[0], k_out[0], width, nout);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());

    /* the frames whose binned images are checked after the loop, and copies of them */
    int check_frame[3] = {0, frames / 2, frames - 1};
    float *kept[3];
    for (int k = 0; k < 3; ++k) {
        kept[k] = (float *)malloc(out_bytes);
        if (!kept[k]) { fprintf(stderr, "sensor_frames: malloc failed\n"); return 1; }
    }
    cudaMemLocation gpu = {cudaMemLocationTypeDevice, dev}, host = {cudaMemLocationTypeHost, 0};

    double checksum = 0.0;
    CHECK(cudaDeviceSynchronize());
    double start = now();
    if (mode == PIPELINED) {
        for (int i = -1; i < frames; ++i) {
            if (i + 1 < frames) { /* make frame i + 1 and queue its work while frame i's runs */
                int f = i + 1, b = f % 2;
                /* buffers b were last used by frame f - 2, whose stream was synchronised below */
                make_frame(h_in[b], f, width, height);
                CHECK(cudaMemcpyAsync(d_in[b], h_in[b], in_bytes, cudaMemcpyHostToDevice, st[b]));
                calibrate<<<grid, block, 0, st[b]>>>(d_in[b], d_dark, d_cal[b], npix, GAIN, SATURATION);
                CHECK(cudaGetLastError());
                bin4x4<<<grid, block, 0, st[b]>>>(d_cal[b], d_out[b], width, nout);
                CHECK(cudaGetLastError());
                CHECK(cudaMemcpyAsync(h_out[b], d_out[b], out_bytes, cudaMemcpyDeviceToHost, st[b]));
            }
            if (i < 0) continue;
            int b = i % 2;
            CHECK(cudaStreamSynchronize(st[b]));
            checksum += consume(h_out[b], nout);
            for (int k = 0; k < 3; ++k)
                if (i == check_frame[k]) memcpy(kept[k], h_out[b], out_bytes);
        }
    } else {
        for (int i = 0; i < frames; ++i) {
            make_frame(h_in[0], i, width, height);
            cudaStream_t s = 0;
            if (mode == AS_WRITTEN || mode == PINNED) {
                CHECK(cudaMemcpy(d_in[0], h_in[0], in_bytes, cudaMemcpyHostToDevice));
            } else if (mode == REGISTERED) {
                s = st[0];
                CHECK(cudaMemcpyAsync(d_in[0], h_in[0], in_bytes, cudaMemcpyHostToDevice, s));
            } else if (mode == MANAGED) {
                s = st[0];
                CHECK(cudaMemPrefetchAsync(h_in[0], in_bytes, gpu, 0, s));
                CHECK(cudaMemPrefetchAsync(h_out[0], out_bytes, gpu, 0, s));
            }
            calibrate<<<grid, block, 0, s>>>(k_in[0], d_dark, d_cal[0], npix, GAIN, SATURATION);
            CHECK(cudaGetLastError());
            bin4x4<<<grid, block, 0, s>>>(d_cal[0], k_out[0], width, nout);
            CHECK(cudaGetLastError());
            if (mode == AS_WRITTEN || mode == PINNED) {
                CHECK(cudaMemcpy(h_out[0], d_out[0], out_bytes, cudaMemcpyDeviceToHost));
            } else if (mode == REGISTERED) {
                CHECK(cudaMemcpyAsync(h_out[0], d_out[0], out_bytes, cudaMemcpyDeviceToHost, s));
                CHECK(cudaStreamSynchronize(s));
            } else if (mode == ZERO_COPY) {
                CHECK(cudaDeviceSynchronize());
            } else { /* MANAGED */
                CHECK(cudaMemPrefetchAsync(h_out[0], out_bytes, host, 0, s));
                CHECK(cudaStreamSynchronize(s));
            }
            checksum += consume(h_out[0], nout);
            for (int k = 0; k < 3; ++k)
                if (i == check_frame[k]) memcpy(kept[k], h_out[0], out_bytes);
        }
    }
    CHECK(cudaDeviceSynchronize());
    double loop_s = now() - start;

    /* check: the kept frames recomputed on the host */
    unsigned short *raw = (unsigned short *)malloc(in_bytes);
    float *cal = (float *)malloc(npix * sizeof(float)), *ref = (float *)malloc(out_bytes);
    if (!raw || !cal || !ref) { fprintf(stderr, "sensor_frames: malloc failed\n"); return 1; }
    for (int k = 0; k < 3; ++k) {
        make_frame(raw, check_frame[k], width, height);
        reference(raw, h_dark, cal, ref, width, height);
        size_t bad = 0, first = 0;
        for (size_t o = 0; o < nout; ++o)
            if (!(fabsf(kept[k][o] - ref[o]) <= 1e-6f * fabsf(ref[o]))) {
                if (!bad) first = o;
                ++bad;
            }
        if (bad) {
            fprintf(stderr, "sensor_frames: frame %d: %zu of %zu binned values differ from the host's (first at %zu: "
                            "%.9g, expected %.9g)\n", check_frame[k], bad, nout, first, kept[k][first], ref[first]);
            return 1;
        }
    }
    printf("{\"program\": \"sensor_frames\", \"mode\": \"%s\", \"loop_s\": %.6f, \"checksum\": %.17g}\n",
           mode_names[mode], loop_s, checksum);

    free(raw);
    free(cal);
    free(ref);
    for (int k = 0; k < 3; ++k) free(kept[k]);
    for (int b = 0; b < nbuf; ++b) {
        switch (mode) {
        case AS_WRITTEN: free(h_in[b]); free(h_out[b]); break;
        case REGISTERED:
            CHECK(cudaHostUnregister(h_in[b]));
            CHECK(cudaHostUnregister(h_out[b]));
            free(h_in[b]);
            free(h_out[b]);
            break;
        case PINNED:
        case PIPELINED:
        case ZERO_COPY: CHECK(cudaFreeHost(h_in[b])); CHECK(cudaFreeHost(h_out[b])); break;
        case MANAGED: CHECK(cudaFree(h_in[b])); CHECK(cudaFree(h_out[b])); break;
        }
        if (copies) { CHECK(cudaFree(d_in[b])); CHECK(cudaFree(d_out[b])); }
        CHECK(cudaFree(d_cal[b]));
    }
    free(h_dark);
    CHECK(cudaFree(d_dark));
    for (int b = 0; b < 2; ++b) CHECK(cudaStreamDestroy(st[b]));
    return 0;
}

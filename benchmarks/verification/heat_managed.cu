/* 2D heat diffusion (Jacobi iteration) on managed memory, written the way the "Unified Memory for CUDA beginners"
 * examples write it: two N x N float grids from cudaMallocManaged (4096 x 4096 = 64 MiB each by default),
 * initialised on the host; each of S steps (200) launches a 5-point stencil kernel from one grid into the other
 * and swaps the pointers. Every K steps (10) the host synchronises and works on the grid through the managed
 * pointer: it reads the middle row and its two neighbours (a float64 residual and the row's mean), gathers 8
 * columns x 64 rows of samples element by element, and then resets a hot spot (64 x 64 cells at N/4, N/4) in the
 * grid the next step reads. The host touches a few hundred pages of one 64 MiB grid each time, no more.
 *
 *     heat_managed [--mode MODE] [--n 4096] [--steps 200] [--every 10]
 *
 * N must be a multiple of 64, from 64 to 6144. Modes (the same grids bit for bit, the same checksum):
 *   as_written         managed memory, on-demand migration, no prefetch and no advice: the first kernel faults both
 *                      grids in from the host, the host's reads and writes fault their pages out, the next kernel
 *                      faults them back
 *   prefetch           as_written, plus cudaMemPrefetchAsync of both whole grids to the GPU after each host access
 *                      block, before the kernels resume (and once at the start, after the host's initialisation);
 *                      nothing is prefetched back to the host: its reads fault in what they touch
 *   advise_accessed    as_written, plus (in setup) cudaMemAdvise of both grids: SetPreferredLocation the GPU and
 *                      SetAccessedBy the host (cudaMemLocationTypeHost), so that host accesses map rather than
 *                      migrate where the driver can establish such a mapping
 *   explicit           device-only grids (cudaMalloc); the initial grid is copied up once from a pinned host image
 *                      (cudaMemcpy to both grids), and each diagnostics block copies back just the three middle rows
 *                      (cudaMemcpy) and the 8 sample columns (a cudaMemcpy2D each, one float wide) into small pinned
 *                      buffers (cudaMallocHost) and copies the hot spot up with cudaMemcpy2D; nothing else moves
 *   explicit_pageable  as explicit, but the small host buffers (rows, samples, hot spot) are malloc'd (pageable);
 *                      the initial/final grid image stays pinned as in explicit
 * The timed loop (loop_s) runs from the first move of the grids to the GPU (the first kernel's faults, the first
 * prefetch, or the first cudaMemcpy) to the end of the last step and its diagnostics block, with
 * cudaDeviceSynchronize before and after. Allocation, the host's initialisation, the advice and a warm-up launch of
 * the kernel on a scratch buffer come before it; the final grid's sum (the host reads it once, or copies it back
 * once) after it.
 *
 * Assumptions: one GPU (device 0) with cudaDevAttrConcurrentManagedAccess = 1 (H100/H200 on Linux have it), which
 * prefetch and advise_accessed need (the program exits 1 without it in those modes). The host touches managed
 * memory only after cudaDeviceSynchronize, with no kernel in flight, so as_written would also be correct on a GPU
 * without concurrent managed access. At most 2 x N*N*4 bytes of managed memory (128 MiB by default, 288 MiB at most).
 *
 * The kernel computes 0.25f * (((l + r) + u) + d), with no multiply-add to contract, so the host reference gives
 * the same floats. After the timed run the same simulation, in the same mode and through the same code, runs on a
 * 64 x 64 grid for the same steps, and its final grid and diagnostics are compared bit for bit with a host
 * reference; a mismatch prints to stderr and exits 1.
 *
 * Checksum: the float64 sum of every diagnostics block's statistic plus the float64 sum of the final grid.
 * Prints one JSON line: program, mode, loop_s, checksum. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "../apps/cuda_check.h"  // CHECK(call)

#define SAMPLE_COLS 8   /* columns sampled each diagnostics block */
#define SAMPLE_ROWS 64  /* rows sampled in each of those columns */
#define NSAMPLES (SAMPLE_COLS * SAMPLE_ROWS)
#define HOT 100.0f      /* the hot spot's temperature */

enum Mode { AS_WRITTEN, PREFETCH, ADVISE_ACCESSED, EXPLICIT, EXPLICIT_PAGEABLE };
static const char *mode_names[] = {"as_written", "prefetch", "advise_accessed", "explicit", "explicit_pageable"};

/* One Jacobi step: every interior cell becomes the mean of its four neighbours; the edges stay as they are. */
__global__ void jacobi(const float *u, float *v, int n) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < 1 || y < 1 || x >= n - 1 || y >= n - 1) return;
    size_t i = (size_t)y * n + x;
    v[i] = 0.25f * (u[i - 1] + u[i + 1] + u[i - n] + u[i + n]);
}

static void jacobi_host(const float *u, float *v, int n) {
    for (int y = 1; y < n - 1; ++y)
        for (int x = 1; x < n - 1; ++x) {
            size_t i = (size_t)y * n + x;
            v[i] = 0.25f * (u[i - 1] + u[i + 1] + u[i - n] + u[i + n]);
        }
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* Where the host looks and writes, for a grid of side n (a multiple of 64). */
static int mid_row(int n) { return n / 2; }
static int sample_row(int n, int k) { return k * (n / SAMPLE_ROWS) + n / SAMPLE_ROWS / 2; }
static int sample_col(int n, int j) { return j * (n / SAMPLE_COLS) + n / SAMPLE_COLS / 2; }
static int hot_side(int n) { return n / 8 < 64 ? n / 8 : 64; }
static int hot_at(int n) { return n / 4; }

static void init_grid(float *g, int n) {
    for (int y = 0; y < n; ++y)
        for (int x = 0; x < n; ++x) g[(size_t)y * n + x] = (float)((x * 7 + y * 13) % 101) * 0.01f;
}

static void set_hot_spot(float *g, int n) {
    int h = hot_side(n), at = hot_at(n);
    for (int r = 0; r < h; ++r)
        for (int c = 0; c < h; ++c) g[(size_t)(at + r) * n + at + c] = HOT;
}

/* rows: the rows mid-1, mid and mid+1 of the grid, n floats each, one after the other (in the grid itself or in a
 * copy); samples: SAMPLE_ROWS values of column 0, then of column 1, ... The residual is that of the middle row. */
static double diagnostics(const float *rows, int n, const float *samples) {
    const float *up = rows, *mid = rows + n, *down = rows + 2 * n;
    double res = 0.0, mean = 0.0, s = 0.0;
    for (int x = 1; x < n - 1; ++x) {
        double r = (double)mid[x] - 0.25 * ((double)up[x] + down[x] + mid[x - 1] + mid[x + 1]);
        res += r * r;
    }
    for (int x = 0; x < n; ++x) mean += mid[x];
    for (int k = 0; k < NSAMPLES; ++k) s += samples[k];
    return sqrt(res / (n - 2)) + mean / n + s / NSAMPLES;
}

/* The simulation on a grid of side n in the given mode. Returns the time of the step loop; *diag gets the sum of the
 * diagnostics, *grid_sum the float64 sum of the final grid, and out (n*n floats, if not NULL) the final grid. */
static double simulate(enum Mode mode, int n, int steps, int every, double *diag, double *grid_sum, float *out) {
    int managed = mode == AS_WRITTEN || mode == PREFETCH || mode == ADVISE_ACCESSED;
    int pinned = mode == EXPLICIT;
    size_t cells = (size_t)n * n, bytes = cells * sizeof(float);
    int dev = 0, h = hot_side(n), at = hot_at(n), mid = mid_row(n);
    cudaMemLocation gpu = {cudaMemLocationTypeDevice, dev}, host = {cudaMemLocationTypeHost, 0};

    float *a, *b, *image = 0, *rows = 0, *samples, *hot = 0;
    if (managed) {
        CHECK(cudaMallocManaged(&a, bytes, cudaMemAttachGlobal));
        CHECK(cudaMallocManaged(&b, bytes, cudaMemAttachGlobal));
        init_grid(a, n);
        set_hot_spot(a, n);
        memcpy(b, a, bytes);
        samples = (float *)malloc(NSAMPLES * sizeof(float));
        if (!samples) { fprintf(stderr, "heat_managed: malloc failed\n"); exit(1); }
        if (mode == ADVISE_ACCESSED) {
            CHECK(cudaMemAdvise(a, bytes, cudaMemAdviseSetPreferredLocation, gpu));
            CHECK(cudaMemAdvise(b, bytes, cudaMemAdviseSetPreferredLocation, gpu));
            CHECK(cudaMemAdvise(a, bytes, cudaMemAdviseSetAccessedBy, host));
            CHECK(cudaMemAdvise(b, bytes, cudaMemAdviseSetAccessedBy, host));
        }
    } else {
        CHECK(cudaMalloc(&a, bytes));
        CHECK(cudaMalloc(&b, bytes));
        CHECK(cudaMallocHost(&image, bytes));
        init_grid(image, n);
        set_hot_spot(image, n);
        if (pinned) {
            CHECK(cudaMallocHost(&rows, 3 * n * sizeof(float)));
            CHECK(cudaMallocHost(&samples, NSAMPLES * sizeof(float)));
            CHECK(cudaMallocHost(&hot, (size_t)h * h * sizeof(float)));
        } else {
            rows = (float *)malloc(3 * n * sizeof(float));
            samples = (float *)malloc(NSAMPLES * sizeof(float));
            hot = (float *)malloc((size_t)h * h * sizeof(float));
            if (!rows || !samples || !hot) { fprintf(stderr, "heat_managed: malloc failed\n"); exit(1); }
        }
        for (int i = 0; i < h * h; ++i) hot[i] = HOT;
    }

    dim3 block(32, 8), grid((n + 31) / 32, (n + 7) / 8);
    float *cur = a, *next = b;
    double diag_sum = 0.0;
    CHECK(cudaDeviceSynchronize());
    double start = now();
    if (mode == PREFETCH) {
        CHECK(cudaMemPrefetchAsync(a, bytes, gpu, 0, 0));
        CHECK(cudaMemPrefetchAsync(b, bytes, gpu, 0, 0));
    }
    if (!managed) {
        CHECK(cudaMemcpy(a, image, bytes, cudaMemcpyHostToDevice));
        CHECK(cudaMemcpy(b, image, bytes, cudaMemcpyHostToDevice));
    }
    for (int step = 0; step < steps; ++step) {
        jacobi<<<grid, block>>>(cur, next, n);
        CHECK(cudaGetLastError());
        float *t = cur; cur = next; next = t;
        if ((step + 1) % every) continue;

        /* Diagnostics and the boundary condition, on the host. */
        CHECK(cudaDeviceSynchronize());
        const float *r;
        if (managed) {
            r = cur + (size_t)(mid - 1) * n;  /* read in place */
            for (int j = 0; j < SAMPLE_COLS; ++j)
                for (int k = 0; k < SAMPLE_ROWS; ++k)
                    samples[j * SAMPLE_ROWS + k] = cur[(size_t)sample_row(n, k) * n + sample_col(n, j)];
        } else {
            CHECK(cudaMemcpy(rows, cur + (size_t)(mid - 1) * n, 3 * n * sizeof(float), cudaMemcpyDeviceToHost));
            for (int j = 0; j < SAMPLE_COLS; ++j)
                CHECK(cudaMemcpy2D(samples + j * SAMPLE_ROWS, sizeof(float),
                                   cur + (size_t)sample_row(n, 0) * n + sample_col(n, j),
                                   (size_t)(n / SAMPLE_ROWS) * n * sizeof(float), sizeof(float), SAMPLE_ROWS,
                                   cudaMemcpyDeviceToHost));
            r = rows;
        }
        diag_sum += diagnostics(r, n, samples);
        if (managed) set_hot_spot(cur, n);
        else
            CHECK(cudaMemcpy2D(cur + (size_t)at * n + at, n * sizeof(float), hot, h * sizeof(float), h * sizeof(float),
                               h, cudaMemcpyHostToDevice));
        if (mode == PREFETCH && step + 1 < steps) {
            CHECK(cudaMemPrefetchAsync(a, bytes, gpu, 0, 0));
            CHECK(cudaMemPrefetchAsync(b, bytes, gpu, 0, 0));
        }
    }
    CHECK(cudaDeviceSynchronize());
    double loop_s = now() - start;

    /* The final grid, read once. */
    const float *final_grid = cur;
    if (!managed) {
        CHECK(cudaMemcpy(image, cur, bytes, cudaMemcpyDeviceToHost));
        final_grid = image;
    }
    double sum = 0.0;
    for (size_t i = 0; i < cells; ++i) sum += final_grid[i];
    if (out) memcpy(out, final_grid, bytes);
    *diag = diag_sum;
    *grid_sum = sum;

    CHECK(cudaFree(a));
    CHECK(cudaFree(b));
    if (managed) free(samples);
    else {
        CHECK(cudaFreeHost(image));
        if (pinned) { CHECK(cudaFreeHost(rows)); CHECK(cudaFreeHost(samples)); CHECK(cudaFreeHost(hot)); }
        else { free(rows); free(samples); free(hot); }
    }
    return loop_s;
}

/* The same steps on the host: the reference for the small check. */
static void reference(int n, int steps, int every, double *diag, float *out) {
    size_t cells = (size_t)n * n;
    float *cur = (float *)malloc(cells * sizeof(float)), *next = (float *)malloc(cells * sizeof(float));
    float samples[NSAMPLES];
    if (!cur || !next) { fprintf(stderr, "heat_managed: malloc failed\n"); exit(1); }
    init_grid(cur, n);
    set_hot_spot(cur, n);
    memcpy(next, cur, cells * sizeof(float));
    double diag_sum = 0.0;
    for (int step = 0; step < steps; ++step) {
        jacobi_host(cur, next, n);
        float *t = cur; cur = next; next = t;
        if ((step + 1) % every) continue;
        for (int j = 0; j < SAMPLE_COLS; ++j)
            for (int k = 0; k < SAMPLE_ROWS; ++k)
                samples[j * SAMPLE_ROWS + k] = cur[(size_t)sample_row(n, k) * n + sample_col(n, j)];
        diag_sum += diagnostics(cur + (size_t)(mid_row(n) - 1) * n, n, samples);
        set_hot_spot(cur, n);
    }
    memcpy(out, cur, cells * sizeof(float));
    *diag = diag_sum;
    free(cur);
    free(next);
}

int main(int argc, char **argv) {
    const char *mode_name = "as_written";
    int n = 4096, steps = 200, every = 10;
    for (int i = 1; i < argc; i += 2) {
        if (i + 1 >= argc) { fprintf(stderr, "heat_managed: option %s needs a value\n", argv[i]); return 2; }
        if (!strcmp(argv[i], "--mode")) mode_name = argv[i + 1];
        else if (!strcmp(argv[i], "--n")) n = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--steps")) steps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--every")) every = atoi(argv[i + 1]);
        else { fprintf(stderr, "heat_managed: unknown option %s\n", argv[i]); return 2; }
    }
    int m = -1;
    for (int k = 0; k < 5; ++k)
        if (!strcmp(mode_name, mode_names[k])) m = k;
    if (m < 0) {
        fprintf(stderr, "heat_managed: --mode: expected as_written, prefetch, advise_accessed, explicit or "
                        "explicit_pageable, got %s\n", mode_name);
        return 2;
    }
    if (n < 64 || n % 64 || n > 6144 || steps < 1 || every < 1) {
        fprintf(stderr, "heat_managed: --n must be a multiple of 64 from 64 to 6144, --steps and --every at least 1\n");
        return 2;
    }
    enum Mode mode = (enum Mode)m;

    int dev = 0, concurrent = 0;
    CHECK(cudaSetDevice(dev));
    CHECK(cudaDeviceGetAttribute(&concurrent, cudaDevAttrConcurrentManagedAccess, dev));
    if (!concurrent && (mode == PREFETCH || mode == ADVISE_ACCESSED)) {
        fprintf(stderr, "heat_managed: mode %s needs cudaDevAttrConcurrentManagedAccess, which device %d lacks\n",
                mode_name, dev);
        return 1;
    }

    /* Warm-up: one launch of the kernel on a scratch buffer (context, module). */
    float *scratch;
    int sn = 256;
    CHECK(cudaMalloc(&scratch, 2 * (size_t)sn * sn * sizeof(float)));
    CHECK(cudaMemset(scratch, 0, 2 * (size_t)sn * sn * sizeof(float)));
    jacobi<<<dim3(sn / 32, sn / 8), dim3(32, 8)>>>(scratch, scratch + (size_t)sn * sn, sn);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaFree(scratch));

    double diag, grid_sum;
    double loop_s = simulate(mode, n, steps, every, &diag, &grid_sum, 0);
    double checksum = diag + grid_sum;
    if (!isfinite(checksum)) {
        fprintf(stderr, "heat_managed: checksum is not finite (%g)\n", checksum);
        return 1;
    }

    /* Check: the same simulation, same mode, on a 64 x 64 grid, against the host reference, bit for bit. */
    int tn = 64;
    size_t tcells = (size_t)tn * tn;
    float *got = (float *)malloc(tcells * sizeof(float)), *want = (float *)malloc(tcells * sizeof(float));
    if (!got || !want) { fprintf(stderr, "heat_managed: malloc failed\n"); return 1; }
    double tdiag, tsum, rdiag;
    simulate(mode, tn, steps, every, &tdiag, &tsum, got);
    reference(tn, steps, every, &rdiag, want);
    if (memcmp(got, want, tcells * sizeof(float)) || tdiag != rdiag) {
        size_t bad = 0;
        for (size_t i = 0; i < tcells; ++i) bad += memcmp(&got[i], &want[i], sizeof(float)) != 0;
        fprintf(stderr, "heat_managed: %s on a %dx%d grid differs from the host reference: %zu cells, diagnostics "
                        "%.17g vs %.17g\n", mode_name, tn, tn, bad, tdiag, rdiag);
        return 1;
    }
    free(got);
    free(want);

    printf("{\"program\": \"heat_managed\", \"mode\": \"%s\", \"loop_s\": %.6f, \"checksum\": %.17g}\n", mode_name,
           loop_s, checksum);
    return 0;
}

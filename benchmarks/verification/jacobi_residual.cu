/* An iterative Jacobi solver for the 2-D Poisson equation (-laplace(u) = f on the unit square, u = 0 on the walls,
 * the 5-point stencil) as a CUDA C programmer writes it from a textbook: a 2048 x 2048 float grid (16 MiB, two
 * buffers for the iterate and one for the right-hand side h^2 f), 12000 iterations. Each iteration launches the
 * sweep kernel (u_new = (left + right + down + up + h^2 f) / 4 at every interior cell) and a residual kernel (the
 * residual r = h^2 f + left + right + down + up - 4 u of the new iterate, each of its 1024 blocks writing the sum of
 * r^2 over its rows into a 1024-float array of partial sums), then copies the partial sums back to the host, which adds
 * them up in a fixed order (float64), takes the relative residual ||r|| / ||h^2 f|| and tests it for convergence (a
 * fixed number of iterations: the test records where the solver would have stopped, the iterations go on, so every
 * mode does the same sweeps) and logs it every 50 iterations.
 *
 *     jacobi_residual [--mode MODE] [--n 2048] [--iters 12000] [--every 50] [--tol 1e-6]
 *
 * Modes (the same iterates, the same residuals, the same checksum):
 *   as_written    the partial sums copied each iteration with cudaMemcpy into a malloc'd host array; kernels on the
 *                 default stream (the program as its author wrote it)
 *   pinned        as as_written, but the host array comes from cudaMallocHost; the same synchronous cudaMemcpy
 *   async_lagged  kernels on a created stream; each iteration's partial sums cudaMemcpyAsync'ed into one of two
 *                 cudaMallocHost arrays and an event recorded; the host then waits for the previous iteration's event
 *                 (cudaEventSynchronize) and tests that residual, one iteration late (the last one after the loop)
 *   zero_copy     the residual kernel writes the partial sums straight into mapped pinned host memory
 *                 (cudaSetDeviceFlags(cudaDeviceMapHost), cudaHostAlloc(cudaHostAllocMapped),
 *                 cudaHostGetDevicePointer); cudaStreamSynchronize on the created stream before the host reads them
 *   check_every   the residual kernel and the cudaMemcpy (malloc'd array) only every --every iterations and after the
 *                 last one; the other iterations launch the sweep alone
 * The timed loop (loop_s) runs from the upload of h^2 f (and the zeroing of the iterate) to the download of the final
 * iterate into a malloc'd host array, with cudaDeviceSynchronize before and after; allocation, the host's making of
 * h^2 f and a warm-up launch of each kernel come before it.
 *
 * The numerics are deterministic: the sweep is one rounding per operation (the quarter is exact), the residual's
 * 4 u is exact, each thread of the residual kernel accumulates r^2 with fmaf over fixed cells in a fixed order, the
 * blocks reduce in shared memory in a fixed tree, the host adds the 1024 partial sums in order. After the timed run
 * the same solver, in the same mode and through the same code, runs on a 130 x 130 grid for 5 * every + 7 iterations,
 * and its final iterate and its logged and final residuals are compared with a host reference doing the same float
 * operations in the same order (to 1e-6 relative); and the final residual of the timed run is compared with one
 * computed on the host in float64 from the downloaded iterate (to 1e-3 relative). A mismatch exits 1.
 *
 * Checksum: the float64 sum of the final iterate over all cells plus the logged relative residuals (every --every
 * iterations) plus the final relative residual. Prints one JSON line: program, mode, loop_s, checksum. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "../apps/cuda_check.h"  // CHECK(call)

#define RBLOCKS 1024 /* blocks of the residual kernel: the length of the partial-sums array */
#define RTHREADS 256 /* threads a block of the residual kernel (a power of two: the tree reduction) */

enum Mode { AS_WRITTEN, PINNED, ASYNC_LAGGED, ZERO_COPY, CHECK_EVERY, NMODES };
static const char *mode_names[NMODES] = {"as_written", "pinned", "async_lagged", "zero_copy", "check_every"};

/* One Jacobi update of a cell from its four neighbours and its right-hand side (h^2 f). */
__host__ __device__ static inline float jacobi_point(float l, float r, float d, float t, float b) {
    return 0.25f * (l + r + d + t + b);
}

/* The residual of the 5-point equation at a cell: h^2 f - (4 u - neighbours). 4 u is exact, so fused or not the
 * last subtraction rounds once. */
__host__ __device__ static inline float residual_point(float l, float r, float d, float t, float c, float b) {
    return (b + l + r + d + t) - 4.0f * c;
}

/* One Jacobi sweep over the interior cells; the walls stay 0 in both buffers. */
__global__ void jacobi_sweep(const float *u, float *un, const float *b, int n) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < 1 || y < 1 || x >= n - 1 || y >= n - 1) return;
    size_t i = (size_t)y * n + x;
    un[i] = jacobi_point(u[i - 1], u[i + 1], u[i - n], u[i + n], b[i]);
}

/* The residual's squared norm in partial sums: block k takes the interior rows 1 + k, 1 + k + gridDim.x, ...,
 * thread t the columns 1 + t, 1 + t + blockDim.x, ...; each block's sum (a shared-memory tree) goes to partial[k]. */
__global__ void residual_partials(const float *u, const float *b, float *partial, int n) {
    __shared__ float s[RTHREADS];
    float acc = 0.0f;
    for (int y = 1 + blockIdx.x; y < n - 1; y += gridDim.x) {
        const float *row = u + (size_t)y * n, *brow = b + (size_t)y * n;
        for (int x = 1 + threadIdx.x; x < n - 1; x += blockDim.x) {
            float r = residual_point(row[x - 1], row[x + 1], row[x - n], row[x + n], row[x], brow[x]);
            acc = fmaf(r, r, acc);
        }
    }
    s[threadIdx.x] = acc;
    __syncthreads();
    for (unsigned k = blockDim.x / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0) partial[blockIdx.x] = s[0];
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* The right-hand side h^2 f on an n x n grid (0 on the walls): a smooth mode plus a hot spot. */
static void make_rhs(float *b, int n) {
    const double pi = 3.14159265358979323846, h = 1.0 / (n - 1);
    memset(b, 0, (size_t)n * n * sizeof(float));
    for (int y = 1; y < n - 1; ++y)
        for (int x = 1; x < n - 1; ++x) {
            double px = x * h, py = y * h;
            double f = 2.0 * pi * pi * sin(pi * px) * sin(pi * py) +
                       40.0 * exp(-((px - 0.3) * (px - 0.3) + (py - 0.65) * (py - 0.65)) / 0.005);
            b[(size_t)y * n + x] = (float)(h * h * f);
        }
}

/* ||h^2 f|| over the interior: the residual of the zero initial iterate, the scale of the relative residual. */
static double rhs_norm(const float *b, int n) {
    double s = 0.0;
    for (int y = 1; y < n - 1; ++y)
        for (int x = 1; x < n - 1; ++x) s += (double)b[(size_t)y * n + x] * b[(size_t)y * n + x];
    return sqrt(s);
}

/* The residual norm from the partial sums, added in order. */
static double norm_of(const float *partial) {
    double s = 0.0;
    for (int k = 0; k < RBLOCKS; ++k) s += partial[k];
    return sqrt(s);
}

/* What the host does with each residual it reads. */
typedef struct {
    int every;
    double tol, bnorm;
    double *log;      /* the relative residual after iterations every, 2 every, ... */
    double last;      /* the relative residual last read, */
    int last_it;      /* after this iteration */
    int converged_at; /* the first iteration whose relative residual is below tol (-1: none) */
} Monitor;

static void observe(Monitor *m, int it, const float *partial) {
    double rel = norm_of(partial) / m->bnorm;
    if (!isfinite(rel)) {
        fprintf(stderr, "jacobi_residual: the residual after iteration %d is not finite (%g)\n", it + 1, rel);
        exit(1);
    }
    if (m->converged_at < 0 && rel < m->tol) m->converged_at = it; /* it would stop here: the iterations go on */
    if ((it + 1) % m->every == 0) m->log[(it + 1) / m->every - 1] = rel;
    m->last = rel;
    m->last_it = it;
}

/* The solver on an n x n grid in the given mode, from the right-hand side h_b (host). Returns the time of the loop;
 * h_u gets the final iterate, m the residuals. */
static double solve(enum Mode mode, int n, int iters, const float *h_b, float *h_u, Monitor *m) {
    size_t bytes = (size_t)n * n * sizeof(float), pbytes = RBLOCKS * sizeof(float);
    float *d_u[2], *d_b, *d_partial = 0, *k_partial, *h_partial[2] = {0, 0};
    cudaStream_t s = 0;
    cudaEvent_t copied[2] = {0, 0};
    CHECK(cudaMalloc(&d_u[0], bytes));
    CHECK(cudaMalloc(&d_u[1], bytes));
    CHECK(cudaMalloc(&d_b, bytes));
    switch (mode) {
    case AS_WRITTEN:
    case CHECK_EVERY:
        h_partial[0] = (float *)malloc(pbytes);
        if (!h_partial[0]) { fprintf(stderr, "jacobi_residual: malloc failed\n"); exit(1); }
        break;
    case PINNED:
        CHECK(cudaMallocHost(&h_partial[0], pbytes));
        break;
    case ASYNC_LAGGED:
        CHECK(cudaMallocHost(&h_partial[0], pbytes));
        CHECK(cudaMallocHost(&h_partial[1], pbytes));
        CHECK(cudaStreamCreate(&s));
        CHECK(cudaEventCreate(&copied[0]));
        CHECK(cudaEventCreate(&copied[1]));
        break;
    case ZERO_COPY:
        CHECK(cudaHostAlloc(&h_partial[0], pbytes, cudaHostAllocMapped));
        CHECK(cudaStreamCreate(&s));
        break;
    default:
        break;
    }
    if (mode == ZERO_COPY) {
        CHECK(cudaHostGetDevicePointer(&k_partial, h_partial[0], 0));
    } else {
        CHECK(cudaMalloc(&d_partial, pbytes));
        k_partial = d_partial;
    }
    memset(h_partial[0], 0, pbytes); /* the host touches its buffers once before the loop */
    if (h_partial[1]) memset(h_partial[1], 0, pbytes);

    dim3 block(32, 8), grid((n + 31) / 32, (n + 7) / 8);
    float *u = d_u[0], *un = d_u[1];
    m->last_it = -1;
    m->converged_at = -1;
    CHECK(cudaDeviceSynchronize());
    double start = now();
    CHECK(cudaMemcpy(d_b, h_b, bytes, cudaMemcpyHostToDevice));
    CHECK(cudaMemset(d_u[0], 0, bytes)); /* the initial iterate and both buffers' walls */
    CHECK(cudaMemset(d_u[1], 0, bytes));
    for (int it = 0; it < iters; ++it) {
        jacobi_sweep<<<grid, block, 0, s>>>(u, un, d_b, n);
        CHECK(cudaGetLastError());
        float *t = u; u = un; un = t; /* u: the new iterate */

        if (mode == CHECK_EVERY && (it + 1) % m->every != 0 && it != iters - 1) continue;
        residual_partials<<<RBLOCKS, RTHREADS, 0, s>>>(u, d_b, k_partial, n);
        CHECK(cudaGetLastError());
        switch (mode) {
        case AS_WRITTEN:
        case PINNED:
        case CHECK_EVERY:
            CHECK(cudaMemcpy(h_partial[0], d_partial, pbytes, cudaMemcpyDeviceToHost));
            observe(m, it, h_partial[0]);
            break;
        case ZERO_COPY:
            CHECK(cudaStreamSynchronize(s));
            observe(m, it, h_partial[0]);
            break;
        case ASYNC_LAGGED: /* this iteration's copy queued; the previous one's residual tested */
            CHECK(cudaMemcpyAsync(h_partial[it & 1], d_partial, pbytes, cudaMemcpyDeviceToHost, s));
            CHECK(cudaEventRecord(copied[it & 1], s));
            if (it > 0) {
                CHECK(cudaEventSynchronize(copied[(it - 1) & 1]));
                observe(m, it - 1, h_partial[(it - 1) & 1]);
            }
            break;
        default:
            break;
        }
    }
    if (mode == ASYNC_LAGGED) {
        CHECK(cudaEventSynchronize(copied[(iters - 1) & 1]));
        observe(m, iters - 1, h_partial[(iters - 1) & 1]);
    }
    CHECK(cudaMemcpy(h_u, u, bytes, cudaMemcpyDeviceToHost));
    CHECK(cudaDeviceSynchronize());
    double loop_s = now() - start;
    if (m->last_it != iters - 1) {
        fprintf(stderr, "jacobi_residual: the last residual read is after iteration %d, not %d\n", m->last_it + 1,
                iters);
        exit(1);
    }

    CHECK(cudaFree(d_u[0]));
    CHECK(cudaFree(d_u[1]));
    CHECK(cudaFree(d_b));
    if (d_partial) CHECK(cudaFree(d_partial));
    switch (mode) {
    case AS_WRITTEN:
    case CHECK_EVERY: free(h_partial[0]); break;
    case PINNED:
    case ZERO_COPY: CHECK(cudaFreeHost(h_partial[0])); break;
    case ASYNC_LAGGED:
        CHECK(cudaFreeHost(h_partial[0]));
        CHECK(cudaFreeHost(h_partial[1]));
        CHECK(cudaEventDestroy(copied[0]));
        CHECK(cudaEventDestroy(copied[1]));
        break;
    default:
        break;
    }
    if (s) CHECK(cudaStreamDestroy(s));
    return loop_s;
}

/* The residual kernel's partial sums computed on the host with the same float operations in the same order. */
static void residual_partials_host(const float *u, const float *b, float *partial, int n) {
    float acc[RTHREADS];
    for (int k = 0; k < RBLOCKS; ++k) {
        if (1 + k >= n - 1) { /* a block with no rows: its threads' zeros */
            partial[k] = 0.0f;
            continue;
        }
        for (int t = 0; t < RTHREADS; ++t) {
            acc[t] = 0.0f;
            for (int y = 1 + k; y < n - 1; y += RBLOCKS) {
                const float *row = u + (size_t)y * n, *brow = b + (size_t)y * n;
                for (int x = 1 + t; x < n - 1; x += RTHREADS) {
                    float r = residual_point(row[x - 1], row[x + 1], row[x - n], row[x + n], row[x], brow[x]);
                    acc[t] = fmaf(r, r, acc[t]);
                }
            }
        }
        for (int w = RTHREADS / 2; w > 0; w >>= 1)
            for (int t = 0; t < w; ++t) acc[t] += acc[t + w];
        partial[k] = acc[0];
    }
}

/* The same iterations on the host: the reference for the small check. */
static void reference(int n, int iters, const float *b, float *u_out, Monitor *m) {
    size_t cells = (size_t)n * n;
    float *u = (float *)calloc(cells, sizeof(float)), *un = (float *)calloc(cells, sizeof(float));
    float partial[RBLOCKS];
    if (!u || !un) { fprintf(stderr, "jacobi_residual: malloc failed\n"); exit(1); }
    m->last_it = -1;
    m->converged_at = -1;
    for (int it = 0; it < iters; ++it) {
        for (int y = 1; y < n - 1; ++y)
            for (int x = 1; x < n - 1; ++x) {
                size_t i = (size_t)y * n + x;
                un[i] = jacobi_point(u[i - 1], u[i + 1], u[i - n], u[i + n], b[i]);
            }
        float *t = u; u = un; un = t;
        residual_partials_host(u, b, partial, n);
        observe(m, it, partial);
    }
    memcpy(u_out, u, cells * sizeof(float));
    free(u);
    free(un);
}

/* The residual of an iterate in float64 (an independent check of the kernel's). */
static double residual_f64(const float *u, const float *b, int n) {
    double s = 0.0;
    for (int y = 1; y < n - 1; ++y)
        for (int x = 1; x < n - 1; ++x) {
            size_t i = (size_t)y * n + x;
            double r = (double)b[i] + u[i - 1] + u[i + 1] + u[i - n] + u[i + n] - 4.0 * u[i];
            s += r * r;
        }
    return sqrt(s);
}

static double sum_of(const float *u, size_t cells) {
    double s = 0.0;
    for (size_t i = 0; i < cells; ++i) s += u[i];
    return s;
}

static int close_to(double got, double want, double rel) { return fabs(got - want) <= rel * fabs(want) + 1e-30; }

int main(int argc, char **argv) {
    const char *mode_name = "as_written";
    int n = 2048, iters = 12000, every = 50;
    double tol = 1e-6;
    for (int i = 1; i < argc; i += 2) {
        if (i + 1 >= argc) { fprintf(stderr, "jacobi_residual: option %s needs a value\n", argv[i]); return 2; }
        if (!strcmp(argv[i], "--mode")) mode_name = argv[i + 1];
        else if (!strcmp(argv[i], "--n")) n = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--iters")) iters = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--every")) every = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--tol")) tol = atof(argv[i + 1]);
        else { fprintf(stderr, "jacobi_residual: unknown option %s\n", argv[i]); return 2; }
    }
    int mi = -1;
    for (int k = 0; k < NMODES; ++k)
        if (!strcmp(mode_name, mode_names[k])) mi = k;
    if (mi < 0) {
        fprintf(stderr, "jacobi_residual: --mode: expected as_written, pinned, async_lagged, zero_copy or check_every, "
                        "got %s\n", mode_name);
        return 2;
    }
    if (n < 3 || n > 16384 || every < 1 || every > 1000 || iters < every) {
        fprintf(stderr, "jacobi_residual: --n must be from 3 to 16384, --every from 1 to 1000 and --iters at least "
                        "--every\n");
        return 2;
    }
    enum Mode mode = (enum Mode)mi;

    int dev = 0;
    if (mode == ZERO_COPY) CHECK(cudaSetDeviceFlags(cudaDeviceMapHost)); /* before the context is made */
    CHECK(cudaSetDevice(dev));

    /* Warm-up: one launch of each kernel on scratch buffers (context, module). */
    int sn = 64;
    float *scratch, *scratch_partial;
    CHECK(cudaMalloc(&scratch, 3 * (size_t)sn * sn * sizeof(float)));
    CHECK(cudaMalloc(&scratch_partial, RBLOCKS * sizeof(float)));
    CHECK(cudaMemset(scratch, 0, 3 * (size_t)sn * sn * sizeof(float)));
    jacobi_sweep<<<dim3(sn / 32, sn / 8), dim3(32, 8)>>>(scratch, scratch + (size_t)sn * sn,
                                                         scratch + 2 * (size_t)sn * sn, sn);
    CHECK(cudaGetLastError());
    residual_partials<<<RBLOCKS, RTHREADS>>>(scratch, scratch + 2 * (size_t)sn * sn, scratch_partial, sn);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaFree(scratch));
    CHECK(cudaFree(scratch_partial));

    /* The timed run. */
    size_t cells = (size_t)n * n;
    float *h_b = (float *)malloc(cells * sizeof(float)), *h_u = (float *)malloc(cells * sizeof(float));
    int nlog = iters / every;
    Monitor mon = {every, tol, 0.0, (double *)malloc(nlog * sizeof(double)), 0.0, -1, -1};
    if (!h_b || !h_u || !mon.log) { fprintf(stderr, "jacobi_residual: malloc failed\n"); return 1; }
    make_rhs(h_b, n);
    mon.bnorm = rhs_norm(h_b, n);
    if (!(mon.bnorm > 0.0)) { fprintf(stderr, "jacobi_residual: --n %d has no interior\n", n); return 2; }
    memset(h_u, 0, cells * sizeof(float));
    double loop_s = solve(mode, n, iters, h_b, h_u, &mon);

    double checksum = sum_of(h_u, cells) + mon.last;
    for (int k = 0; k < nlog; ++k) checksum += mon.log[k];
    if (!isfinite(checksum)) {
        fprintf(stderr, "jacobi_residual: checksum is not finite (%g)\n", checksum);
        return 1;
    }
    double rel64 = residual_f64(h_u, h_b, n) / mon.bnorm;
    if (!close_to(mon.last, rel64, 1e-3)) {
        fprintf(stderr, "jacobi_residual: the final relative residual %.9g differs from the host's %.9g\n", mon.last,
                rel64);
        return 1;
    }

    /* Check: the same solver, same mode, on a 130 x 130 grid, against the host reference. */
    int tn = 130, titers = 5 * every + 7, tlog = titers / every;
    size_t tcells = (size_t)tn * tn;
    float *tb = (float *)malloc(tcells * sizeof(float)), *got = (float *)malloc(tcells * sizeof(float)),
          *want = (float *)malloc(tcells * sizeof(float));
    Monitor tgot = {every, tol, 0.0, (double *)malloc(tlog * sizeof(double)), 0.0, -1, -1};
    Monitor twant = {every, tol, 0.0, (double *)malloc(tlog * sizeof(double)), 0.0, -1, -1};
    if (!tb || !got || !want || !tgot.log || !twant.log) { fprintf(stderr, "jacobi_residual: malloc failed\n"); return 1; }
    make_rhs(tb, tn);
    tgot.bnorm = twant.bnorm = rhs_norm(tb, tn);
    solve(mode, tn, titers, tb, got, &tgot);
    reference(tn, titers, tb, want, &twant);
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < tcells; ++i)
        if (!close_to(got[i], want[i], 1e-6)) {
            if (!bad) first = i;
            ++bad;
        }
    int bad_log = !close_to(tgot.last, twant.last, 1e-6);
    for (int k = 0; k < tlog; ++k) bad_log += !close_to(tgot.log[k], twant.log[k], 1e-6);
    if (bad || bad_log) {
        fprintf(stderr, "jacobi_residual: %s on a %dx%d grid differs from the host reference: %zu cells (first at %zu: "
                        "%.9g, expected %.9g), %d of %d residuals (final %.12g, expected %.12g)\n", mode_name, tn, tn,
                bad, first, got[first], want[first], bad_log, tlog + 1, tgot.last, twant.last);
        return 1;
    }
    free(tb);
    free(got);
    free(want);
    free(tgot.log);
    free(twant.log);
    free(h_b);
    free(h_u);
    free(mon.log);

    printf("{\"program\": \"jacobi_residual\", \"mode\": \"%s\", \"loop_s\": %.6f, \"checksum\": %.17g}\n", mode_name,
           loop_s, checksum);
    return 0;
}

/* A 2-D explicit heat/diffusion simulation as a C programmer writes it, with a host-side boundary model and periodic
 * output: an 8192 x 8192 float grid on the GPU (256 MiB, double-buffered), 400 steps. Each step the four walls (the
 * first and last rows, the first and last columns) are copied to host buffers (cudaMemcpy for the rows, cudaMemcpy2D
 * for the columns), the host applies the boundary model to every wall cell in a loop (a convective, Robin-type
 * condition: each wall cell relaxes halfway towards an ambient temperature that travels along the walls and warms with
 * time, read from a table made once), the walls are copied back, and a kernel takes one explicit diffusion step
 * (zero flux through the walls; the model sets them). Every 25 steps the whole grid is copied to a host buffer and
 * the host writes an output frame: the grid's sum, its maximum and a coarse 64 x 64 downsample (block means), kept in
 * a host array of frames.
 *
 *     halo_stencil [--mode MODE] [--n 8192] [--steps 400] [--every 25]
 *
 * Modes (the same grid, the same frames, the same checksum):
 *   as_written       malloc'd wall and frame buffers; synchronous cudaMemcpy / cudaMemcpy2D on the default stream
 *                    (the program as its author wrote it)
 *   pinned           as as_written, but the wall buffers and the frame buffer come from cudaMallocHost; the same
 *                    synchronous calls
 *   async_output     pinned buffers; two created non-blocking streams: the walls copied with cudaMemcpyAsync /
 *                    cudaMemcpy2DAsync on the compute stream (cudaStreamSynchronize before the host's model), and
 *                    each output frame is a device-to-device snapshot of the grid on the compute stream, downloaded
 *                    with cudaMemcpyAsync on the second stream after an event while the next steps go on; the host
 *                    writes the frame once the download's event has completed (polled each step with
 *                    cudaEventQuery, waited for before the next snapshot and after the last step)
 *   boundary_on_gpu  the boundary model as a kernel (the ambient table uploaded once), no per-step wall copies; the
 *                    output frames as in as_written
 *   managed          both grids from cudaMallocManaged: the host applies the model to the walls in place and reads
 *                    the whole grid in place for each frame, after cudaDeviceSynchronize; no copies
 * The timed loop (loop_s) runs from the upload of the initial grid (or, in managed, the first kernel's faults) to the
 * last frame written, with cudaDeviceSynchronize before and after; allocation, the host's initialisation of the grid,
 * the ambient table and a warm-up launch of each kernel come before it.
 *
 * The boundary model computes 0.5f * (u + (table[k] + warm)) on the host and on the GPU (one __host__ __device__
 * function; no product feeds a sum, so nothing is contracted into a multiply-add and both give the same floats);
 * the step number's phase and warming are computed on the host and passed to the kernel. After the timed run the
 * same simulation, in the same mode and through the same code, runs on a 128 x 128 grid for the same steps, and its
 * frames and final grid are compared with a host reference (to 1e-5 relative: the diffusion kernel may use
 * multiply-adds); a mismatch prints to stderr and exits 1.
 *
 * Checksum: over the frames, the float64 sum of each frame's grid sum, its maximum and its downsample weighted by
 * column ((column + 1) / 64). Prints one JSON line: program, mode, loop_s, checksum. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "../apps/cuda_check.h"  // CHECK(call)

#define ALPHA 0.2f   /* diffusion number of the explicit step (stable below 0.25) */
#define TABLE 4096   /* entries of the ambient temperature table (a power of two) */
#define DOWN 64      /* side of the coarse downsample in each output frame */

enum Wall { TOP, BOTTOM, LEFT, RIGHT };
enum Mode { AS_WRITTEN, PINNED, ASYNC_OUTPUT, BOUNDARY_ON_GPU, MANAGED, NMODES };
static const char *mode_names[NMODES] = {"as_written", "pinned", "async_output", "boundary_on_gpu", "managed"};

/* One output frame: what the host writes out every `every` steps. */
typedef struct {
    double sum;
    float max;
    float down[DOWN * DOWN];
} Frame;

/* The ambient temperature outside cell i of a wall at a step (phase and warming of the step computed by the host). */
__host__ __device__ static inline float ambient(const float *table, int wall, int i, int phase, float warm) {
    return table[(i + phase + wall * (TABLE / 4)) & (TABLE - 1)] + warm;
}

/* The convective (Robin-type) wall: the cell relaxes halfway towards the temperature outside it. */
__host__ __device__ static inline float wall_model(float u, float outside) { return 0.5f * (u + outside); }

static int phase_of(int step) { return (step * 7) % TABLE; }
static float warm_of(int step) { return 0.001f * (float)step; }

/* One explicit diffusion step over the whole grid; a wall cell's missing neighbour is the cell itself (no flux). */
__global__ void heat_step(const float *u, float *v, int n, float alpha) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= n || y >= n) return;
    size_t i = (size_t)y * n + x;
    float c = u[i];
    float l = x > 0 ? u[i - 1] : c, r = x < n - 1 ? u[i + 1] : c;
    float d = y > 0 ? u[i - n] : c, t = y < n - 1 ? u[i + n] : c;
    v[i] = c + alpha * (l + r + d + t - 4.0f * c);
}

/* The boundary model on the GPU: the rows' inner cells and the columns' every cell (the corners belong to the
 * columns), as the host does it. */
__global__ void boundary(float *g, int n, int phase, float warm, const float *table) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        if (i > 0 && i < n - 1) {
            g[i] = wall_model(g[i], ambient(table, TOP, i, phase, warm));
            size_t b = (size_t)(n - 1) * n + i;
            g[b] = wall_model(g[b], ambient(table, BOTTOM, i, phase, warm));
        }
        size_t l = (size_t)i * n;
        g[l] = wall_model(g[l], ambient(table, LEFT, i, phase, warm));
        g[l + n - 1] = wall_model(g[l + n - 1], ambient(table, RIGHT, i, phase, warm));
    }
}

/* The boundary model on the host: top and bottom hold the rows (n floats), left and right the columns (n floats,
 * col_stride apart: 1 in the host buffers, n in the grid itself). */
static void boundary_host(float *top, float *bottom, float *left, float *right, size_t col_stride, int n, int step,
                          const float *table) {
    int phase = phase_of(step);
    float warm = warm_of(step);
    for (int x = 1; x < n - 1; ++x) {
        top[x] = wall_model(top[x], ambient(table, TOP, x, phase, warm));
        bottom[x] = wall_model(bottom[x], ambient(table, BOTTOM, x, phase, warm));
    }
    for (int y = 0; y < n; ++y) {
        left[y * col_stride] = wall_model(left[y * col_stride], ambient(table, LEFT, y, phase, warm));
        right[y * col_stride] = wall_model(right[y * col_stride], ambient(table, RIGHT, y, phase, warm));
    }
}

static void heat_step_host(const float *u, float *v, int n, float alpha) {
    for (int y = 0; y < n; ++y)
        for (int x = 0; x < n; ++x) {
            size_t i = (size_t)y * n + x;
            float c = u[i];
            float l = x > 0 ? u[i - 1] : c, r = x < n - 1 ? u[i + 1] : c;
            float d = y > 0 ? u[i - n] : c, t = y < n - 1 ? u[i + n] : c;
            v[i] = c + alpha * (l + r + d + t - 4.0f * c);
        }
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void init_grid(float *g, int n) {
    for (int y = 0; y < n; ++y)
        for (int x = 0; x < n; ++x) g[(size_t)y * n + x] = 0.5f + (float)((x * 7 + y * 13) % 101) * 0.005f;
}

static void make_table(float *table) {
    for (int k = 0; k < TABLE; ++k) table[k] = (float)(1.0 + 0.5 * sin(6.283185307179586 * k / TABLE));
}

/* Write one output frame from the grid g (n x n floats on the host): sum, maximum, 64 x 64 block means. */
static void write_frame(const float *g, int n, Frame *f) {
    int bs = n / DOWN;
    double blk[DOWN * DOWN];
    memset(blk, 0, sizeof blk);
    float mx = g[0];
    for (int y = 0; y < n; ++y) {
        const float *row = g + (size_t)y * n;
        double *brow = blk + (y / bs) * DOWN;
        for (int bx = 0; bx < DOWN; ++bx) {
            float s = 0.0f;
            for (int x = bx * bs; x < (bx + 1) * bs; ++x) {
                float v = row[x];
                s += v;
                if (v > mx) mx = v;
            }
            brow[bx] += s;
        }
    }
    double sum = 0.0;
    for (int k = 0; k < DOWN * DOWN; ++k) {
        sum += blk[k];
        f->down[k] = (float)(blk[k] / ((double)bs * bs));
    }
    f->sum = sum;
    f->max = mx;
}

/* The simulation on a grid of side n in the given mode. Returns the time of the step loop; frames (steps / every of
 * them) get the output frames, and out (n*n floats, if not NULL) the final grid. */
static double simulate(enum Mode mode, int n, int steps, int every, const float *table, Frame *frames, float *out) {
    size_t cells = (size_t)n * n, bytes = cells * sizeof(float), edge = (size_t)n * sizeof(float);
    int pinned = mode == PINNED || mode == ASYNC_OUTPUT, managed = mode == MANAGED;
    int walls_copied = mode == AS_WRITTEN || mode == PINNED || mode == ASYNC_OUTPUT;

    float *a, *b, *frame = 0, *top = 0, *bottom = 0, *left = 0, *right = 0, *snap = 0, *d_table = 0;
    cudaStream_t s = 0, s_out = 0;
    cudaEvent_t snapped = 0, written = 0;
    if (managed) {
        CHECK(cudaMallocManaged(&a, bytes, cudaMemAttachGlobal));
        CHECK(cudaMallocManaged(&b, bytes, cudaMemAttachGlobal));
        init_grid(a, n);
    } else {
        CHECK(cudaMalloc(&a, bytes));
        CHECK(cudaMalloc(&b, bytes));
        if (pinned) {
            CHECK(cudaMallocHost(&frame, bytes));
        } else {
            frame = (float *)malloc(bytes);
            if (!frame) { fprintf(stderr, "halo_stencil: malloc failed\n"); exit(1); }
        }
        init_grid(frame, n); /* the initial grid is made in the frame buffer and uploaded in the loop */
    }
    if (walls_copied) {
        if (pinned) {
            CHECK(cudaMallocHost(&top, edge));
            CHECK(cudaMallocHost(&bottom, edge));
            CHECK(cudaMallocHost(&left, edge));
            CHECK(cudaMallocHost(&right, edge));
        } else {
            top = (float *)malloc(edge);
            bottom = (float *)malloc(edge);
            left = (float *)malloc(edge);
            right = (float *)malloc(edge);
            if (!top || !bottom || !left || !right) { fprintf(stderr, "halo_stencil: malloc failed\n"); exit(1); }
        }
    }
    if (mode == ASYNC_OUTPUT) {
        CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
        CHECK(cudaStreamCreateWithFlags(&s_out, cudaStreamNonBlocking));
        CHECK(cudaEventCreateWithFlags(&snapped, cudaEventDisableTiming));
        CHECK(cudaEventCreateWithFlags(&written, cudaEventDisableTiming));
        CHECK(cudaMalloc(&snap, bytes));
    }
    if (mode == BOUNDARY_ON_GPU) {
        CHECK(cudaMalloc(&d_table, TABLE * sizeof(float)));
        CHECK(cudaMemcpy(d_table, table, TABLE * sizeof(float), cudaMemcpyHostToDevice));
    }

    dim3 block(32, 8), grid((n + 31) / 32, (n + 7) / 8);
    int bblock = 256, bgrid = (n + bblock - 1) / bblock;
    float *cur = a, *next = b;
    int pending = -1; /* async_output: the frame whose download is in flight */
    CHECK(cudaDeviceSynchronize());
    double start = now();
    if (mode == ASYNC_OUTPUT) CHECK(cudaMemcpyAsync(cur, frame, bytes, cudaMemcpyHostToDevice, s));
    else if (!managed) CHECK(cudaMemcpy(cur, frame, bytes, cudaMemcpyHostToDevice));
    for (int step = 0; step < steps; ++step) {
        /* the boundary model */
        if (mode == AS_WRITTEN || mode == PINNED) {
            CHECK(cudaMemcpy(top, cur, edge, cudaMemcpyDeviceToHost));
            CHECK(cudaMemcpy(bottom, cur + (size_t)(n - 1) * n, edge, cudaMemcpyDeviceToHost));
            CHECK(cudaMemcpy2D(left, sizeof(float), cur, edge, sizeof(float), n, cudaMemcpyDeviceToHost));
            CHECK(cudaMemcpy2D(right, sizeof(float), cur + n - 1, edge, sizeof(float), n, cudaMemcpyDeviceToHost));
            boundary_host(top, bottom, left, right, 1, n, step, table);
            CHECK(cudaMemcpy(cur, top, edge, cudaMemcpyHostToDevice));
            CHECK(cudaMemcpy(cur + (size_t)(n - 1) * n, bottom, edge, cudaMemcpyHostToDevice));
            CHECK(cudaMemcpy2D(cur, edge, left, sizeof(float), sizeof(float), n, cudaMemcpyHostToDevice));
            CHECK(cudaMemcpy2D(cur + n - 1, edge, right, sizeof(float), sizeof(float), n, cudaMemcpyHostToDevice));
        } else if (mode == ASYNC_OUTPUT) {
            CHECK(cudaMemcpyAsync(top, cur, edge, cudaMemcpyDeviceToHost, s));
            CHECK(cudaMemcpyAsync(bottom, cur + (size_t)(n - 1) * n, edge, cudaMemcpyDeviceToHost, s));
            CHECK(cudaMemcpy2DAsync(left, sizeof(float), cur, edge, sizeof(float), n, cudaMemcpyDeviceToHost, s));
            CHECK(cudaMemcpy2DAsync(right, sizeof(float), cur + n - 1, edge, sizeof(float), n,
                                    cudaMemcpyDeviceToHost, s));
            CHECK(cudaStreamSynchronize(s));
            boundary_host(top, bottom, left, right, 1, n, step, table);
            CHECK(cudaMemcpyAsync(cur, top, edge, cudaMemcpyHostToDevice, s));
            CHECK(cudaMemcpyAsync(cur + (size_t)(n - 1) * n, bottom, edge, cudaMemcpyHostToDevice, s));
            CHECK(cudaMemcpy2DAsync(cur, edge, left, sizeof(float), sizeof(float), n, cudaMemcpyHostToDevice, s));
            CHECK(cudaMemcpy2DAsync(cur + n - 1, edge, right, sizeof(float), sizeof(float), n,
                                    cudaMemcpyHostToDevice, s));
        } else if (mode == BOUNDARY_ON_GPU) {
            boundary<<<bgrid, bblock>>>(cur, n, phase_of(step), warm_of(step), d_table);
            CHECK(cudaGetLastError());
        } else { /* MANAGED: the walls touched in place, no kernel in flight */
            CHECK(cudaDeviceSynchronize());
            boundary_host(cur, cur + (size_t)(n - 1) * n, cur, cur + n - 1, (size_t)n, n, step, table);
        }

        /* the diffusion step */
        heat_step<<<grid, block, 0, s>>>(cur, next, n, ALPHA);
        CHECK(cudaGetLastError());
        float *t = cur; cur = next; next = t;

        if (mode == ASYNC_OUTPUT && pending >= 0) { /* write the frame whose download has finished */
            cudaError_t q = cudaEventQuery(written);
            if (q == cudaSuccess) {
                write_frame(frame, n, &frames[pending]);
                pending = -1;
            } else if (q != cudaErrorNotReady) {
                CHECK(q);
            }
        }
        if ((step + 1) % every) continue;

        /* an output frame */
        int k = (step + 1) / every - 1;
        if (mode == ASYNC_OUTPUT) {
            if (pending >= 0) { /* the frame buffer and the snapshot are still in use */
                CHECK(cudaEventSynchronize(written));
                write_frame(frame, n, &frames[pending]);
                pending = -1;
            }
            CHECK(cudaMemcpyAsync(snap, cur, bytes, cudaMemcpyDeviceToDevice, s));
            CHECK(cudaEventRecord(snapped, s));
            CHECK(cudaStreamWaitEvent(s_out, snapped, 0));
            CHECK(cudaMemcpyAsync(frame, snap, bytes, cudaMemcpyDeviceToHost, s_out));
            CHECK(cudaEventRecord(written, s_out));
            pending = k;
        } else if (managed) {
            CHECK(cudaDeviceSynchronize());
            write_frame(cur, n, &frames[k]);
        } else {
            CHECK(cudaMemcpy(frame, cur, bytes, cudaMemcpyDeviceToHost));
            write_frame(frame, n, &frames[k]);
        }
    }
    if (pending >= 0) {
        CHECK(cudaEventSynchronize(written));
        write_frame(frame, n, &frames[pending]);
    }
    CHECK(cudaDeviceSynchronize());
    double loop_s = now() - start;

    if (out) {
        if (managed) memcpy(out, cur, bytes);
        else CHECK(cudaMemcpy(out, cur, bytes, cudaMemcpyDeviceToHost));
    }

    CHECK(cudaFree(a));
    CHECK(cudaFree(b));
    if (!managed) {
        if (pinned) CHECK(cudaFreeHost(frame));
        else free(frame);
    }
    if (walls_copied) {
        if (pinned) {
            CHECK(cudaFreeHost(top));
            CHECK(cudaFreeHost(bottom));
            CHECK(cudaFreeHost(left));
            CHECK(cudaFreeHost(right));
        } else {
            free(top);
            free(bottom);
            free(left);
            free(right);
        }
    }
    if (mode == ASYNC_OUTPUT) {
        CHECK(cudaFree(snap));
        CHECK(cudaEventDestroy(snapped));
        CHECK(cudaEventDestroy(written));
        CHECK(cudaStreamDestroy(s));
        CHECK(cudaStreamDestroy(s_out));
    }
    if (d_table) CHECK(cudaFree(d_table));
    return loop_s;
}

/* The same steps on the host: the reference for the small check. */
static void reference(int n, int steps, int every, const float *table, Frame *frames, float *out) {
    size_t cells = (size_t)n * n;
    float *cur = (float *)malloc(cells * sizeof(float)), *next = (float *)malloc(cells * sizeof(float));
    if (!cur || !next) { fprintf(stderr, "halo_stencil: malloc failed\n"); exit(1); }
    init_grid(cur, n);
    for (int step = 0; step < steps; ++step) {
        boundary_host(cur, cur + (size_t)(n - 1) * n, cur, cur + n - 1, (size_t)n, n, step, table);
        heat_step_host(cur, next, n, ALPHA);
        float *t = cur; cur = next; next = t;
        if ((step + 1) % every == 0) write_frame(cur, n, &frames[(step + 1) / every - 1]);
    }
    memcpy(out, cur, cells * sizeof(float));
    free(cur);
    free(next);
}

static double checksum_of(const Frame *frames, int nframes) {
    double c = 0.0;
    for (int f = 0; f < nframes; ++f) {
        c += frames[f].sum + frames[f].max;
        for (int k = 0; k < DOWN * DOWN; ++k) c += frames[f].down[k] * ((k % DOWN) + 1) / (double)DOWN;
    }
    return c;
}

static int close_to(double got, double want) { return fabs(got - want) <= 1e-5 * fabs(want) + 1e-6; }

int main(int argc, char **argv) {
    const char *mode_name = "as_written";
    int n = 8192, steps = 400, every = 25;
    for (int i = 1; i < argc; i += 2) {
        if (i + 1 >= argc) { fprintf(stderr, "halo_stencil: option %s needs a value\n", argv[i]); return 2; }
        if (!strcmp(argv[i], "--mode")) mode_name = argv[i + 1];
        else if (!strcmp(argv[i], "--n")) n = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--steps")) steps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--every")) every = atoi(argv[i + 1]);
        else { fprintf(stderr, "halo_stencil: unknown option %s\n", argv[i]); return 2; }
    }
    int m = -1;
    for (int k = 0; k < NMODES; ++k)
        if (!strcmp(mode_name, mode_names[k])) m = k;
    if (m < 0) {
        fprintf(stderr, "halo_stencil: --mode: expected as_written, pinned, async_output, boundary_on_gpu or managed, "
                        "got %s\n", mode_name);
        return 2;
    }
    if (n < 128 || n % DOWN || n > 16384 || every < 1 || steps < every) {
        fprintf(stderr, "halo_stencil: --n must be a multiple of %d from 128 to 16384, --every at least 1 and --steps "
                        "at least --every\n", DOWN);
        return 2;
    }
    enum Mode mode = (enum Mode)m;
    int nframes = steps / every;

    int dev = 0;
    CHECK(cudaSetDevice(dev));
    float table[TABLE];
    make_table(table);

    /* Warm-up: one launch of each kernel on a scratch buffer (context, module). */
    float *scratch, *scratch_table;
    int sn = 256;
    CHECK(cudaMalloc(&scratch, 2 * (size_t)sn * sn * sizeof(float)));
    CHECK(cudaMalloc(&scratch_table, TABLE * sizeof(float)));
    CHECK(cudaMemset(scratch, 0, 2 * (size_t)sn * sn * sizeof(float)));
    CHECK(cudaMemset(scratch_table, 0, TABLE * sizeof(float)));
    boundary<<<1, 256>>>(scratch, sn, 0, 0.0f, scratch_table);
    CHECK(cudaGetLastError());
    heat_step<<<dim3(sn / 32, sn / 8), dim3(32, 8)>>>(scratch, scratch + (size_t)sn * sn, sn, ALPHA);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaFree(scratch));
    CHECK(cudaFree(scratch_table));

    Frame *frames = (Frame *)malloc(nframes * sizeof(Frame));
    if (!frames) { fprintf(stderr, "halo_stencil: malloc failed\n"); return 1; }
    double loop_s = simulate(mode, n, steps, every, table, frames, 0);
    double checksum = checksum_of(frames, nframes);
    if (!isfinite(checksum)) {
        fprintf(stderr, "halo_stencil: checksum is not finite (%g)\n", checksum);
        return 1;
    }

    /* Check: the same simulation, same mode, on a 128 x 128 grid, against the host reference. */
    int tn = 128;
    size_t tcells = (size_t)tn * tn;
    float *got = (float *)malloc(tcells * sizeof(float)), *want = (float *)malloc(tcells * sizeof(float));
    Frame *tgot = (Frame *)malloc(nframes * sizeof(Frame)), *twant = (Frame *)malloc(nframes * sizeof(Frame));
    if (!got || !want || !tgot || !twant) { fprintf(stderr, "halo_stencil: malloc failed\n"); return 1; }
    simulate(mode, tn, steps, every, table, tgot, got);
    reference(tn, steps, every, table, twant, want);
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < tcells; ++i)
        if (!close_to(got[i], want[i])) {
            if (!bad) first = i;
            ++bad;
        }
    int bad_frames = 0;
    for (int f = 0; f < nframes; ++f) {
        int ok = close_to(tgot[f].sum, twant[f].sum) && close_to(tgot[f].max, twant[f].max);
        for (int k = 0; k < DOWN * DOWN; ++k) ok = ok && close_to(tgot[f].down[k], twant[f].down[k]);
        bad_frames += !ok;
    }
    if (bad || bad_frames) {
        fprintf(stderr, "halo_stencil: %s on a %dx%d grid differs from the host reference: %zu cells (first at %zu: "
                        "%.9g, expected %.9g), %d of %d frames\n", mode_name, tn, tn, bad, first, got[first],
                want[first], bad_frames, nframes);
        return 1;
    }
    free(got);
    free(want);
    free(tgot);
    free(twant);
    free(frames);

    printf("{\"program\": \"halo_stencil\", \"mode\": \"%s\", \"loop_s\": %.6f, \"checksum\": %.17g}\n", mode_name,
           loop_s, checksum);
    return 0;
}

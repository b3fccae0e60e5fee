/* The staging ring's engine: pageable host memory moved to or from the GPU through pinned slots by
 * native threads, so that no copy waits for Python's lock (umprof/measure/staging_ring.py drives it).
 *
 * A ring has `lanes` threads, each with `depth` pinned slots of `slot_bytes`, its own stream (a
 * blocking one: its copies wait for the legacy stream's earlier work, as cudaMemcpy's do) and one event
 * a slot. A transfer is cut into chunks that the lanes take in turn from a shared counter, so a slow
 * lane delays its own chunks alone:
 *   H2D: a lane waits until its next slot's last DMA has landed, copies the chunk into it and starts
 *        its DMA on the lane's stream (no hand-off to another thread);
 *   D2H: a lane starts the DMAs of its next `depth` chunks into its slots, then, oldest first, waits
 *        for each, copies it out and starts its next chunk's DMA in that slot;
 *   COPY: the host's parallel copy (the ring's host-side ceiling): lane i copies the i-th of `lanes`
 *        contiguous slices.
 * Each transfer comes with its chunk size (at most a slot's) and whether it runs as lane 0 on the calling
 * thread, as the caller's rule chooses (staging_ring.py's RingShape.transfer): for small transfers, waking
 * threads on other cores costs more than they save, and their reads leave the buffer's lines in those
 * cores' caches, which the application's next write of it must take back.
 * The call returns once every byte has landed. The CUDA driver's functions come in a table from the
 * caller (libcuda's, or a stand-in in the tests), so this file needs no CUDA header or library.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int (*ctx_get_t)(void **ctx);
typedef int (*ctx_set_t)(void *ctx);
typedef int (*stream_create_t)(void **stream, unsigned flags);
typedef int (*handle_t)(void *handle); /* stream/event destroy, stream/event synchronize */
typedef int (*event_create_t)(void **event, unsigned flags);
typedef int (*event_record_t)(void *event, void *stream);
typedef int (*htod_t)(uint64_t dst, const void *src, size_t n, void *stream);
typedef int (*dtoh_t)(void *dst, uint64_t src, size_t n, void *stream);

/* The table's order: what staging_ring.py's DRIVER_FUNCTIONS names. */
typedef struct {
    ctx_get_t ctx_get;
    ctx_set_t ctx_set;
    stream_create_t stream_create;
    handle_t stream_destroy;
    handle_t stream_sync;
    event_create_t event_create;
    handle_t event_destroy;
    event_record_t event_record;
    handle_t event_sync;
    htod_t htod;
    dtoh_t dtoh;
} driver_t;

enum { H2D = 0, D2H = 1, COPY = 2 };
enum { LOG_FIELDS = 4 }; /* per chunk: copy start, copy end, DMA issued (s from the call's start), lane */
#define CU_EVENT_DISABLE_TIMING 2u
#define ERR_SETUP 999 /* not a CUDA error: the ring could not be built */

typedef struct ring ring_t;
typedef struct {
    ring_t *r;
    int lane;
} lane_arg_t;

struct ring {
    driver_t d;
    void *ctx;
    int lanes, depth;
    size_t slot_bytes;
    unsigned char **slots; /* lanes * depth, the caller's pinned memory */
    void **streams;        /* lanes */
    void **events;         /* lanes * depth */
    cpu_set_t cpus;
    int pin, dma; /* dma: it has slots, streams and events (not the host copy alone) */
    pthread_t *threads;
    lane_arg_t *args;
    int started;
    pthread_mutex_t mu;
    pthread_cond_t go, done;
    unsigned long generation;
    int running, quit;
    /* the job */
    int kind, on_caller; /* on_caller: this transfer runs on the calling thread (logged as lane -1) */
    uint64_t dev;
    unsigned char *host, *other;
    size_t n, chunk, nchunks, next; /* chunk: this transfer's, at most slot_bytes */
    int err;
    double *log;
    struct timespec t0;
};

static double since(const struct timespec *t0) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) + 1e-9 * (double)(t.tv_nsec - t0->tv_nsec);
}

static void fail(ring_t *r, int rc) {
    int zero = 0;
    if (rc) __atomic_compare_exchange_n(&r->err, &zero, rc, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}

static int failed(ring_t *r) { return __atomic_load_n(&r->err, __ATOMIC_SEQ_CST) != 0; }

static size_t take(ring_t *r) { return __atomic_fetch_add(&r->next, 1, __ATOMIC_SEQ_CST); }

static void note(ring_t *r, size_t j, int field, double value) {
    if (r->log) r->log[j * LOG_FIELDS + field] = value;
}

static size_t chunk_len(const ring_t *r, size_t j) {
    size_t off = j * r->chunk;
    return r->n - off < r->chunk ? r->n - off : r->chunk;
}

/* The lane a chunk's log names: -1 for the calling thread. */
static double logged_lane(const ring_t *r, int lane) { return r->on_caller ? -1 : lane; }

static void lane_h2d(ring_t *r, int lane) {
    int used[64] = {0};
    unsigned k = 0;
    void *stream = r->streams[lane];
    for (;;) {
        if (failed(r)) break;
        size_t j = take(r);
        if (j >= r->nchunks) break;
        int i = (int)(k++ % (unsigned)r->depth), s = lane * r->depth + i; /* the lane's i-th slot */
        if (used[i]) { /* its last DMA must have read the slot */
            int rc = r->d.event_sync(r->events[s]);
            if (rc) { fail(r, rc); break; }
        }
        size_t off = j * r->chunk, len = chunk_len(r, j);
        note(r, j, 0, since(&r->t0));
        memcpy(r->slots[s], r->host + off, len);
        note(r, j, 1, since(&r->t0));
        int rc = r->d.htod(r->dev + off, r->slots[s], len, stream);
        if (!rc) rc = r->d.event_record(r->events[s], stream);
        note(r, j, 2, since(&r->t0));
        note(r, j, 3, logged_lane(r, lane));
        used[i] = 1;
        if (rc) { fail(r, rc); break; }
    }
    fail(r, r->d.stream_sync(stream)); /* always: the slots are idle when the call returns */
}

/* Starts the DMA of chunk j into slot s on the lane's stream, and the slot's event after it; 0, or the error. */
static int start_d2h(ring_t *r, size_t j, int s, void *stream) {
    int rc = r->d.dtoh(r->slots[s], r->dev + j * r->chunk, chunk_len(r, j), stream);
    if (!rc) rc = r->d.event_record(r->events[s], stream);
    note(r, j, 2, since(&r->t0));
    return rc;
}

static void lane_d2h(ring_t *r, int lane) {
    size_t fifo_j[64]; /* the lane's chunks in flight, oldest first, and their slots */
    int fifo_s[64], head = 0, count = 0, rc = 0;
    void *stream = r->streams[lane];
    for (int k = 0; k < r->depth && !rc && !failed(r); k++) { /* DMAs into every slot of the lane run ahead */
        size_t j = take(r);
        if (j >= r->nchunks) break;
        rc = start_d2h(r, j, lane * r->depth + k, stream);
        fifo_j[count] = j;
        fifo_s[count++] = lane * r->depth + k;
    }
    while (!rc && count && !failed(r)) { /* the oldest, once landed, is copied out; its slot takes the next chunk */
        size_t j = fifo_j[head];
        int s = fifo_s[head];
        head = (head + 1) % 64;
        count--;
        rc = r->d.event_sync(r->events[s]);
        if (rc) break;
        note(r, j, 0, since(&r->t0));
        memcpy(r->host + j * r->chunk, r->slots[s], chunk_len(r, j));
        note(r, j, 1, since(&r->t0));
        note(r, j, 3, logged_lane(r, lane));
        j = take(r);
        if (j >= r->nchunks) continue;
        rc = start_d2h(r, j, s, stream);
        fifo_j[(head + count) % 64] = j;
        fifo_s[(head + count++) % 64] = s;
    }
    fail(r, rc);
    fail(r, r->d.stream_sync(stream)); /* always: the slots are idle when the call returns */
}

static void lane_copy(ring_t *r, int lane) {
    size_t step = (r->n + (size_t)r->lanes - 1) / (size_t)r->lanes;
    size_t a = (size_t)lane * step;
    if (a >= r->n) return;
    size_t len = r->n - a < step ? r->n - a : step;
    memcpy(r->other + a, r->host + a, len);
}

static void *lane_main(void *p) {
    lane_arg_t *arg = (lane_arg_t *)p;
    ring_t *r = arg->r;
    unsigned long seen = 0;
    int bound = 0;
    if (r->pin) pthread_setaffinity_np(pthread_self(), sizeof(cpu_set_t), &r->cpus);
    pthread_mutex_lock(&r->mu);
    for (;;) {
        while (r->generation == seen && !r->quit) pthread_cond_wait(&r->go, &r->mu);
        if (r->quit) break;
        seen = r->generation;
        pthread_mutex_unlock(&r->mu);
        if (r->kind == COPY) {
            lane_copy(r, arg->lane);
        } else {
            int rc = bound ? 0 : r->d.ctx_set(r->ctx); /* the caller's context, current here too */
            bound = !rc;
            if (rc) fail(r, rc);
            else if (r->kind == H2D) lane_h2d(r, arg->lane);
            else lane_d2h(r, arg->lane);
        }
        pthread_mutex_lock(&r->mu);
        if (--r->running == 0) pthread_cond_signal(&r->done);
    }
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

void umprof_ring_close(ring_t *r);

/* A ring over the caller's `lanes * depth` pinned slots of `slot_bytes` (NULL, and `table` NULL: a ring
 * for COPY alone), its threads pinned to `cpus` (none: not pinned). The caller's CUDA context must be
 * current where there are slots. 0, or the error. */
int umprof_ring_open(const void *const *table, int lanes, int depth, size_t slot_bytes, unsigned char **slots,
                     const int *cpus, int ncpus, ring_t **out) {
    *out = NULL;
    if (lanes < 1 || depth < 1 || depth > 64 || slot_bytes == 0 || (slots && !table)) return ERR_SETUP;
    ring_t *r = calloc(1, sizeof(ring_t));
    if (!r) return ERR_SETUP;
    if (table) memcpy(&r->d, table, sizeof(driver_t));
    r->lanes = lanes;
    r->depth = depth;
    r->slot_bytes = slot_bytes;
    r->slots = malloc(sizeof(void *) * (size_t)(lanes * depth));
    r->streams = calloc((size_t)lanes, sizeof(void *));
    r->events = calloc((size_t)(lanes * depth), sizeof(void *));
    r->threads = calloc((size_t)lanes, sizeof(pthread_t));
    r->args = calloc((size_t)lanes, sizeof(lane_arg_t));
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->go, NULL);
    pthread_cond_init(&r->done, NULL);
    if (!r->slots || !r->streams || !r->events || !r->threads || !r->args) {
        umprof_ring_close(r);
        return ERR_SETUP;
    }
    CPU_ZERO(&r->cpus);
    for (int i = 0; i < ncpus; i++)
        if (cpus[i] >= 0 && cpus[i] < CPU_SETSIZE) CPU_SET(cpus[i], &r->cpus); /* a set holds CPU_SETSIZE */
    r->pin = CPU_COUNT(&r->cpus) > 0;
    int rc = 0;
    if (slots) { /* without slots (and a table): a ring for the host's parallel copy alone */
        memcpy(r->slots, slots, sizeof(void *) * (size_t)(lanes * depth));
        r->dma = 1;
        rc = r->d.ctx_get(&r->ctx);
        for (int i = 0; !rc && i < lanes; i++) rc = r->d.stream_create(&r->streams[i], 0);
        for (int i = 0; !rc && i < lanes * depth; i++) rc = r->d.event_create(&r->events[i], CU_EVENT_DISABLE_TIMING);
    }
    for (int i = 0; !rc && i < lanes; i++) {
        r->args[i].r = r;
        r->args[i].lane = i;
        if (pthread_create(&r->threads[i], NULL, lane_main, &r->args[i])) rc = ERR_SETUP;
        else r->started++;
    }
    if (rc) {
        umprof_ring_close(r);
        return rc;
    }
    *out = r;
    return 0;
}

/* Move `n` bytes: H2D (device `dev` <- `host`), D2H (`host` <- device `dev`) in chunks of `chunk` bytes
 * (at most a slot's), on the calling thread where `on_caller`; or COPY (`other` <- `host`, the host's
 * parallel copy, in one slice a lane). `log`: NULL, or `LOG_FIELDS` doubles for each chunk. 0, or the
 * first error. */
int umprof_ring_run(ring_t *r, int kind, uint64_t dev, unsigned char *host, unsigned char *other, size_t n,
                    size_t chunk, int on_caller, double *log) {
    if (n == 0) return 0;
    if (kind != COPY && (!r->dma || chunk == 0 || chunk > r->slot_bytes))
        return ERR_SETUP; /* a ring without slots copies on the host alone; a chunk fits a slot */
    r->kind = kind;
    r->dev = dev;
    r->host = host;
    r->other = other;
    r->n = n;
    r->chunk = kind == COPY ? n : chunk;
    r->nchunks = (n + r->chunk - 1) / r->chunk;
    r->next = 0;
    r->err = 0;
    r->log = log;
    clock_gettime(CLOCK_MONOTONIC, &r->t0);
    r->on_caller = kind != COPY && on_caller;
    if (r->on_caller) { /* lane 0's work on the calling thread, which a hand-off would only delay */
        if (kind == H2D) lane_h2d(r, 0);
        else lane_d2h(r, 0);
        return r->err;
    }
    pthread_mutex_lock(&r->mu);
    r->running = r->lanes;
    r->generation++;
    pthread_cond_broadcast(&r->go);
    while (r->running) pthread_cond_wait(&r->done, &r->mu);
    pthread_mutex_unlock(&r->mu);
    return r->err;
}

/* Stops the threads and destroys the streams and events (the caller's context current); the slots
 * stay the caller's. */
void umprof_ring_close(ring_t *r) {
    if (!r) return;
    pthread_mutex_lock(&r->mu);
    r->quit = 1;
    pthread_cond_broadcast(&r->go);
    pthread_mutex_unlock(&r->mu);
    for (int i = 0; i < r->started; i++) pthread_join(r->threads[i], NULL);
    for (int i = 0; r->events && i < r->lanes * r->depth; i++)
        if (r->events[i]) r->d.event_destroy(r->events[i]);
    for (int i = 0; r->streams && i < r->lanes; i++)
        if (r->streams[i]) r->d.stream_destroy(r->streams[i]);
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->go);
    pthread_cond_destroy(&r->done);
    free(r->slots);
    free(r->streams);
    free(r->events);
    free(r->threads);
    free(r->args);
    free(r);
}

int umprof_ring_log_fields(void) { return LOG_FIELDS; }

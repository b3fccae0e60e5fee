"""A pycuda program that scores a dataset held in host memory batch by batch, as users of ``pycuda.gpuarray`` write it:
a float32 numpy dataset (65536 rows of 1024 features, 256 MiB, seeded) is cut into batches of 4096 rows (16 MiB),
each uploaded with ``gpuarray.to_gpu(batch)``, standardised and squashed by an ElementwiseKernel
(``z = (x - mu[c]) * inv_sd[c]``, ``y = z / (1 + |z|) * gain``, the gain growing by 0.5 each pass), reduced to one
score per row by a SourceModule kernel (a per-row weighted sum with a weight vector kept on the GPU, plus a bias: 4096
floats), and the scores fetched with ``.get()``; the host takes their float64 sum, the batch's top 16 rows with
``numpy.argpartition`` and keeps a running top 16 over the run. 6 passes over the dataset (96 batches). After the loop
the scores of the first, middle and last batch are recomputed by numpy (the same float32 features, the sum in
float64) and compared within the float32 sum's error; a mismatch (a stale or wrong batch) exits 1.

    python3 pycuda_batches.py [--mode MODE] [--rows 65536] [--features 1024] [--batch 4096] [--passes 6]

Modes (the same batches in the same order, the same kernels and launches, bit-identical scores, the same checksum):
  as_written    each batch ``gpuarray.to_gpu(dataset[i:j])`` (a new device array, copied from pageable memory),
                ``gpuarray.empty_like`` for its features and ``gpuarray.empty`` for its scores (new device arrays,
                freed when the next batch replaces them), the two kernels, ``d_scores.get()`` (a new numpy array)
  preallocated  one device input, feature and score array allocated once before the first batch;
                ``d_in.set(dataset[i:j])`` and ``d_scores.get(out)`` into one preallocated numpy array (both copies
                still synchronous, from and to pageable memory)
  pinned        as preallocated, but each batch first copied by the host (``numpy.copyto``) into one reused
                page-locked buffer from ``pycuda.driver.pagelocked_empty``, uploaded from it with ``d_in.set``, and
                the scores fetched with ``d_scores.get(h_out)`` into a page-locked buffer; synchronous
  pinned_async  two of everything (page-locked input and score buffers, device input, feature and score arrays,
                ``pycuda.driver.Stream``s), double-buffered: batch i+1 is copied by the host into page-locked buffer
                (i+1) % 2 and queued on stream (i+1) % 2 (``set_async``, both kernels, ``get_async`` of its scores)
                while batch i's upload and kernels run; then the host synchronises stream i % 2 and consumes batch i's
                scores
  registered    the dataset itself page-locked in place once at the loop's start (it is allocated page-aligned,
                ``pycuda.driver.aligned_empty``, in every mode): ``pycuda.driver.register_host_memory(dataset)`` on
                pycuda before 2024.1.1; on later releases that call fails (numpy refuses its second ``base``, pycuda
                issue #459; the test is xfailed upstream), so the driver's ``cuMemHostRegister`` is called through
                ctypes on the same context; batches are uploaded with ``set_async`` straight from slices of it (no
                staging copy), otherwise as pinned_async (two streams, two device buffers, page-locked score
                buffers); unregistered at the loop's end
  resident      the whole dataset uploaded once at the loop's start (``gpuarray.to_gpu(dataset)``; it fits), each
                batch a view ``d_data[i:j]`` of the device array; the scores fetched as in preallocated
Every mode's loop_s counts its one-time preparation (allocating buffers, page-locking, the upload of the dataset).
Prints one JSON line: program, mode, loop_s, checksum.
"""

import argparse
import ctypes
import json
import sys
import time

import numpy as np
import pycuda
import pycuda.autoinit  # creates the context (pycuda.VERSION is read in registered)
import pycuda.driver as cuda
from pycuda import gpuarray
from pycuda.compiler import SourceModule
from pycuda.elementwise import ElementwiseKernel

MODES = ("as_written", "preallocated", "pinned", "pinned_async", "registered", "resident")
TOPK = 16  # rows kept per batch and over the run
THREADS = 256  # block of the row kernel (its shared array is this long)
BIAS = np.float32(0.5)

FEATURES = ElementwiseKernel(
    "float *y, float *x, float *mu, float *inv_sd, float gain, int features",
    "const int c = (int)(i % features); const float z = (x[i] - mu[c]) * inv_sd[c]; "
    "y[i] = z / (1.0f + fabsf(z)) * gain",
    "squash_features")

ROW_SCORES = SourceModule("""
#define THREADS 256
__global__ void row_scores(const float *feat, const float *w, float *scores, int features, float bias)
{
    __shared__ float part[THREADS];
    const float *row = feat + (size_t)blockIdx.x * features;
    float acc = 0.0f;
    for (int c = threadIdx.x; c < features; c += THREADS)
        acc += row[c] * w[c];
    part[threadIdx.x] = acc;
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s)
            part[threadIdx.x] += part[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        scores[blockIdx.x] = part[0] + bias;
}
""").get_function("row_scores")


def gain(p: int) -> np.float32:
    return np.float32(1.0 + 0.5 * p)


class Model:
    """The per-feature statistics and the weight vector, on the host and (uploaded once) on the GPU."""

    def __init__(self, dataset: np.ndarray, rng: np.random.Generator, batch: int):
        sample = dataset[:batch]
        self.mu = sample.mean(axis=0, dtype=np.float64).astype(np.float32)
        self.inv_sd = (1.0 / sample.std(axis=0, dtype=np.float64)).astype(np.float32)
        self.w = (rng.standard_normal(dataset.shape[1]) / np.sqrt(dataset.shape[1])).astype(np.float32)
        self.d_mu, self.d_inv_sd, self.d_w = (gpuarray.to_gpu(a) for a in (self.mu, self.inv_sd, self.w))
        self.features = np.int32(dataset.shape[1])

    def process(self, d_x, d_feat, d_scores, p: int, stream=None) -> None:
        """Queue batch d_x's two kernels (pass p): features into d_feat, one score a row into d_scores."""
        FEATURES(d_feat, d_x, self.d_mu, self.d_inv_sd, gain(p), self.features, stream=stream)
        ROW_SCORES(d_feat, self.d_w, d_scores, self.features, BIAS,
                   block=(THREADS, 1, 1), grid=(d_x.shape[0], 1), stream=stream)

    def reference(self, x: np.ndarray, p: int):
        """numpy's scores of rows x in pass p (float32 features, float64 sum) and the sum's error bound."""
        z = (x - self.mu) * self.inv_sd
        y = z / (np.float32(1.0) + np.abs(z)) * gain(p)
        want = y.astype(np.float64) @ self.w.astype(np.float64) + float(BIAS)
        bound = 1e-5 * (np.abs(y).astype(np.float64) @ np.abs(self.w).astype(np.float64)) + 1e-5
        return want, bound


class Consumer:
    """What the host does with each batch's scores: the float64 sum, the batch's top rows, a running top-k."""

    def __init__(self, check_batches):
        self.total = 0.0
        self.index_sum = 0
        self.best_scores = np.full(TOPK, -np.inf, np.float32)
        self.best_rows = np.zeros(TOPK, np.int64)
        self.check_batches = set(check_batches)
        self.kept = {}

    def __call__(self, k: int, row0: int, scores: np.ndarray) -> None:
        self.total += float(scores.sum(dtype=np.float64))
        top = np.argpartition(scores, -TOPK)[-TOPK:]
        self.index_sum += int(top.sum()) + TOPK * row0
        cand_scores = np.concatenate([self.best_scores, scores[top]])
        cand_rows = np.concatenate([self.best_rows, top.astype(np.int64) + row0])
        keep = np.argpartition(cand_scores, -TOPK)[-TOPK:]
        self.best_scores, self.best_rows = cand_scores[keep], cand_rows[keep]
        if k in self.check_batches:
            self.kept[k] = scores.copy()


# {{{ the modes: each runs the plan [(k, pass, first row)] in order and hands every batch's scores to consume

def as_written(dataset, model, plan, batch, consume):
    for k, p, row0 in plan:
        d_x = gpuarray.to_gpu(dataset[row0:row0 + batch])
        d_feat = gpuarray.empty_like(d_x)
        d_scores = gpuarray.empty(batch, np.float32)
        model.process(d_x, d_feat, d_scores, p)
        scores = d_scores.get()
        consume(k, row0, scores)


def preallocated(dataset, model, plan, batch, consume):
    features = dataset.shape[1]
    d_in = gpuarray.empty((batch, features), np.float32)
    d_feat = gpuarray.empty((batch, features), np.float32)
    d_scores = gpuarray.empty(batch, np.float32)
    out = np.empty(batch, np.float32)
    for k, p, row0 in plan:
        d_in.set(dataset[row0:row0 + batch])
        model.process(d_in, d_feat, d_scores, p)
        d_scores.get(out)
        consume(k, row0, out)


def pinned(dataset, model, plan, batch, consume):
    features = dataset.shape[1]
    h_in = cuda.pagelocked_empty((batch, features), np.float32)
    h_out = cuda.pagelocked_empty(batch, np.float32)
    d_in = gpuarray.empty((batch, features), np.float32)
    d_feat = gpuarray.empty((batch, features), np.float32)
    d_scores = gpuarray.empty(batch, np.float32)
    for k, p, row0 in plan:
        np.copyto(h_in, dataset[row0:row0 + batch])
        d_in.set(h_in)
        model.process(d_in, d_feat, d_scores, p)
        d_scores.get(h_out)
        consume(k, row0, h_out)


def double_buffered(source, model, plan, batch, consume, staged: bool):
    """Two streams, two device buffer sets, two page-locked score buffers: batch k+1 queued while batch k runs.
    staged: each batch is first copied by the host into one of two page-locked input buffers (source is pageable);
    otherwise source is page-locked and batches are uploaded straight from its slices."""
    features = source.shape[1]
    streams = [cuda.Stream() for _ in range(2)]
    h_in = [cuda.pagelocked_empty((batch, features), np.float32) for _ in range(2)] if staged else None
    h_out = [cuda.pagelocked_empty(batch, np.float32) for _ in range(2)]
    d_in = [gpuarray.empty((batch, features), np.float32) for _ in range(2)]
    d_feat = [gpuarray.empty((batch, features), np.float32) for _ in range(2)]
    d_scores = [gpuarray.empty(batch, np.float32) for _ in range(2)]

    def issue(idx):
        _, p, row0 = plan[idx]
        b, s = idx % 2, streams[idx % 2]
        if staged:
            np.copyto(h_in[b], source[row0:row0 + batch])  # buffer b's last upload (batch idx - 2) is done
            d_in[b].set_async(h_in[b], stream=s)
        else:
            d_in[b].set_async(source[row0:row0 + batch], stream=s)
        model.process(d_in[b], d_feat[b], d_scores[b], p, stream=s)
        d_scores[b].get_async(stream=s, ary=h_out[b])

    if plan:
        issue(0)
    for idx, (k, _, row0) in enumerate(plan):
        if idx + 1 < len(plan):
            issue(idx + 1)  # its buffers were last used by batch idx - 1, consumed (its stream synchronised) already
        streams[idx % 2].synchronize()
        consume(k, row0, h_out[idx % 2])


def pinned_async(dataset, model, plan, batch, consume):
    double_buffered(dataset, model, plan, batch, consume, staged=True)


def _libcuda():
    lib = ctypes.CDLL("libcuda.so.1")
    register = getattr(lib, "cuMemHostRegister_v2", None) or lib.cuMemHostRegister
    register.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint]
    register.restype = ctypes.c_int
    lib.cuMemHostUnregister.argtypes = [ctypes.c_void_p]
    lib.cuMemHostUnregister.restype = ctypes.c_int
    return register, lib.cuMemHostUnregister


def registered(dataset, model, plan, batch, consume):
    if pycuda.VERSION < (2024, 1, 1):
        locked = cuda.register_host_memory(dataset)  # shares dataset's memory; its .base the RegisteredHostMemory

        def release():
            locked.base.unregister()
    else:
        register, unregister = _libcuda()
        ptr = dataset.ctypes.data
        err = register(ptr, dataset.nbytes, 0)
        if err != 0:
            sys.exit(f"pycuda_batches: cuMemHostRegister failed: CUresult {err}")
        locked = dataset

        def release():
            err = unregister(ptr)
            if err != 0:
                sys.exit(f"pycuda_batches: cuMemHostUnregister failed: CUresult {err}")
    try:
        double_buffered(locked, model, plan, batch, consume, staged=False)
    finally:
        cuda.Context.synchronize()
        release()


def resident(dataset, model, plan, batch, consume):
    features = dataset.shape[1]
    d_data = gpuarray.to_gpu(dataset)
    d_feat = gpuarray.empty((batch, features), np.float32)
    d_scores = gpuarray.empty(batch, np.float32)
    out = np.empty(batch, np.float32)
    for k, p, row0 in plan:
        model.process(d_data[row0:row0 + batch], d_feat, d_scores, p)
        d_scores.get(out)
        consume(k, row0, out)

# }}}


def check(dataset, model, plan, batch, kept) -> None:
    """The kept batches' scores against numpy's; exit 1 naming a mismatch."""
    for k, got in sorted(kept.items()):
        _, p, row0 = plan[k]
        want, bound = model.reference(dataset[row0:row0 + batch], p)
        diff = np.abs(got.astype(np.float64) - want)
        if not (diff <= bound).all():
            worst = int(np.argmax(diff - bound))
            sys.exit(f"pycuda_batches: batch {k} (pass {p}, rows {row0}..{row0 + batch - 1}): the GPU's scores "
                     f"differ from numpy's (row {row0 + worst}: {got[worst]:.7g} vs {want[worst]:.7g}, "
                     f"bound {bound[worst]:.3g})")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", choices=MODES, default=MODES[0])
    ap.add_argument("--rows", type=int, default=65536)
    ap.add_argument("--features", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=4096)
    ap.add_argument("--passes", type=int, default=6)
    args = ap.parse_args()
    if args.batch < TOPK or args.rows % args.batch or args.passes < 1 or args.features < 1:
        ap.error(f"--batch must divide --rows and be at least {TOPK}; --passes and --features at least 1")

    # the dataset: page-aligned host memory (as registered needs; the same array in every mode), seeded
    rng = np.random.default_rng(20261208)
    col_loc = rng.uniform(-2.0, 2.0, args.features).astype(np.float32)
    col_scale = rng.uniform(0.5, 3.0, args.features).astype(np.float32)
    dataset = cuda.aligned_empty((args.rows, args.features), np.float32)
    rng.standard_normal(dtype=np.float32, out=dataset)
    dataset *= col_scale
    dataset += col_loc
    model = Model(dataset, rng, args.batch)

    # warm-up: every kernel once on a small array (the ElementwiseKernel is compiled on its first call)
    d_x = gpuarray.to_gpu(dataset[:2])
    d_f, d_s = gpuarray.empty_like(d_x), gpuarray.empty(2, np.float32)
    model.process(d_x, d_f, d_s, 0)
    d_s.get()
    del d_x, d_f, d_s

    per_pass = args.rows // args.batch
    plan = [(p * per_pass + j, p, j * args.batch) for p in range(args.passes) for j in range(per_pass)]
    consume = Consumer({0, len(plan) // 2, len(plan) - 1})
    run = {"as_written": as_written, "preallocated": preallocated, "pinned": pinned,
           "pinned_async": pinned_async, "registered": registered, "resident": resident}[args.mode]

    cuda.Context.synchronize()
    start = time.perf_counter()
    run(dataset, model, plan, args.batch, consume)
    cuda.Context.synchronize()
    loop_s = time.perf_counter() - start

    if sorted(consume.kept) != sorted(consume.check_batches):
        sys.exit(f"pycuda_batches: batches {sorted(consume.check_batches - set(consume.kept))} were never consumed")
    check(dataset, model, plan, args.batch, consume.kept)
    checksum = consume.total + (consume.index_sum + int(consume.best_rows.sum())) / args.rows
    print(json.dumps({"program": "pycuda_batches", "mode": args.mode, "loop_s": round(loop_s, 6),
                      "checksum": round(checksum, 6)}))


if __name__ == "__main__":
    main()

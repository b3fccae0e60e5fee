"""A CuPy program that reads a result back to the host each step, as CuPy users write it: a float32 input of
``--mib`` MiB (rows of ``--cols``) kept on the GPU, shifted each step (``x = base + 0.1 * (step % 10)``), and a
result of the same size computed from it on the GPU, each element's SiLU plus its row's mean (``x / (1 + exp(-x)) +
x.mean(axis=1)``); the result read back with ``cupy.asnumpy(result)`` (a fresh numpy array each step), reduced by
the host with numpy (its float64 sum: the checksum, summed over the ``--steps`` steps) and ``--samples`` sampled
values checked against numpy's recomputation from the host's copy of the input (the program exits 1 if one
differs). The sampled positions come from a seeded generator, the same in every mode.

    python3 cupy_readback.py [--mode MODE] [--steps 60] [--mib 32] [--cols 2048] [--samples 4]

Modes (the same results, the same checks, the same checksum):
  as_written     ``cupy.asnumpy(result)`` on the default stream: a fresh pageable numpy array each step, the copy
                 synchronous
  pinned_out     two pinned numpy arrays allocated once before the loop (``cupyx.empty_pinned``); every kernel and
                 copy on one ``cupy.cuda.Stream(non_blocking=True)``; step i's result copied with
                 ``result.get(out=buf[i % 2], stream=s, blocking=False)`` and a ``cupy.cuda.Event`` recorded after it;
                 the host then waits on step i-1's event and reduces and checks step i-1's buffer while step i's copy
                 runs (the buffer is written again at step i+1, after the host has read it)
  reduce_on_gpu  the reduction done on the GPU (``result.sum(dtype=cupy.float64)``) and the sampled values gathered
                 there, both kept in GPU arrays and read back once after the last step, then checked by the host
Prints one JSON line: program, mode, loop_s, checksum.
"""

import json
import sys
import time

import cupy as cp
import cupyx
import numpy as np

from harness import parse

MODES = ("as_written", "pinned_out", "reduce_on_gpu")
SHIFT, PERIOD = 0.1, 10  # step s's input is base + SHIFT * (s % PERIOD): a step's result sum differs from either
# of the two before it by 0.25% of the 60 steps' checksum or more (a stale result is seen beyond the 1e-4 tolerance)
RTOL, ATOL = 1e-4, 1e-4  # a sampled value against numpy's float64 recomputation (the GPU computes in float32)


def compute(base: cp.ndarray, step: int) -> cp.ndarray:
    """Step ``step``'s result, on the current stream: SiLU of the shifted input plus its row's mean."""
    x = base + np.float32(SHIFT * (step % PERIOD))
    return x / (1 + cp.exp(-x)) + x.mean(axis=1, keepdims=True)


def expected(base: np.ndarray, step: int, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """The sampled values of step ``step``'s result as numpy computes them (float64, from the same float32 input)."""
    x = (base[rows] + np.float32(SHIFT * (step % PERIOD))).astype(np.float64)  # the rows, shifted as on the GPU
    v = x[np.arange(len(rows)), cols]
    return v / (1 + np.exp(-v)) + x.mean(axis=1)


class Checker:
    """The host's checks of the sampled values, and their count."""

    def __init__(self, base: np.ndarray, rows: np.ndarray, cols: np.ndarray):
        self.base, self.rows, self.cols, self.checked = base, rows, cols, 0

    def values(self, step: int, got: np.ndarray) -> None:
        want = expected(self.base, step, self.rows[step], self.cols[step])
        if not np.allclose(got, want, rtol=RTOL, atol=ATOL):
            sys.exit(f"step {step}: sampled values {got.tolist()} differ from numpy's {want.tolist()}")
        self.checked += len(got)

    def result(self, step: int, host: np.ndarray) -> float:
        """A result on the host: its sampled values checked, its float64 sum."""
        self.values(step, host[self.rows[step], self.cols[step]])
        return float(host.sum(dtype=np.float64))


def as_written(base, steps, check):
    total = 0.0
    for step in range(steps):
        result = compute(base, step)
        host = cp.asnumpy(result)
        total += check.result(step, host)
    return total


def pinned_out(base, steps, check):
    stream = cp.cuda.Stream(non_blocking=True)
    bufs = [cupyx.empty_pinned(base.shape, np.float32) for _ in range(2)]
    copied = [cp.cuda.Event(disable_timing=True) for _ in range(2)]  # bufs[b] holds its step's result
    total = 0.0
    with stream:  # every kernel and copy on one stream, in order
        for step in range(steps):
            b = step % 2
            result = compute(base, step)
            result.get(out=bufs[b], stream=stream, blocking=False)
            copied[b].record(stream)
            if step > 0:  # the previous step's result, read while this step's copy runs
                copied[1 - b].synchronize()
                total += check.result(step - 1, bufs[1 - b])
        last = (steps - 1) % 2
        copied[last].synchronize()
        total += check.result(steps - 1, bufs[last])
    return total


def reduce_on_gpu(base, steps, check):
    sums = cp.empty(steps, cp.float64)
    picked = cp.empty((steps, check.rows.shape[1]), cp.float32)
    rows, cols = cp.asarray(check.rows), cp.asarray(check.cols)
    for step in range(steps):
        result = compute(base, step)
        sums[step] = result.sum(dtype=cp.float64)
        picked[step] = result[rows[step], cols[step]]
    sums_host, picked_host = sums.get(), picked.get()
    for step in range(steps):
        check.values(step, picked_host[step])
    return float(sums_host.sum())


def main():
    args = parse(MODES, __doc__, steps=60, mib=32, cols=2048, samples=4)
    n_rows = args.mib * 2**20 // 4 // args.cols
    rng = np.random.default_rng(0)
    base_host = rng.standard_normal((n_rows, args.cols), dtype=np.float32)
    rows = rng.integers(0, n_rows, (args.steps, args.samples))
    cols = rng.integers(0, args.cols, (args.steps, args.samples))
    check = Checker(base_host, rows, cols)
    base = cp.asarray(base_host)
    run = {"as_written": as_written, "pinned_out": pinned_out, "reduce_on_gpu": reduce_on_gpu}[args.mode]
    cp.cuda.Device().synchronize()
    start = time.perf_counter()
    checksum = run(base, args.steps, check)
    cp.cuda.Device().synchronize()
    loop_s = time.perf_counter() - start
    assert check.checked == args.steps * args.samples
    print(json.dumps({"program": "cupy_readback", "mode": args.mode, "loop_s": round(loop_s, 6),
                      "checksum": float(f"{checksum:.6g}")}))
    sys.stdout.flush()


if __name__ == "__main__":
    main()

"""A CuPy signal-processing pipeline that filters a long multi-channel signal block by block, as CuPy users write
it: ``--channels`` channels (32) of float32 samples, ``--mib`` MiB in all (1536: 12,582,912 samples a channel),
seeded uniform white noise in [-1, 1) made by numpy before the timed loop and laid out (channels, samples), C order,
as scipy.signal and MNE keep signals; processed in blocks of ``--block`` samples a channel (65536: 8 MiB a block,
192 blocks) by weighted overlap-add (STFT) filtering on the GPU:

  frame i is the last block's samples followed by block i's (2 x 65536 a channel; zeros before the first block and
  after the last one: frames 0 .. 192), multiplied by a periodic Hann window of the frame's length (whose copies
  a block apart sum to 1), ``cupy.fft.rfft``-ed (65537 bins), multiplied by a zero-phase band-pass gain (1 from
  0.05 to 0.25 of the Nyquist frequency, raised-cosine tapers 0.02 wide, 0 elsewhere) and ``cupy.fft.irfft``-ed;
  the first half of frame i's output plus the second half of frame i-1's (kept on the GPU, as is the last block's
  input) is block i-1's filtered output, emitted at frame i (frame 0 emits nothing, frame 192 of the last block and
  zeros emits block 191);
  every frame's power spectrum (``|X|^2`` of the windowed frame divided by the window's energy, the Nyquist bin
  dropped) is reduced to ``--bands`` (64) band sums a channel: a 32 x 64 float32 array a frame (8 KiB).

The filtered blocks end up in one float32 numpy array of the signal's shape, the band powers in a Python list of
numpy arrays, one a frame. The checksum, taken after the timed loop: the float64 sum of the output's absolute values
(channel by channel), plus the float64 sum of each frame's band powers, frame by frame. Every mode runs the same
kernels and the same cuFFT plans on the same shapes, in the same order, so the modes agree to the last bit. After the
loop the first and the last output block (blocks 0 and 191) and the first and last frames' band powers are checked
against numpy's float64 FFT of the same frames (within 1e-4 of the block's largest value; 1e-3 relative for the
band powers); a block that was not filtered, came from another block or was written to the wrong place is off by
far more, and the program exits 1.

    python3 cupy_fft_blocks.py [--mode MODE] [--mib 1536] [--channels 32] [--block 65536] [--bands 64] [--numpy-only]

Modes (the same frames, the same outputs, the same checksum):
  as_written       every kernel on the default stream; each block ``cupy.asarray(signal[:, a:b])`` from the pageable
                   numpy array (numpy makes the strided slice contiguous, CuPy copies it into a buffer from its
                   default pinned memory pool and sends it asynchronously); each filtered block read back with
                   ``cupy.asnumpy(y)`` (a fresh pageable numpy array, a synchronous copy) and written into the numpy
                   output array (``out[:, a:b] = ...``); each frame's band powers read back with ``cupy.asnumpy`` and
                   appended to the list
  pinned_pool      as_written with CuPy's pinned memory allocator set, before the warm-up, to a pinned memory pool of
                   its own (``cupy.cuda.set_pinned_memory_allocator(cupy.cuda.PinnedMemoryPool().malloc)``), the
                   code otherwise unchanged (CuPy's default allocator is already such a pool)
  pinned_staging   one pinned input, one pinned output and one pinned band-power buffer (``cupyx.empty_pinned``,
                   allocated at the start of the loop) and one GPU input array; every copy and kernel on one
                   ``cupy.cuda.Stream(non_blocking=True)``; each block copied by numpy into the pinned input
                   (``np.copyto``), sent with ``x.set(pinned, stream=s)``, filtered, and read back with
                   ``y.get(out=pinned_out, stream=s, blocking=False)`` (the band powers likewise); then
                   ``s.synchronize()`` before the host copies the results out and writes the pinned input again
  double_buffered  two pinned input buffers and two GPU input arrays used in turn, an upload stream and a compute
                   stream (both ``non_blocking=True``): while frame i computes, the host copies block i+1 into the
                   other pinned buffer (after an event says that buffer's last upload has finished) and sends it on
                   the upload stream (which first waits on an event saying frame i-1 has finished reading that GPU
                   array); the compute stream waits on block i's upload event; frame i's results are read into one of
                   two pinned output (and band-power) buffers on the compute stream (``get(out=..., blocking=False)``)
                   and an event recorded; the host waits on frame i-1's event and copies its results out while
                   frame i's work runs
  on_gpu           the whole signal sent once (``cupy.asarray(signal)``: 1.5 GiB, staged by CuPy through pinned
                   memory), the blocks sliced on the GPU, the filtered blocks written into a GPU output array and the
                   band powers into a GPU array; both read back once after the last frame (``cupy.asnumpy``)
A warm-up before the timed loop (two frames of zeros on the default stream, sent with ``cupy.asarray`` and read back
with ``cupy.asnumpy``) makes the cuFFT plans, compiles the kernels and fills CuPy's memory pools, as a running
pipeline has them. The timed loop is bracketed by ``cupy.cuda.Device().synchronize()``.

``--numpy-only`` runs every mode's control flow on the CPU with numpy standing in for CuPy (no GPU, no CuPy needed;
pinned buffers are numpy arrays, streams and events do nothing): a check of the program's logic, not of its speed.
Prints one JSON line: program, mode, loop_s, checksum.
"""

import argparse
import json
import sys
import time
import types

import numpy as np

try:
    import cupy as cp
    import cupyx
except ImportError:  # --numpy-only needs neither
    cp = cupyx = None

MODES = ("as_written", "pinned_pool", "pinned_staging", "double_buffered", "on_gpu")
LOW, HIGH, TAPER = 0.05, 0.25, 0.02  # the pass band and its tapers' width, as fractions of the Nyquist frequency
OUT_TOL, BAND_RTOL = 1e-4, 1e-3  # an output block against numpy's (times its largest value), band powers (relative)


def design(block: int):
    """The frame's periodic Hann window (2 x block samples) and the band-pass gain at its block + 1 bins (float64)."""
    window = 0.5 - 0.5 * np.cos(np.pi * np.arange(2 * block) / block)  # copies ``block`` apart sum to 1
    f = np.arange(block + 1) / block  # the bins' frequencies, as fractions of the Nyquist frequency
    rise = np.clip((f - (LOW - TAPER)) / TAPER, 0, 1)
    fall = np.clip((HIGH + TAPER - f) / TAPER, 0, 1)
    gain = np.sin(0.5 * np.pi * np.minimum(rise, fall)) ** 2
    return window, gain


class Pipeline:
    """The GPU side of the filter: its state (the last block's input, the last frame's second half) and one frame's
    work, queued on the current stream."""

    def __init__(self, channels: int, block: int, bands: int, window, gain, scale):
        self.block, self.bands = block, bands
        self.window, self.gain, self.scale = window, gain, scale
        self.prev = cp.zeros((channels, block), cp.float32)  # the last block's samples
        self.tail = cp.zeros((channels, block), cp.float32)  # the last frame's output, second half
        self.first = True

    def step(self, x):
        """Frame (last block, x): its block's filtered output (None at the first frame) and its band powers."""
        L = self.block
        raw = cp.concatenate((self.prev, x), axis=1)
        spec = cp.fft.rfft(raw * self.window, axis=1)  # (channels, L + 1) complex64
        power = (spec.real ** 2 + spec.imag ** 2)[:, :L]
        bands = power.reshape(power.shape[0], self.bands, L // self.bands).sum(axis=2) * self.scale
        y = cp.fft.irfft(spec * self.gain, n=2 * L, axis=1)
        emitted = None if self.first else self.tail + y[:, :L]
        self.prev, self.tail, self.first = raw[:, L:], y[:, L:], False
        return emitted, bands


def as_written(signal, new_pipeline):
    pipe = new_pipeline()
    C, N = signal.shape
    L = pipe.block
    out = np.empty_like(signal)
    spectra = []
    for start in range(0, N + L, L):  # the last frame: the last block, then zeros
        if start < N:
            x = cp.asarray(signal[:, start:start + L])
        else:
            x = cp.zeros((C, L), cp.float32)
        y, power = pipe.step(x)
        if y is not None:
            out[:, start - L:start] = cp.asnumpy(y)
        spectra.append(cp.asnumpy(power))
    return out, spectra


def pinned_staging(signal, new_pipeline):
    C, N = signal.shape
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        pipe = new_pipeline()
        L = pipe.block
        x_gpu = cp.empty((C, L), cp.float32)
        zeros = cp.zeros((C, L), cp.float32)
    pinned_in = cupyx.empty_pinned((C, L), np.float32)
    pinned_out = cupyx.empty_pinned((C, L), np.float32)
    pinned_power = cupyx.empty_pinned((C, pipe.bands), np.float32)
    out = np.empty_like(signal)
    spectra = []
    for start in range(0, N + L, L):
        if start < N:
            np.copyto(pinned_in, signal[:, start:start + L])  # the last upload has finished (synchronised below)
            x_gpu.set(pinned_in, stream=stream)
            x = x_gpu
        else:
            x = zeros
        with stream:
            y, power = pipe.step(x)
            if y is not None:
                y.get(out=pinned_out, stream=stream, blocking=False)
            power.get(out=pinned_power, stream=stream, blocking=False)
        stream.synchronize()
        if y is not None:
            out[:, start - L:start] = pinned_out
        spectra.append(pinned_power.copy())
    return out, spectra


def double_buffered(signal, new_pipeline):
    C, N = signal.shape
    upload, compute = cp.cuda.Stream(non_blocking=True), cp.cuda.Stream(non_blocking=True)
    with compute:
        pipe = new_pipeline()
        L = pipe.block
        x_gpu = [cp.empty((C, L), cp.float32) for _ in range(2)]
        zeros = cp.zeros((C, L), cp.float32)
    K = N // L
    pinned_in = [cupyx.empty_pinned((C, L), np.float32) for _ in range(2)]
    pinned_out = [cupyx.empty_pinned((C, L), np.float32) for _ in range(2)]
    pinned_power = [cupyx.empty_pinned((C, pipe.bands), np.float32) for _ in range(2)]
    uploaded = [cp.cuda.Event(disable_timing=True) for _ in range(2)]  # pinned_in[k] -> x_gpu[k] has finished
    consumed = [cp.cuda.Event(disable_timing=True) for _ in range(2)]  # the frame reading x_gpu[k] has finished
    ready = [cp.cuda.Event(disable_timing=True) for _ in range(2)]  # pinned_out[k], pinned_power[k] are filled
    out = np.empty_like(signal)
    spectra = []

    def send(i):
        """Block i into pinned buffer i % 2 and on to the GPU, on the upload stream."""
        k = i % 2
        uploaded[k].synchronize()  # block i-2's upload has read this pinned buffer
        np.copyto(pinned_in[k], signal[:, i * L:(i + 1) * L])
        upload.wait_event(consumed[k])  # frame i-2 has read this GPU array
        x_gpu[k].set(pinned_in[k], stream=upload)
        uploaded[k].record(upload)

    def collect(i):
        """Frame i's results, once they are in pinned buffers i % 2, copied out by the host."""
        k = i % 2
        ready[k].synchronize()
        if i > 0:
            out[:, (i - 1) * L:i * L] = pinned_out[k]
        spectra.append(pinned_power[k].copy())

    send(0)
    for i in range(K + 1):  # frame K: the last block, then zeros
        k = i % 2
        with compute:
            if i < K:
                compute.wait_event(uploaded[k])
                x = x_gpu[k]
            else:
                x = zeros
            y, power = pipe.step(x)
            if i < K:
                consumed[k].record(compute)
            if y is not None:
                y.get(out=pinned_out[k], stream=compute, blocking=False)
            power.get(out=pinned_power[k], stream=compute, blocking=False)
            ready[k].record(compute)
        if i + 1 < K:
            send(i + 1)  # the host stages the next block, the upload stream sends it, while frame i computes
        if i > 0:
            collect(i - 1)  # frame i-1's results (their buffers are written again by frame i+1, queued later)
    collect(K)
    return out, spectra


def on_gpu(signal, new_pipeline):
    pipe = new_pipeline()
    C, N = signal.shape
    L = pipe.block
    signal_gpu = cp.asarray(signal)
    out_gpu = cp.empty_like(signal_gpu)
    spectra_gpu = cp.empty((N // L + 1, C, pipe.bands), cp.float32)
    for i, start in enumerate(range(0, N + L, L)):
        if start < N:
            x = signal_gpu[:, start:start + L]
        else:
            x = cp.zeros((C, L), cp.float32)
        y, power = pipe.step(x)
        if y is not None:
            out_gpu[:, start - L:start] = y
        spectra_gpu[i] = power
    return cp.asnumpy(out_gpu), list(cp.asnumpy(spectra_gpu))


def reference_frame(signal, f: int, window, gain, bands: int, scale: float):
    """Frame f by numpy in float64: its filtered output (2 x block samples a channel) and its band powers."""
    C, N = signal.shape
    L = len(window) // 2
    frame = np.zeros((C, 2 * L))
    lo, hi = (f - 1) * L, (f + 1) * L  # the frame's samples, zeros outside the signal
    frame[:, max(lo, 0) - lo:min(hi, N) - lo] = signal[:, max(lo, 0):min(hi, N)]
    spec = np.fft.rfft(frame * window, axis=1)
    power = (np.abs(spec[:, :L]) ** 2).reshape(C, bands, L // bands).sum(axis=2) * scale
    return np.fft.irfft(spec * gain, n=2 * L, axis=1), power


def check(signal, out, spectra, window, gain, bands: int, scale: float) -> None:
    """The first and last output blocks and band powers against numpy's float64 reference; exit 1 on a mismatch."""
    N = signal.shape[1]
    L = len(window) // 2
    K = N // L
    if len(spectra) != K + 1:
        sys.exit(f"cupy_fft_blocks: {len(spectra)} band-power arrays, not one a frame ({K + 1})")
    for j in (0, K - 1):  # output block j: frame j's second half plus frame j+1's first half
        y0, p0 = reference_frame(signal, j, window, gain, bands, scale)
        y1, p1 = reference_frame(signal, j + 1, window, gain, bands, scale)
        want = y0[:, L:] + y1[:, :L]
        err, bound = float(np.abs(out[:, j * L:(j + 1) * L] - want).max()), OUT_TOL * float(np.abs(want).max())
        if not err <= bound:
            sys.exit(f"cupy_fft_blocks: output block {j} differs from numpy's float64 reference by {err:.4g} "
                     f"(bound {bound:.4g})")
        for f, p in ((j, p0), (j + 1, p1)):
            if f in (0, K) and not np.allclose(spectra[f], p, rtol=BAND_RTOL, atol=0):
                err = float(np.abs(spectra[f] / p - 1).max())
                sys.exit(f"cupy_fft_blocks: frame {f}'s band powers differ from numpy's float64 reference by "
                         f"{err:.4g} relative (bound {BAND_RTOL})")


def checksum(out, spectra) -> float:
    """The float64 sum of the output's absolute values, channel by channel, then of each frame's band powers."""
    total = 0.0
    for row in out:
        total += float(np.abs(row).sum(dtype=np.float64))
    for p in spectra:
        total += float(p.sum(dtype=np.float64))
    return total


def numpy_backend():
    """Stand-ins for cupy and cupyx with numpy underneath (--numpy-only): "GPU" arrays are numpy arrays of a subclass
    with cupy's ``get``/``set``, pinned buffers plain numpy arrays, streams and events no-ops."""

    class DeviceArray(np.ndarray):
        def get(self, stream=None, out=None, blocking=True):
            if out is None:
                return np.array(self)
            if out.shape != self.shape or out.dtype != self.dtype:
                raise ValueError(f"get: out is {out.dtype}{out.shape}, the array {self.dtype}{self.shape}")
            np.copyto(out, self)
            return out

        def set(self, arr, stream=None):
            if arr.shape != self.shape or arr.dtype != self.dtype:
                raise ValueError(f"set: {arr.dtype}{arr.shape} into {self.dtype}{self.shape}")
            np.copyto(self, arr)

    def device(r):
        return r.view(DeviceArray) if isinstance(r, np.ndarray) and not isinstance(r, DeviceArray) else r

    class Wrapped:
        """numpy (or one of its modules) whose functions return DeviceArrays."""

        def __init__(self, module):
            self._module = module

        def __getattr__(self, name):
            a = getattr(self._module, name)
            if isinstance(a, types.ModuleType):
                return Wrapped(a)
            if callable(a) and not isinstance(a, type):
                return lambda *args, **kwargs: device(a(*args, **kwargs))
            return a

    class Event:
        def __init__(self, *args, **kwargs):
            pass

        def record(self, stream=None):
            pass

        def synchronize(self):
            pass

    class Stream:
        def __init__(self, *args, **kwargs):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def synchronize(self):
            pass

        def wait_event(self, event):
            pass

        def record(self, event=None):
            return event or Event()

    class Device:
        def synchronize(self):
            pass

    class PinnedMemoryPool:
        def malloc(self, size):
            raise RuntimeError("no pinned memory under --numpy-only")

    fake_cp = Wrapped(np)
    fake_cp.asarray = lambda a, dtype=None: device(np.array(a, dtype=dtype))  # a copy, as an upload is
    fake_cp.asnumpy = lambda a, stream=None: np.array(a)
    fake_cp.cuda = types.SimpleNamespace(Stream=Stream, Event=Event, Device=Device, PinnedMemoryPool=PinnedMemoryPool,
                                         set_pinned_memory_allocator=lambda allocator=None: None)
    fake_cupyx = types.SimpleNamespace(empty_pinned=lambda shape, dtype=np.float32: np.empty(shape, dtype))
    return fake_cp, fake_cupyx


def main():
    global cp, cupyx
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mode", choices=MODES, default=MODES[0])
    p.add_argument("--mib", type=int, default=1536)
    p.add_argument("--channels", type=int, default=32)
    p.add_argument("--block", type=int, default=65536)
    p.add_argument("--bands", type=int, default=64)
    p.add_argument("--numpy-only", action="store_true", help="numpy standing in for CuPy, on the CPU")
    args = p.parse_args()
    if args.numpy_only:
        cp, cupyx = numpy_backend()
    elif cp is None:
        sys.exit("cupy_fft_blocks: CuPy is not installed (--numpy-only runs the modes' logic with numpy)")
    C, L, B = args.channels, args.block, args.bands
    N = args.mib * 2**20 // 4 // C
    if not (C >= 1 and L >= 2 and B >= 1 and L % B == 0 and N >= 2 * L and N % L == 0):
        sys.exit(f"cupy_fft_blocks: {N} samples a channel are not a whole number (2 or more) of blocks of {L}, "
                 f"or {B} bands do not divide a block")

    rng = np.random.default_rng(0)
    signal = rng.random((C, N), dtype=np.float32)
    np.multiply(signal, np.float32(2), out=signal)
    np.subtract(signal, np.float32(1), out=signal)  # uniform in [-1, 1)

    window, gain = design(L)
    scale = 1.0 / float((window ** 2).sum())  # |X|^2 / the window's energy: a power spectral density
    window_gpu = cp.asarray(window.astype(np.float32))
    gain_gpu = cp.asarray(gain.astype(np.float32))
    scale32 = np.float32(scale)

    def new_pipeline():
        return Pipeline(C, L, B, window_gpu, gain_gpu, scale32)

    if args.mode == "pinned_pool":  # before the warm-up, so that it fills this pool
        cp.cuda.set_pinned_memory_allocator(cp.cuda.PinnedMemoryPool().malloc)
    warm = new_pipeline()
    for _ in range(2):  # plans, kernels, memory pools
        y, power = warm.step(cp.asarray(np.zeros((C, L), np.float32)))
    cp.asnumpy(y), cp.asnumpy(power)
    del warm, y, power

    run = {"as_written": as_written, "pinned_pool": as_written, "pinned_staging": pinned_staging,
           "double_buffered": double_buffered, "on_gpu": on_gpu}[args.mode]
    cp.cuda.Device().synchronize()
    start = time.perf_counter()
    out, spectra = run(signal, new_pipeline)
    cp.cuda.Device().synchronize()
    loop_s = time.perf_counter() - start

    check(signal, out, spectra, window, gain, B, scale)
    total = checksum(out, spectra)
    print(json.dumps({"program": "cupy_fft_blocks", "mode": args.mode, "loop_s": round(loop_s, 6),
                      "checksum": float(f"{total:.6g}")}))
    sys.stdout.flush()


if __name__ == "__main__":
    main()

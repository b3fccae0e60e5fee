"""A pycuda program that filters a large image tile by tile, as pycuda users write it: a float32 image of
``--height`` x ``--width`` pixels (16384 x 16384: 1 GiB, seeded uniform values in [0, 1)) held in a numpy array is
processed in ``--tile`` x ``--tile`` tiles (2048 x 2048: 16 MiB, 64 tiles), ``--passes`` times (2) with different
filter weights (pass 0 a 5x5 binomial blur, pass 1 an unsharp mask: twice the pixel minus the blur). Each tile is cut
with ``np.ascontiguousarray(img[y:y+T, x:x+T])``, sent with ``pycuda.driver.memcpy_htod``, filtered by a SourceModule
kernel (compiled once, before the loop; the weights in ``__constant__`` memory, set once) that applies the 5x5
convolution with borders clamped within the tile and a softsign ``v / (1 + |v|)``, and fetched with ``memcpy_dtoh``
into a fresh ``np.empty`` tile; the host writes the tile into that pass's plane of the output image (one float32
(passes, height, width) array, 2 GiB) and keeps per-tile statistics: its float64 sum and its max.

The output image and the images' buffers are allocated page-aligned (``pycuda.driver.aligned_empty``, as registered
needs; the same arrays in every mode) before the timed loop, the output filled with NaN (a tile never written shows
in the checksum). After the loop: every pass's tile sums are checked against that plane's sum, and three tiles a pass
(the first, one in the middle, the last) against numpy's own filter of the input tile (within the float32
accumulation's error) and against their recorded statistics; a mismatch exits 1. The checksum: the float64 sums of
every plane of the output image, plus the sum of the tile sums, plus the sum of the tile maxima.

    python3 pycuda_tiles.py [--mode MODE] [--height 16384] [--width 16384] [--tile 2048] [--passes 2] [--numpy-only]

Modes (the same tiles in the same order, the same kernel and launches, the same checksum):
  as_written    one device input and one output tile allocated once; each tile ``np.ascontiguousarray`` (a fresh
                pageable copy), ``memcpy_htod``, the kernel, ``memcpy_dtoh`` into a fresh ``np.empty`` tile, written
                by the host into the output image, its statistics taken
  pinned        two tile buffers from ``pycuda.driver.pagelocked_empty`` (input, result), allocated once and reused:
                the host copies each tile into the input buffer (``np.copyto``), the same synchronous ``memcpy_htod``
                / ``memcpy_dtoh`` (the result into the second buffer), then writes it into the output image
  pinned_async  two of everything (page-locked input and result buffers, device tiles, ``pycuda.driver.Stream``s,
                ``Event``s), double-buffered: tile i+1 is copied by the host into page-locked buffer (i+1) % 2 and
                queued on stream (i+1) % 2 (``memcpy_htod_async``, the kernel, ``memcpy_dtoh_async``, an event) while
                tile i's upload, kernel and download run; its upload overlaps tile i's kernel; the host waits on tile
                i's event, then writes it into the output image and takes its statistics
  registered    the input image and the output image page-locked in place once at the loop's start
                (``pycuda.driver.register_host_memory`` on pycuda before 2024.1.1; on later releases that call fails,
                numpy refusing its second ``base`` (pycuda issue #459), so the driver's ``cuMemHostRegister`` is called
                through ctypes on the same context), unregistered at its end; each tile sent by a pitched
                ``pycuda.driver.Memcpy2D`` straight from the big image (no host copy) and its result sent back by
                another straight into the output image, both asynchronous; two streams and events, double-buffered
                as pinned_async; the host takes the statistics from the output image once tile i's event is reached
  resident      the whole image uploaded once at the loop's start (``mem_alloc`` and one ``memcpy_htod``; it fits),
                with a whole-image device output; each tile filtered in place on the GPU (the kernel given pointers
                into both images and their row pitch), each pass's output read back once with ``memcpy_dtoh`` into
                its plane of the output image; the host then takes every tile's statistics from it
Every mode's loop_s counts its one-time preparation (allocating buffers, page-locking, the upload of the image).

``--numpy-only`` runs every mode's control flow on the CPU with numpy standing in for pycuda (no GPU, no pycuda
needed): "device" memory is numpy memory addressed by pointer, the kernel numpy's filter, asynchronous copies and
kernels queued on their stream and run only when a stream, an event or the context is synchronised or a synchronous
call is made (a host buffer reused too early shows in the checksum), and asynchronous copies refused unless their
host memory is page-locked (a ``pagelocked_empty`` buffer or a registered array): a check of the program's logic,
not of its speed.
Prints one JSON line: program, mode, loop_s, checksum.
"""

import argparse
import ctypes
import importlib
import json
import sys
import time
import types

import numpy as np

try:
    import pycuda
    import pycuda.driver as cuda
    from pycuda.compiler import SourceModule
except ImportError:  # --numpy-only needs none of them
    pycuda = cuda = SourceModule = None

MODES = ("as_written", "pinned", "pinned_async", "registered", "resident")
BLOCK = (32, 8, 1)
KERNEL_SOURCE = r"""
__constant__ float weights[%(passes)d * 25];  // pass p's 5x5 kernel, row by row

__global__ void filter5(const float *src, int src_pitch, float *dst, int dst_pitch, int w, int h, int pass)
{
    const int x = blockIdx.x * blockDim.x + threadIdx.x;
    const int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h)
        return;
    const float *k = weights + pass * 25;
    float acc = 0.0f;
    for (int dy = -2; dy <= 2; ++dy) {
        const float *row = src + (size_t)min(max(y + dy, 0), h - 1) * src_pitch;
        for (int dx = -2; dx <= 2; ++dx)
            acc += k[(dy + 2) * 5 + dx + 2] * row[min(max(x + dx, 0), w - 1)];
    }
    dst[(size_t)y * dst_pitch + x] = acc / (1.0f + fabsf(acc));
}
"""
FILTER = None  # the compiled kernel (set in main)
PYCUDA_VERSION = None


def filter_weights(passes: int) -> np.ndarray:
    """(passes, 5, 5) float32: pass 0 the binomial blur, pass p blur + 2p (identity - blur) (pass 1: unsharp mask)."""
    b = np.array([1.0, 4.0, 6.0, 4.0, 1.0])
    blur = np.outer(b, b) / 256.0
    delta = np.zeros((5, 5))
    delta[2, 2] = 1.0
    return np.stack([blur + 2.0 * p * (delta - blur) for p in range(passes)]).astype(np.float32)


def filter_tile(tile: np.ndarray, k: np.ndarray) -> np.ndarray:
    """The kernel's computation in numpy (float32): the 5x5 filter k, borders clamped within the tile, softsign."""
    h, w = tile.shape
    pad = np.pad(tile, 2, mode="edge")
    acc = np.zeros((h, w), np.float32)
    for dy in range(5):
        for dx in range(5):
            acc += k[dy, dx] * pad[dy:dy + h, dx:dx + w]
    return acc / (np.float32(1.0) + np.abs(acc))


def launch(src, src_pitch: int, dst, dst_pitch: int, w: int, h: int, p: int, stream=None) -> None:
    """The kernel on a w x h tile at src (rows src_pitch floats apart) into dst (rows dst_pitch floats apart)."""
    grid = ((w + BLOCK[0] - 1) // BLOCK[0], (h + BLOCK[1] - 1) // BLOCK[1])
    FILTER(src, np.int32(src_pitch), dst, np.int32(dst_pitch), np.int32(w), np.int32(h), np.int32(p),
           block=BLOCK, grid=grid, stream=stream)


class TileStats:
    """What the host keeps of each tile: its float64 sum and its max, by pass and tile row and column."""

    def __init__(self, passes: int, tiles_y: int, tiles_x: int):
        self.sums = np.full((passes, tiles_y, tiles_x), np.nan)
        self.maxes = np.full((passes, tiles_y, tiles_x), np.nan, np.float32)

    def add(self, p: int, ty: int, tx: int, tile: np.ndarray) -> None:
        self.sums[p, ty, tx] = tile.sum(dtype=np.float64)
        self.maxes[p, ty, tx] = tile.max()


def tile_plan(passes: int, height: int, width: int, t: int):
    """Every (pass, y, x) in the order all modes process them."""
    return [(p, y, x) for p in range(passes) for y in range(0, height, t) for x in range(0, width, t)]


# {{{ the modes: each fills out[p] (the output image's planes) and stats, tile by tile, pass by pass

def as_written(img, out, stats, t):
    passes, (height, width) = out.shape[0], img.shape
    d_in = cuda.mem_alloc(t * t * 4)
    d_out = cuda.mem_alloc(t * t * 4)
    for p in range(passes):
        for y in range(0, height, t):
            for x in range(0, width, t):
                tile = np.ascontiguousarray(img[y:y + t, x:x + t])
                cuda.memcpy_htod(d_in, tile)
                launch(d_in, t, d_out, t, t, t, p)
                result = np.empty((t, t), np.float32)
                cuda.memcpy_dtoh(result, d_out)
                out[p, y:y + t, x:x + t] = result
                stats.add(p, y // t, x // t, result)


def pinned(img, out, stats, t):
    passes, (height, width) = out.shape[0], img.shape
    h_in = cuda.pagelocked_empty((t, t), np.float32)
    h_out = cuda.pagelocked_empty((t, t), np.float32)
    d_in = cuda.mem_alloc(t * t * 4)
    d_out = cuda.mem_alloc(t * t * 4)
    for p in range(passes):
        for y in range(0, height, t):
            for x in range(0, width, t):
                np.copyto(h_in, img[y:y + t, x:x + t])
                cuda.memcpy_htod(d_in, h_in)
                launch(d_in, t, d_out, t, t, t, p)
                cuda.memcpy_dtoh(h_out, d_out)
                out[p, y:y + t, x:x + t] = h_out
                stats.add(p, y // t, x // t, h_out)


def pinned_async(img, out, stats, t):
    plan = tile_plan(out.shape[0], *img.shape, t)
    h_in = [cuda.pagelocked_empty((t, t), np.float32) for _ in range(2)]
    h_out = [cuda.pagelocked_empty((t, t), np.float32) for _ in range(2)]
    d_in = [cuda.mem_alloc(t * t * 4) for _ in range(2)]
    d_out = [cuda.mem_alloc(t * t * 4) for _ in range(2)]
    streams = [cuda.Stream() for _ in range(2)]
    done = [cuda.Event() for _ in range(2)]

    def issue(i):
        p, y, x = plan[i]
        b, s = i % 2, streams[i % 2]
        np.copyto(h_in[b], img[y:y + t, x:x + t])  # tile i - 2, the last to use buffer b, was waited on already
        cuda.memcpy_htod_async(d_in[b], h_in[b], s)
        launch(d_in[b], t, d_out[b], t, t, t, p, s)
        cuda.memcpy_dtoh_async(h_out[b], d_out[b], s)
        done[b].record(s)

    issue(0)
    for i, (p, y, x) in enumerate(plan):
        if i + 1 < len(plan):
            issue(i + 1)  # staged by the host and uploaded while tile i's kernel runs
        done[i % 2].synchronize()
        out[p, y:y + t, x:x + t] = h_out[i % 2]
        stats.add(p, y // t, x // t, h_out[i % 2])


def _libcuda():
    lib = ctypes.CDLL("libcuda.so.1")
    register = getattr(lib, "cuMemHostRegister_v2", None) or lib.cuMemHostRegister
    register.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint]
    register.restype = ctypes.c_int
    lib.cuMemHostUnregister.argtypes = [ctypes.c_void_p]
    lib.cuMemHostUnregister.restype = ctypes.c_int
    return register, lib.cuMemHostUnregister


def page_lock(arrays):
    """Page-lock the (page-aligned, contiguous) arrays in place; returns the function that unlocks them."""
    if PYCUDA_VERSION < (2024, 1, 1):
        locked = [cuda.register_host_memory(a) for a in arrays]  # each shares a's memory; its .base the registration

        def release():
            for a in locked:
                a.base.unregister()
    else:
        register, unregister = _libcuda()
        ptrs = []
        for a in arrays:
            err = register(a.ctypes.data, a.nbytes, 0)
            if err != 0:
                sys.exit(f"pycuda_tiles: cuMemHostRegister failed: CUresult {err}")
            ptrs.append(a.ctypes.data)

        def release():
            for ptr in ptrs:
                err = unregister(ptr)
                if err != 0:
                    sys.exit(f"pycuda_tiles: cuMemHostUnregister failed: CUresult {err}")
    return release


def registered(img, out, stats, t):
    release = page_lock([img, out])
    try:
        plan = tile_plan(out.shape[0], *img.shape, t)
        d_in = [cuda.mem_alloc(t * t * 4) for _ in range(2)]
        d_out = [cuda.mem_alloc(t * t * 4) for _ in range(2)]
        streams = [cuda.Stream() for _ in range(2)]
        done = [cuda.Event() for _ in range(2)]

        def issue(i):
            p, y, x = plan[i]
            b, s = i % 2, streams[i % 2]
            up = cuda.Memcpy2D()
            up.set_src_host(img[y:y + t, x:x + t])
            up.src_pitch = img.strides[0]
            up.set_dst_device(d_in[b])
            up.dst_pitch = t * 4
            up.width_in_bytes = t * 4
            up.height = t
            up(s)
            launch(d_in[b], t, d_out[b], t, t, t, p, s)
            down = cuda.Memcpy2D()
            down.set_src_device(d_out[b])
            down.src_pitch = t * 4
            down.set_dst_host(out[p, y:y + t, x:x + t])
            down.dst_pitch = out.strides[1]
            down.width_in_bytes = t * 4
            down.height = t
            down(s)
            done[b].record(s)

        issue(0)
        for i, (p, y, x) in enumerate(plan):
            if i + 1 < len(plan):
                issue(i + 1)
            done[i % 2].synchronize()
            stats.add(p, y // t, x // t, out[p, y:y + t, x:x + t])
    finally:
        cuda.Context.synchronize()
        release()


def resident(img, out, stats, t):
    passes, (height, width) = out.shape[0], img.shape
    d_img = cuda.mem_alloc(img.nbytes)
    cuda.memcpy_htod(d_img, img)
    d_res = cuda.mem_alloc(img.nbytes)
    for p in range(passes):
        for y in range(0, height, t):
            for x in range(0, width, t):
                offset = (y * width + x) * 4
                launch(np.intp(int(d_img) + offset), width, np.intp(int(d_res) + offset), width, t, t, p)
        cuda.memcpy_dtoh(out[p], d_res)
        for y in range(0, height, t):
            for x in range(0, width, t):
                stats.add(p, y // t, x // t, out[p, y:y + t, x:x + t])

# }}}


def check(img, out, stats, weights, t) -> None:
    """Each pass's tile sums against its plane's sum; the first, a middle and the last tile of each pass against
    numpy's filter of the input tile and against their statistics. Exit 1 naming a mismatch."""
    passes, height, width = out.shape
    ty_n, tx_n = height // t, width // t
    for p in range(passes):
        plane = float(out[p].sum(dtype=np.float64))
        tiles = float(stats.sums[p].sum())
        if not (np.isfinite(plane) and abs(plane - tiles) <= 1e-9 * abs(plane) + 1e-6):
            sys.exit(f"pycuda_tiles: pass {p}: the output plane sums to {plane!r}, its tiles' sums to {tiles!r}")
        for ty, tx in ((0, 0), (ty_n // 2, tx_n // 3), (ty_n - 1, tx_n - 1)):
            y, x = ty * t, tx * t
            src = img[y:y + t, x:x + t]
            got = out[p, y:y + t, x:x + t]
            want = filter_tile(src, weights[p])
            bound = 1e-5 * float(np.abs(weights[p]).sum()) * float(np.abs(src).max()) + 1e-6
            diff = np.abs(got - want)
            if not (diff <= bound).all():  # NaN fails too
                iy, ix = np.unravel_index(int(np.argmax(np.where(np.isnan(diff), np.inf, diff))), diff.shape)
                sys.exit(f"pycuda_tiles: pass {p}, tile ({ty}, {tx}): the kernel's output differs from numpy's at "
                         f"({y + iy}, {x + ix}): {got[iy, ix]:.7g} vs {want[iy, ix]:.7g} (bound {bound:.3g})")
            s, m = float(got.sum(dtype=np.float64)), got.max()
            if not (abs(stats.sums[p, ty, tx] - s) <= 1e-9 * abs(s) and stats.maxes[p, ty, tx] == m):
                sys.exit(f"pycuda_tiles: pass {p}, tile ({ty}, {tx}): its statistics (sum "
                         f"{stats.sums[p, ty, tx]!r}, max {stats.maxes[p, ty, tx]!r}) are not the output's "
                         f"({s!r}, {m!r})")


def numpy_backend(passes: int):
    """Stand-ins for pycuda.driver and the compiled kernel with numpy underneath (--numpy-only).

    Device memory is numpy memory, addressed by its real address (so pointers, offsets and pitches are exercised);
    an access outside one allocation raises. Work queued on a Stream (asynchronous copies, kernels, events) runs only
    when the stream, an event recorded on it or the context is synchronised, or a synchronous call (which, like the
    legacy default stream, first finishes every stream) is made. Asynchronous copies are refused unless their host
    memory is page-locked (pagelocked_empty, or registered with register_host_memory)."""
    as_strided = np.lib.stride_tricks.as_strided
    allocations = {}  # id -> the uint8 buffer of a live fake device allocation
    locked = {}  # start address -> end address of page-locked host memory
    streams = []

    class DeviceAllocation:
        def __init__(self, nbytes: int):
            self._buf = np.full(max(int(nbytes), 1), 0xFF, np.uint8)  # NaN as float32: stale reads show
            allocations[id(self)] = self._buf

        def __int__(self):
            return self._buf.ctypes.data

        __index__ = __int__

        def __del__(self):
            allocations.pop(id(self), None)

    def device_rows(ptr, rows, row_bytes, pitch):
        """rows x row_bytes uint8 view of fake device memory at ptr, rows pitch bytes apart."""
        ptr, extent = int(ptr), (rows - 1) * pitch + row_bytes
        for buf in allocations.values():
            start = buf.ctypes.data
            if start <= ptr and ptr + extent <= start + buf.nbytes:
                return as_strided(buf[ptr - start:], (rows, row_bytes), (pitch, 1))
        raise RuntimeError(f"numpy-only: {extent} bytes at {ptr:#x} are not inside one device allocation")

    def host_rows(view, rows, row_bytes, pitch, offset=0):
        """rows x row_bytes uint8 view of host memory from view's first byte + offset, rows pitch bytes apart."""
        root = view
        while isinstance(root.base, np.ndarray):
            root = root.base
        if not root.flags.c_contiguous:
            raise RuntimeError("numpy-only: a host buffer whose memory is not one contiguous array")
        flat = root.reshape(-1).view(np.uint8)
        off, extent = view.ctypes.data - flat.ctypes.data + offset, (rows - 1) * pitch + row_bytes
        if off < 0 or off + extent > flat.nbytes:
            raise RuntimeError("numpy-only: a 2D copy reaches outside its host array")
        return as_strided(flat[off:], (rows, row_bytes), (pitch, 1))

    def contiguous_bytes(a, writable=False):
        if not isinstance(a, np.ndarray) or not (a.flags.c_contiguous or a.flags.f_contiguous):
            raise BufferError("numpy-only: memcpy needs a contiguous buffer (as pycuda's PyBUF_ANY_CONTIGUOUS)")
        if writable and not a.flags.writeable:
            raise BufferError("numpy-only: memcpy into a read-only buffer")
        return a.reshape(-1, order="A").view(np.uint8)

    def require_locked(a, extent):
        start = a.ctypes.data
        if not any(s <= start and start + extent <= e for s, e in locked.items()):
            raise RuntimeError("numpy-only: an asynchronous copy from or to host memory that is not page-locked")

    def flush_all():
        for s in streams:
            s.synchronize()

    class Stream:
        def __init__(self, flags=0):
            self.ops, self.done = [], 0
            streams.append(self)

        def enqueue(self, op):
            self.ops.append(op)

        def run_until(self, mark):
            while self.done < mark:
                op = self.ops[self.done]
                self.done += 1
                op()

        def synchronize(self):
            self.run_until(len(self.ops))

    class Event:
        def __init__(self, flags=0):
            self.stream, self.mark = None, 0

        def record(self, stream=None):
            if stream is None:
                flush_all()
                self.stream = None
            else:
                self.stream, self.mark = stream, len(stream.ops)
            return self

        def synchronize(self):
            if self.stream is not None:
                self.stream.run_until(self.mark)
            return self

    def submit(op, stream):
        """Run op now, as a synchronous call on the legacy default stream, or queue it on stream."""
        if stream is None:
            flush_all()
            op()
        else:
            stream.enqueue(op)

    def memcpy_htod(dst, src, stream=None):
        data = contiguous_bytes(src).copy() if stream is None else contiguous_bytes(src)
        if stream is not None:
            require_locked(src, data.nbytes)

        def op():
            device_rows(dst, 1, data.nbytes, data.nbytes)[0] = data
        submit(op, stream)

    def memcpy_dtoh(dst, src, stream=None):
        data = contiguous_bytes(dst, writable=True)
        if stream is not None:
            require_locked(dst, data.nbytes)

        def op():
            data[:] = device_rows(src, 1, data.nbytes, data.nbytes)[0]
        submit(op, stream)

    class Memcpy2D:
        def __init__(self):
            self.src_x_in_bytes = self.src_y = self.dst_x_in_bytes = self.dst_y = 0
            self.src_pitch = self.dst_pitch = self.width_in_bytes = self.height = 0
            self._src = self._dst = None

        def set_src_host(self, a):
            self._src = ("host", a)

        def set_src_device(self, ptr):
            self._src = ("device", int(ptr))

        def set_dst_host(self, a):
            if not a.flags.writeable:
                raise BufferError("numpy-only: a 2D copy into a read-only buffer")
            self._dst = ("host", a)

        def set_dst_device(self, ptr):
            self._dst = ("device", int(ptr))

        def _rows(self, end, x, y, pitch, stream):
            kind, where = end
            offset = y * pitch + x
            if kind == "host":
                if stream is not None:
                    require_locked(where, offset + (self.height - 1) * pitch + self.width_in_bytes)
                return lambda: host_rows(where, self.height, self.width_in_bytes, pitch, offset)
            return lambda: device_rows(where + offset, self.height, self.width_in_bytes, pitch)

        def __call__(self, stream=None, aligned=False):
            if self.width_in_bytes > min(self.src_pitch, self.dst_pitch):
                raise ValueError("numpy-only: a 2D copy wider than its pitch")
            src = self._rows(self._src, self.src_x_in_bytes, self.src_y, self.src_pitch, stream)
            dst = self._rows(self._dst, self.dst_x_in_bytes, self.dst_y, self.dst_pitch, stream)
            if stream is None:
                data = src().copy()
                submit(lambda: dst().__setitem__(Ellipsis, data), None)
            else:
                submit(lambda: dst().__setitem__(Ellipsis, src()), stream)

    weights_alloc = DeviceAllocation(passes * 25 * 4)

    def filter5(src, src_pitch, dst, dst_pitch, w, h, p, block, grid, stream=None):
        w, h, p = int(w), int(h), int(p)
        if grid[0] * block[0] < w or grid[1] * block[1] < h or not 0 <= p < passes:
            raise ValueError("numpy-only: the launch does not cover the tile, or the pass has no weights")

        def op():
            k = device_rows(weights_alloc, 1, passes * 100, passes * 100)[0].view(np.float32).reshape(passes, 5, 5)
            x = device_rows(src, h, w * 4, int(src_pitch) * 4).view(np.float32)
            y = device_rows(dst, h, w * 4, int(dst_pitch) * 4).view(np.float32)
            y[...] = filter_tile(x, k[p])
        submit(op, stream)

    def pagelocked_empty(shape, dtype, order="C", mem_flags=0):
        a = np.full(shape, np.nan, dtype, order=order)
        locked[a.ctypes.data] = a.ctypes.data + a.nbytes
        return a

    def aligned_empty(shape, dtype, order="C", alignment=4096):
        nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
        raw = np.empty(nbytes + alignment, np.uint8)
        start = -raw.ctypes.data % alignment
        return raw[start:start + nbytes].view(dtype).reshape(shape, order=order)

    def register_host_memory(a, flags=0):
        if not a.flags.c_contiguous or a.ctypes.data % 4096:
            raise RuntimeError("numpy-only: register_host_memory needs a contiguous, page-aligned array")
        start = a.ctypes.data
        locked[start] = start + a.nbytes
        return types.SimpleNamespace(base=types.SimpleNamespace(unregister=lambda: locked.pop(start)))

    fake = types.SimpleNamespace(
        mem_alloc=DeviceAllocation, memcpy_htod=memcpy_htod, memcpy_dtoh=memcpy_dtoh,
        memcpy_htod_async=lambda dst, src, stream=None: memcpy_htod(dst, src, stream),
        memcpy_dtoh_async=lambda dst, src, stream=None: memcpy_dtoh(dst, src, stream),
        Memcpy2D=Memcpy2D, Stream=Stream, Event=Event, pagelocked_empty=pagelocked_empty,
        aligned_empty=aligned_empty, register_host_memory=register_host_memory,
        Context=types.SimpleNamespace(synchronize=flush_all))
    module = types.SimpleNamespace(get_function=lambda name: filter5,
                                   get_global=lambda name: (weights_alloc, passes * 25 * 4))
    return fake, module


def main():
    global cuda, FILTER, PYCUDA_VERSION
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", choices=MODES, default=MODES[0])
    ap.add_argument("--height", type=int, default=16384)
    ap.add_argument("--width", type=int, default=16384)
    ap.add_argument("--tile", type=int, default=2048)
    ap.add_argument("--passes", type=int, default=2)
    ap.add_argument("--numpy-only", action="store_true", help="numpy standing in for pycuda, on the CPU")
    args = ap.parse_args()
    t, passes = args.tile, args.passes
    if t < 8 or args.height % t or args.width % t or passes < 1:
        ap.error("--tile (at least 8) must divide --height and --width; --passes at least 1")

    if args.numpy_only:
        cuda, module = numpy_backend(passes)
        PYCUDA_VERSION = (2022, 1)  # the register_host_memory path
    elif cuda is None:
        sys.exit("pycuda_tiles: pycuda is not installed (--numpy-only runs the modes' logic with numpy)")
    else:
        importlib.import_module("pycuda.autoinit")  # creates the context
        module = SourceModule(KERNEL_SOURCE % {"passes": passes})
        PYCUDA_VERSION = pycuda.VERSION
    FILTER = module.get_function("filter5")
    weights = filter_weights(passes)
    weights_ptr, weights_bytes = module.get_global("weights")
    if weights_bytes != weights.nbytes:
        sys.exit(f"pycuda_tiles: the kernel's weights take {weights_bytes} bytes, not {weights.nbytes}")
    cuda.memcpy_htod(weights_ptr, weights)

    # the image (seeded) and the output image: page-aligned host memory (as registered needs; the same in every mode)
    img = cuda.aligned_empty((args.height, args.width), np.float32)
    np.random.default_rng(20261209).random(dtype=np.float32, out=img)
    out = cuda.aligned_empty((passes, args.height, args.width), np.float32)
    out.fill(np.nan)
    stats = TileStats(passes, args.height // t, args.width // t)

    # warm-up: the kernel once on a small tile (the module is loaded, the launch path warm)
    w = min(64, t)
    d_a, d_b, res = cuda.mem_alloc(w * w * 4), cuda.mem_alloc(w * w * 4), np.empty((w, w), np.float32)
    cuda.memcpy_htod(d_a, np.ascontiguousarray(img[:w, :w]))
    launch(d_a, w, d_b, w, w, w, 0)
    cuda.memcpy_dtoh(res, d_b)
    del d_a, d_b, res

    run = {"as_written": as_written, "pinned": pinned, "pinned_async": pinned_async, "registered": registered,
           "resident": resident}[args.mode]
    cuda.Context.synchronize()
    start = time.perf_counter()
    run(img, out, stats, t)
    cuda.Context.synchronize()
    loop_s = time.perf_counter() - start

    check(img, out, stats, weights, t)
    total = sum(float(out[p].sum(dtype=np.float64)) for p in range(passes))
    total += float(stats.sums.sum()) + float(stats.maxes.sum(dtype=np.float64))
    print(json.dumps({"program": "pycuda_tiles", "mode": args.mode, "loop_s": round(loop_s, 6),
                      "checksum": float(f"{total:.10g}")}))


if __name__ == "__main__":
    main()

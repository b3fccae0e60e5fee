"""``lifecycle``: a buffer's whole life under one host-memory strategy, as a workload uses it.

alloc → host_init → [h2d → kernel × reuse → d2h → host_turn] × iterations → host_read → free,
each phase timed and NVTX-ranged (a phase entered in several iterations counts once per
sample, summed). h2d/d2h are explicit copies for pageable / pinned / write-combined,
cuMemPrefetchAsync for managed-prefetch, and absent where kernels reach the data in place
(zero-copy, mapped, managed on demand, system).

The workload axes (see :mod:`umprof.model.workload`): each kernel pass reads and writes the words
``pattern`` selects in the ``touched`` fraction of the buffer's 64 KiB pages; with
``pingpong = "yes"`` the host reads the GPU's output and updates it (x += 1) between
iterations, so the data crosses to the host and back each time; with "no" the iterations
only repeat the kernel passes. The host's final read-back is checked against the exact
expected values.
"""

from __future__ import annotations

import math

import numpy as np

from umprof.core.axes import AxisSet, AxisSpec
from umprof.core.errors import CaseSkipped
from umprof.core.memo import bytes_bounded_cache
from umprof.measure import strategies
from umprof.measure.ops.base import CaseRun, Op, register
from umprof.measure.ops.checks import check_readback, spot_indices

BLOCK = 256
PATTERNS = ("streaming", "strided", "random", "warp-pages")  # how touch_pass walks the touched pages
PAGE_BYTES = 64 * 1024  # the granule of `touched`: whole pages of this size are touched or not
PAGE_WORDS = PAGE_BYTES // 4
PATTERN_CODE = {name: i for i, name in enumerate(PATTERNS)}
# initial values and expected outputs kept for the cases that share them (every strategy of a workload)
REFERENCE_CACHE_BYTES = 3 * 1024**3


def lifecycle_expected(x0: np.ndarray, reuse: int) -> np.ndarray:
    """x → 3x + 1 (mod 2**32) applied ``reuse`` times, in closed form: A·x + B."""
    a = pow(3, reuse, 2**32)
    b = (pow(3, reuse, 2**33) - 1) // 2 % 2**32  # (3^r - 1) / 2 mod 2^32
    return x0 * np.uint32(a) + np.uint32(b)


@bytes_bounded_cache(REFERENCE_CACHE_BYTES)
def initial_pattern(n: int) -> np.ndarray:
    """Distinct, non-zero-ish uint32 values (a Knuth multiplicative hash of the index)."""
    return (np.arange(n, dtype=np.uint32) * np.uint32(2654435761)) + np.uint32(12345)


def touched_pages(pages: int, fraction: float) -> np.ndarray:
    """Boolean mask of the pages a kernel touches when it reads ``fraction`` of them, spread
    evenly: page p when floor((p+1)·f) > floor(p·f)."""
    p = np.arange(pages, dtype=np.float64)
    return np.floor((p + 1) * fraction) > np.floor(p * fraction)


def selected_words(n_words: int, fraction: float, pattern: str, stride: int | None) -> np.ndarray:
    """Boolean mask of the words one pass of ``touch_pass`` updates."""
    pages = touched_pages(n_words // PAGE_WORDS, fraction)
    mask = np.repeat(pages, PAGE_WORDS)
    if pattern == "strided":
        mask &= (np.arange(n_words) % stride) == 0
    return mask


def random_multiplier(m: int) -> int:
    """A multiplier coprime to m, near m's golden section: slot q → q·mult mod m is a bijection
    that sends neighbouring slots far apart."""
    mult = max(1, int(m * 0.6180339887)) | 1
    while math.gcd(mult, m) != 1:
        mult += 1
    return mult


def random_order(m: int, page_words: int = PAGE_WORDS) -> np.ndarray:
    """The (page slot, word) ``touch_pass``'s random pattern visits, in thread order (as
    the kernel computes them), for tests: every pair exactly once."""
    i = np.arange(m * page_words, dtype=np.uint64)
    q, w = i % np.uint64(m), i // np.uint64(m)
    slot = (q * np.uint64(random_multiplier(m))) % np.uint64(m)
    word = (w * np.uint64(2654435761) + q) & np.uint64(page_words - 1)
    return slot * np.uint64(page_words) + word


def expected_after(x0: np.ndarray, mask: np.ndarray, reuse: int, iterations: int, pingpong: bool) -> np.ndarray:
    """The buffer the host reads at the end: ``reuse`` passes on the masked words per iteration,
    and with ping-pong the host's x += 1 between iterations."""
    if not pingpong:
        out = x0.copy()
        out[mask] = lifecycle_expected(x0[mask], reuse * iterations)
        return out
    out = x0.copy()
    for it in range(iterations):
        if it:
            out += np.uint32(1)
        out[mask] = lifecycle_expected(out[mask], reuse)
    return out


@bytes_bounded_cache(REFERENCE_CACHE_BYTES)
def _reference(n: int, reuse: int, fraction: float = 1.0, pattern: str = "streaming", stride: int | None = None,
               iterations: int = 1, pingpong: bool = False):
    """(initial values, expected checksum, spot indices, expected spot values), shared by
    every strategy's case of the same workload: computed once, outside timing."""
    x0 = initial_pattern(n)
    if fraction == 1.0 and pattern != "strided":
        mask = np.ones(n, dtype=bool)
    else:
        mask = selected_words(n, fraction, pattern, stride)
    expected = expected_after(x0, mask, reuse, iterations, pingpong)
    idx = spot_indices(n)
    return x0, int(expected.sum(dtype=np.uint64)), idx, expected[idx]


def grid_for(n_elems: int, sms: int) -> int:
    """Blocks for the grid-stride kernel: enough to fill the GPU, no more than the work."""
    return max(1, min((n_elems // 4 + BLOCK - 1) // BLOCK, sms * 16))


class LifecycleRun(CaseRun):
    def __init__(self, ctx, case):
        super().__init__()
        p = case.params
        self.session = s = ctx.session
        self.strategy = self.use_strategy(p["strategy"], ctx.info)
        self.nbytes, self.reuse = p["bytes"], p["reuse"]
        self.fraction, self.pattern = p.get("touched", 1.0), p.get("pattern", "streaming")
        self.stride = p.get("stride")
        self.iterations, self.pingpong = p.get("iterations", 1), p.get("pingpong", "no") == "yes"
        if self.nbytes % 4:
            raise CaseSkipped("lifecycle needs a multiple of 4 bytes (uint32 elements)")
        self.n = self.nbytes // 4
        opts = tuple(ctx.scenario.compile_options)
        if not needs_touch_pass(self.fraction, self.pattern):  # every word once, in order: the whole-buffer kernel
            self.kernel = ctx.kernels.get(ctx.scenario.kernel, OP.kernel_signature, opts)
            self.args = (self.n,)
            selected = self.n
        else:
            if self.nbytes % PAGE_BYTES:
                raise CaseSkipped(f"a touched fraction or pattern needs a multiple of {PAGE_BYTES // 1024} KiB, "
                                  f"got {self.nbytes} bytes")
            if self.pattern == "strided" and (self.stride & (self.stride - 1) or self.stride > PAGE_WORDS):
                raise CaseSkipped(f"stride must be a power of two up to {PAGE_WORDS} words, got {self.stride}")
            pages = np.flatnonzero(touched_pages(self.n // PAGE_WORDS, self.fraction)).astype(np.uint32)
            if not pages.size:
                raise CaseSkipped(f"touched={self.fraction} selects no page of a {self.nbytes}-byte buffer")
            self.pages = s.cuda.to_device(pages)
            m = int(pages.size)
            self.kernel = ctx.kernels.get(TOUCH_KERNEL, TOUCH_SIGNATURE, opts)
            self.args = (self.pages, m, PAGE_WORDS, PATTERN_CODE[self.pattern], self.stride or 1,
                         random_multiplier(m))
            selected = m * PAGE_WORDS // (self.stride if self.pattern == "strided" else 1)
        self.selected_bytes = 4 * selected
        self.grid = grid_for(selected, ctx.info.sms)
        self.x0, self.expected_sum, self.spot_idx, self.spot_expected = _reference(
            self.n, self.reuse, self.fraction, self.pattern, self.stride, self.iterations, self.pingpong)
        self.extra.update(registers=self.kernel.registers, grid=self.grid, block=BLOCK,
                          touched_bytes=self.selected_bytes)
        self._got = None

    def sample(self, timer):
        s, st, n = self.session, self.strategy, self.nbytes
        # an in-place pass over the link reads host→GPU and writes GPU→host: both directions at once
        kernel_ceiling = strategies.kernel_ceiling(st, in_place=True)
        with timer.phase("alloc", gpu=False):
            buf = st.allocate(s, n)
        try:
            view = buf.view(np.uint32)
            with timer.phase("host_init", gpu=False):
                view[:] = self.x0
            for it in range(self.iterations):
                if st.moves_data and (it == 0 or self.pingpong):
                    with timer.phase("h2d", bytes=n, ceiling="pcie"):
                        st.to_device(s, buf)
                with timer.phase("kernel", bytes=2 * self.selected_bytes * self.reuse, ceiling=kernel_ceiling):
                    for _ in range(self.reuse):
                        self.kernel.launch(self.grid, BLOCK, buf.device_ptr, *self.args, stream=s.stream)
                if self.pingpong and it < self.iterations - 1:
                    if st.moves_data:
                        with timer.phase("d2h", bytes=n, ceiling="pcie"):
                            st.to_host(s, buf)
                    with timer.phase("host_turn", gpu=False):  # the host reads the output and updates it
                        view.sum(dtype=np.uint64)
                        view += np.uint32(1)
            if st.moves_data:
                with timer.phase("d2h", bytes=n, ceiling="pcie"):
                    st.to_host(s, buf)
            with timer.phase("host_read", gpu=False):
                total = int(view.sum(dtype=np.uint64))
                spots = view[self.spot_idx]
            self._got = (total, spots)
        finally:
            with timer.phase("free", gpu=False):
                st.free(s, buf)

    def verify(self):
        total, spots = self._got
        check_readback("kernel output", total, spots, self.spot_idx, self.spot_expected, self.expected_sum)

    def close(self):
        pages = getattr(self, "pages", None)
        if pages is not None:
            pages.free()
            self.pages = None


TOUCH_KERNEL = "lifecycle.cu:touch_pass"
TOUCH_SIGNATURE = "PPQIiIQ"


def needs_touch_pass(fraction: float, pattern: str) -> bool:
    """Any workload but the whole buffer streamed runs ``touch_pass``; that one, ``scale_inplace``."""
    return fraction != 1.0 or pattern != "streaming"


def _lifecycle_kernels(scenario):
    opts = tuple(scenario.compile_options)
    refs = [(scenario.kernel, OP.kernel_signature, opts)]
    if any(needs_touch_pass(f, p) for f in scenario.axes.get("touched", [1.0])
           for p in scenario.axes.get("pattern", ["streaming"])):
        refs.append((TOUCH_KERNEL, TOUCH_SIGNATURE, opts))
    return refs


def _lifecycle_merge(params):
    """The stride applies to the strided pattern alone; ping-pong needs a second iteration."""
    out = dict(params)
    if out.get("pattern") != "strided":
        out["stride"] = None
    if out.get("iterations", 1) == 1:
        out["pingpong"] = "no"
    return out


OP = register(Op(
    name="lifecycle",
    about="alloc → host init → [to device → kernel × reuse → to host → host turn] × iterations → host read → free",
    axes=AxisSet([
        AxisSpec("strategy", "choice", default=("pageable", "pinned", "zero-copy", "managed", "managed-prefetch"),
                 choices=tuple(strategies.STRATEGIES)),
        AxisSpec("bytes", "size", default=(64 * 1024**2,), minimum=4),
        AxisSpec("reuse", "int", default=(1,), minimum=1, maximum=1024, about="kernel passes per transfer"),
        AxisSpec("touched", "float", default=(1.0,), minimum=0.0, maximum=1.0,
                 about="fraction of the buffer's 64 KiB pages each pass touches", quiet_default=True),
        AxisSpec("pattern", "choice", default=("streaming",), choices=PATTERNS,
                 about="how a pass walks the touched pages", quiet_default=True),
        AxisSpec("stride", "int", default=(8,), minimum=1, maximum=PAGE_WORDS,
                 about="words between the words the strided pattern touches", quiet_default=True),
        AxisSpec("iterations", "int", default=(1,), minimum=1, maximum=1024, about="rounds of reuse passes", quiet_default=True),
        AxisSpec("pingpong", "choice", default=("no",), choices=("no", "yes"),
                 about="the host reads and updates the buffer between iterations", quiet_default=True),
    ]),
    default_kernel="lifecycle.cu:scale_inplace",
    kernel_signature="PQ",
    phases=("alloc", "host_init", "h2d", "kernel", "d2h", "host_turn", "host_read", "free"),
    counts_um=True,
    sample_rate=1.8e9,  # a 256 MiB lifecycle: ~150 ms on the H200 (pinned alloc and host passes dominate)
    run=LifecycleRun,
    kernels=_lifecycle_kernels,
    merge=_lifecycle_merge,
))

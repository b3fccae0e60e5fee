"""What the access-pattern ops share: the data their kernels read (and what they must
produce), device buffers, launch geometry and the L1 policy as a compile option."""

from __future__ import annotations

import functools

import numpy as np

from umprof.core.axes import AxisSpec
from umprof.measure.ops.base import CaseRun
from umprof.measure.ops.checks import check_equal

# -Xptxas -dlcm: ca caches global loads in L1, cg caches them in L2 only (seed 004)
CACHE_OPTIONS = {"default": (), "ca": ("-Xptxas", "-dlcm=ca"), "cg": ("-Xptxas", "-dlcm=cg")}
CACHE_AXIS = AxisSpec("cache", "choice", default=("default",), choices=tuple(CACHE_OPTIONS),
                      about="L1 policy of global loads: compiler default, -dlcm=ca (L1) or -dlcm=cg (L2 only)")


def options(scenario, cache: str = "default") -> tuple:
    """Compile options of a case: the scenario's, then the cache policy's."""
    return tuple(scenario.compile_options) + CACHE_OPTIONS[cache]


def variant_ref(source: str, variant: str) -> str:
    """The kernel of an op's variant axis value: ``layout.cu`` + ``copy-ldg`` → ``layout.cu:copy_ldg``."""
    return f"{source}:{variant.replace('-', '_')}"


def kernel_refs(scenario, refs: list[tuple[str, str]]) -> list[tuple[str, str, tuple]]:
    """Every (ref, signature) under every cache policy the scenario's cases use."""
    caches = scenario.axes.get("cache", ["default"])
    return [(ref, sig, options(scenario, c)) for c in caches for ref, sig in refs]


@functools.lru_cache(maxsize=2)
def small_ints(n_floats: int) -> np.ndarray:
    """Float32 values 0..7 from a hash of the index: ``(i * 2654435761 mod 2**32) >> 29``,
    what coalescing.cu's writes produce. Sums of them in float or double are exact."""
    i = np.arange(n_floats, dtype=np.uint32)
    return ((i * np.uint32(2654435761)) >> np.uint32(29)).astype(np.float32)


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def wave_grid(ctx, kernel, block: int, shared: int = 0) -> tuple[int, dict]:
    """Blocks that fill every SM once at the kernel's theoretical occupancy, and the occupancy."""
    occ = ctx.kernels.occupancy(kernel, block, shared)
    return max(1, ctx.info.sms * occ["blocks_per_sm"]), occ


class DeviceRun(CaseRun):
    """A case whose buffers live in device memory: ``self.mem`` allocates them, ``close`` frees
    them, ``check_output`` compares one with what numpy expects."""

    def __init__(self, session):
        super().__init__()
        self.session = session
        self.mem = DeviceArrays(session)

    def check_output(self, what: str, buf, expected: np.ndarray) -> None:
        """Copy ``buf`` back (shaped and typed like ``expected``) and compare element by element."""
        self.session.synchronize()
        check_equal(what, self.mem.download(buf, expected.shape, expected.dtype), expected)

    def close(self):
        self.mem.free()


class DeviceArrays:
    """Device allocations of one case, freed together."""

    def __init__(self, session):
        self.session = session
        self._all = []

    def alloc(self, nbytes: int, what: str):
        self.session.check_device_alloc(nbytes, what)
        buf = self.session.cuda.mem_alloc(max(1, nbytes))
        self._all.append(buf)
        return buf

    def upload(self, array: np.ndarray, what: str):
        buf = self.alloc(array.nbytes, what)
        self.session.cuda.memcpy_htod(buf, array)
        return buf

    def zeros(self, nbytes: int, what: str):
        buf = self.alloc(nbytes, what)
        self.session.cuda.memset_d8(buf, 0, max(1, nbytes))
        return buf

    def download(self, buf, shape, dtype) -> np.ndarray:
        out = np.empty(shape, dtype)
        self.session.cuda.memcpy_dtoh(out, buf)
        return out

    def free(self):
        for b in self._all:
            b.free()
        self._all.clear()

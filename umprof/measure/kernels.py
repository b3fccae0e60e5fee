"""CUDA kernels from kernels/*.cu: compiled and loaded once, before anything is timed.

A kernel is named ``FILE.cu:SYMBOL`` (symbols are ``extern "C"``). Compilation goes through
nvcc for the device's own architecture, cached on disk (:mod:`umprof.measure.cubins`), so no
JIT happens inside a timed region and a second run compiles nothing. Each loaded kernel reports its registers, local (spill) memory and shared
memory (the compiler's resource report, also checked without a GPU by :func:`resource_usage`).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from umprof.core.errors import UsageError
from umprof.core.resources import kernels_dir

BASE_OPTIONS = ["-lineinfo", "-std=c++17"]


def split_ref(ref: str) -> tuple[str, str]:
    file, _, symbol = ref.partition(":")
    if not file.endswith(".cu") or not symbol:
        raise UsageError(f"kernel {ref!r}: expected FILE.cu:SYMBOL")
    return file, symbol


def source_path(file: str) -> Path:
    p = Path(file)
    if not p.is_absolute():
        p = kernels_dir() / file
    if not p.is_file():
        raise UsageError(f"kernel file {file!r}: not found (looked in {p.parent})")
    return p


@dataclass
class Kernel:
    """A loaded kernel: its pycuda function, prepared with its argument format."""

    ref: str
    function: object
    cubin: bytes
    registers: int
    local_bytes: int
    shared_bytes: int
    max_threads_per_block: int
    options: tuple = ()

    def launch(self, grid, block, *args, stream=None, shared: int = 0):
        """Launch on the session's stream (grid and block as ints or tuples)."""
        grid = grid if isinstance(grid, tuple) else (int(grid), 1)
        block = block if isinstance(block, tuple) else (int(block), 1, 1)
        if LAUNCH_LOG is not None:  # `umprof run --ncu`: which case launched which kernel, in order
            LAUNCH_LOG.append(self.ref)
        self.function.prepared_async_call(grid, block, stream, *args, shared_size=shared)

    @property
    def symbol(self) -> str:
        return self.ref.partition(":")[2]


LAUNCH_LOG: list | None = None  # while a list, every launch's ref is appended (see logged_launches)


@contextmanager
def logged_launches():
    """Within the block, the refs of every kernel launched, in order (what `run --ncu` joins
    to Nsight Compute's list of profiled kernels)."""
    global LAUNCH_LOG
    LAUNCH_LOG = log = []
    try:
        yield log
    finally:
        LAUNCH_LOG = None


class KernelCache:
    """Compiles and loads each (file, options) once per session."""

    def __init__(self, session):
        self.session = session
        self._modules = {}
        self._kernels = {}
        self._cu_functions = {}
        self.compiled = 0  # modules nvcc compiled (the rest came from the disk cache)
        major, minor = session.device.compute_capability()
        self.arch = f"sm_{major}{minor}"

    def get(self, ref: str, signature: str, options: tuple = ()) -> Kernel:
        """The kernel ``FILE.cu:SYMBOL`` prepared with pycuda's ``signature`` (e.g. ``"PQ"``)."""
        key = (ref, signature, tuple(options))
        if key in self._kernels:
            return self._kernels[key]
        file, symbol = split_ref(ref)
        module, cubin = self._module(file, tuple(options))
        try:
            fn = module.get_function(symbol)
        except Exception:
            raise UsageError(f"kernel {ref!r}: no extern \"C\" symbol {symbol!r} in {file}") from None
        fn.prepare(signature)
        a = self.session.cuda.function_attribute
        k = Kernel(ref, fn, cubin, fn.get_attribute(a.NUM_REGS), fn.get_attribute(a.LOCAL_SIZE_BYTES),
                   fn.get_attribute(a.SHARED_SIZE_BYTES), fn.get_attribute(a.MAX_THREADS_PER_BLOCK), tuple(options))
        self._kernels[key] = k
        return k

    def occupancy(self, kernel: Kernel, block: int, shared: int = 0) -> dict:
        """Theoretical occupancy of ``kernel`` at ``block`` threads per block, from the driver's
        occupancy calculator (cuOccupancyMaxActiveBlocksPerMultiprocessor, through cuda-bindings):
        resident blocks per SM, and resident warps as a share of the SM's maximum."""
        from umprof.measure.gpu import check

        cu = self.session.cu
        fn = self._cu_functions.get(kernel.ref + repr(kernel.options))
        if fn is None:  # pycuda does not expose its CUfunction: load the same cubin through the driver API
            module = check(cu.cuModuleLoadData(kernel.cubin))
            fn = check(cu.cuModuleGetFunction(module, kernel.symbol.encode()))
            self._cu_functions[kernel.ref + repr(kernel.options)] = fn
        blocks = int(check(cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(fn, int(block), int(shared))))
        max_warps = (self.session.attribute("MAX_THREADS_PER_MULTIPROCESSOR", 2048) or 2048) // 32
        warps = blocks * (-(-int(block) // 32))
        return {"blocks_per_sm": blocks, "occupancy": min(1.0, warps / max_warps)}

    def _module(self, file, options):
        key = (file, options)
        if key not in self._modules:
            from umprof.measure.cubins import compile_cubin

            cubin, cached = compile_cubin(source_path(file), self.arch, BASE_OPTIONS + list(options))
            self.compiled += not cached
            self._modules[key] = (self.session.cuda.module_from_buffer(cubin), cubin)
        return self._modules[key]


# -- compile-only checks (no GPU): used by tests and `umprof kernels --check` ---------------------

_PTXAS_FN = re.compile(r"Compiling entry function '(\w+)' for '(sm_\d+a?)'")
_PTXAS_REGS = re.compile(r"Used (\d+) registers")
_PTXAS_SPILL = re.compile(r"(\d+) bytes spill stores, (\d+) bytes spill loads")
_PTXAS_STACK = re.compile(r"(\d+) bytes stack frame")


def resource_usage(path: Path, arch: str, options: list[str] = ()) -> dict[str, dict]:
    """Compile ``path`` to a cubin with ``-Xptxas -v`` and return, per kernel, its registers,
    stack frame and spill bytes. Needs nvcc, not a GPU."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        raise FileNotFoundError("nvcc is not on PATH")
    cmd = [nvcc, "-cubin", f"-arch={arch}", "-o", "/dev/null", "-Xptxas", "-v", *BASE_OPTIONS, *options, str(path)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"nvcc failed on {path.name} for {arch}:\n{proc.stderr}")
    out, current = {}, None
    for line in proc.stderr.splitlines():
        m = _PTXAS_FN.search(line)
        if m:
            current = out.setdefault(m.group(1), {"registers": 0, "spill_stores": 0, "spill_loads": 0, "stack": 0})
            continue
        if current is None:
            continue
        if (m := _PTXAS_REGS.search(line)):
            current["registers"] = int(m.group(1))
        if (m := _PTXAS_SPILL.search(line)):
            current["spill_stores"], current["spill_loads"] = int(m.group(1)), int(m.group(2))
        if (m := _PTXAS_STACK.search(line)):
            current["stack"] = int(m.group(1))
    return out

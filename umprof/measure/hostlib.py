"""umprof's host-side C code (``kernels/*.c``): compiled once into a shared library by nvcc (which hands
C files to the host's compiler), cached beside the cubins under the same key (the source, the options,
``nvcc --version``), and loaded with ctypes; and the CUDA driver's functions that such code calls,
taken from libcuda by name, so the C code needs no CUDA header or library to build.

ctypes lets go of Python's lock for the length of each call: threads the library starts run
alongside Python without waiting for it. Needs nvcc to build (CI builds it), a driver to call CUDA.
"""

from __future__ import annotations

import ctypes
import functools
import subprocess
import tempfile
from pathlib import Path

from umprof.core.errors import GpuUnavailable
from umprof.core.resources import kernels_dir
from umprof.measure.cubins import cache_dir, cache_key, nvcc_path, store

OPTIONS = ["-O3", "-shared", "-Xcompiler", "-fPIC,-pthread"]


def build(name: str) -> Path:
    """The shared library of ``kernels/<name>.c``, from the cache or compiled now."""
    nvcc = nvcc_path()
    src = kernels_dir() / f"{name}.c"
    cached = cache_dir() / f"{name}-host-{cache_key(src, 'host', OPTIONS, nvcc)}.so"
    if cached.is_file():
        return cached
    with tempfile.TemporaryDirectory(prefix="umprof-nvcc-") as tmp:
        out = Path(tmp) / f"{name}.so"
        proc = subprocess.run([nvcc, *OPTIONS, "-o", str(out), str(src)], capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"nvcc failed on {src.name}:\n{proc.stderr.strip()}")
        data = out.read_bytes()
        if store(cached, data):
            return cached
        # no cache to keep it in: a private copy that lives as long as the process
        keep = Path(tempfile.mkdtemp(prefix="umprof-hostlib-")) / out.name
        keep.write_bytes(data)
        return keep


@functools.lru_cache(maxsize=None)
def load(name: str) -> ctypes.CDLL:
    """``kernels/<name>.c`` loaded (built first where needed); once per process."""
    return ctypes.CDLL(str(build(name)))


@functools.lru_cache(maxsize=1)
def libcuda() -> ctypes.CDLL:
    """The driver's library: the one pycuda loaded, where it did."""
    try:
        return ctypes.CDLL("libcuda.so.1")
    except OSError as e:
        raise GpuUnavailable(f"the CUDA driver's library libcuda.so.1 could not be loaded: {e}") from e


def driver_table(names: tuple[str, ...]) -> ctypes.Array:
    """The addresses of the driver's functions ``names`` (their exported names, with any ``_v2``), in
    order, as the ``const void *const *`` a C function takes."""
    lib = libcuda()
    try:
        return (ctypes.c_void_p * len(names))(*(ctypes.cast(getattr(lib, n), ctypes.c_void_p).value for n in names))
    except AttributeError as e:
        raise GpuUnavailable(f"the CUDA driver lacks a function umprof calls: {e}") from e

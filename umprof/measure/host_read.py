"""The host's read of a buffer as a compiled program makes it (``kernels/host_read.c``): every 32-bit word
summed in turn into a double, the loop a C program's host runs over a kernel's output. umprof's ``loop`` op
reads with it where ``host_reader`` = words; numpy's vectorized sum is its other reader. Built by nvcc into
umprof's host library (:mod:`umprof.measure.hostlib`) at first use; needs no GPU.
"""

from __future__ import annotations

import ctypes
import functools

import numpy as np


@functools.lru_cache(maxsize=1)
def _library() -> ctypes.CDLL:
    from umprof.measure.hostlib import load

    lib = load("host_read")
    lib.umprof_sum_words.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    lib.umprof_sum_words.restype = ctypes.c_double
    return lib


def prepare() -> None:
    """Build or load the reader once, before anything is timed (nvcc's run, the library opened)."""
    _library()


def sum_words(words: np.ndarray) -> float:
    """The sum of a contiguous array of 32-bit unsigned words, added one after another into a double."""
    if words.dtype != np.uint32 or not words.flags.c_contiguous:
        raise ValueError(f"sum_words reads contiguous uint32 words, got {words.dtype} "
                         f"({'contiguous' if words.flags.c_contiguous else 'strided'})")
    return float(_library().umprof_sum_words(words.ctypes.data, words.size))

"""Output checks the ops share: which elements to compare one by one, and the verdict."""

from __future__ import annotations

import numpy as np

from umprof.core.errors import CaseFailed

SPOTS = 1024  # elements compared one by one, beside the checksum of all of them


def spot_indices(n: int) -> np.ndarray:
    """First, last and SPOTS random indices of an n-element buffer (seeded by n, so repeatable)."""
    rng = np.random.default_rng(n)
    return np.unique(np.concatenate([[0, n - 1], rng.integers(0, n, SPOTS)]))


def check_readback(what: str, total: int, spots: np.ndarray, idx: np.ndarray, expected_spots: np.ndarray,
                   expected_total: int) -> None:
    """Raise CaseFailed naming the first wrong element, or a checksum that differs."""
    bad = np.flatnonzero(spots != expected_spots)
    if bad.size:
        i = int(idx[bad[0]])
        raise CaseFailed(f"{what}: element {i} is {int(spots[bad[0]])}, expected {int(expected_spots[bad[0]])}")
    if total != expected_total:
        raise CaseFailed(f"{what}: checksum {total} != expected {expected_total}")


def read_u64(session, device_ptr) -> int:
    """One unsigned 64-bit value from device memory (a kernel's reduction result)."""
    got = np.zeros(1, np.uint64)
    session.cuda.memcpy_dtoh(got, device_ptr)
    return int(got[0])


def read_f64(session, ptr) -> float:
    """One double from device memory (a kernel's sum)."""
    got = np.zeros(1, np.float64)
    session.cuda.memcpy_dtoh(got, ptr)
    return float(got[0])


def check_equal(what: str, got: np.ndarray, expected: np.ndarray) -> None:
    """Raise CaseFailed naming the first element that differs."""
    if got.shape != expected.shape:
        raise CaseFailed(f"{what}: shape {got.shape}, expected {expected.shape}")
    bad = np.flatnonzero(got.ravel() != expected.ravel())
    if bad.size:
        i = int(bad[0])
        raise CaseFailed(f"{what}: {bad.size} wrong elements; element {i} is {got.ravel()[i]}, "
                         f"expected {expected.ravel()[i]}")


def check_sum(what: str, got: float, expected: float) -> None:
    """Exact sums (small integers in floating point) must match exactly."""
    if got != expected:
        raise CaseFailed(f"{what}: the GPU's sum is {got!r}, numpy's is {expected!r}")

"""The sector model: what a warp's addresses cost the memory system, computed on the CPU.

A warp issues one request per load or store instruction; the memory system serves it in
32-byte sectors (the unit of L2 and DRAM traffic since Maxwell/Pascal) grouped in 128-byte
lines (the unit of an L1-cached load on Fermi/Kepler, and what seed 001's gld_efficiency
counted). For each request the model counts the distinct sectors (or lines) the active
lanes touch and compares the bytes they asked for with the bytes fetched:

* efficiency = distinct bytes requested / (distinct units touched × unit size), the
  seeds' "bus utilization" and nvprof's gld/gst_efficiency;
* sectors per request, what Nsight Compute reports as
  ``l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum`` / ``..._requests_...``.

It ignores caches (an L1 hit on a sector fetched by another warp still counts), as the
seeds' hand calculations do. Addresses are byte offsets from a 256-byte-aligned base
(what cudaMalloc returns).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SECTOR = 32
LINE = 128
WARP = 32


@dataclass(frozen=True)
class Prediction:
    """The model's verdict on a set of warp requests."""

    requests: int
    requested_bytes: int
    sectors: int
    lines: int

    @property
    def sectors_per_request(self) -> float:
        return self.sectors / self.requests if self.requests else float("nan")

    @property
    def efficiency(self) -> float:
        """Bytes asked for ÷ bytes fetched in 32-byte sectors."""
        return self.requested_bytes / (self.sectors * SECTOR) if self.sectors else float("nan")

    @property
    def line_efficiency(self) -> float:
        """Bytes asked for ÷ bytes fetched in 128-byte lines (an L1-cached load on Fermi/Kepler)."""
        return self.requested_bytes / (self.lines * LINE) if self.lines else float("nan")


def _distinct_per_row(units: np.ndarray) -> int:
    """Sum over rows of the number of distinct non-negative values (−1 marks an inactive lane)."""
    if units.size == 0:
        return 0
    s = np.sort(units, axis=1)
    valid = s >= 0
    new = np.ones_like(s, dtype=bool)
    new[:, 1:] = s[:, 1:] != s[:, :-1]
    return int((new & valid).sum())


def predict(addresses: np.ndarray, width: int) -> Prediction:
    """The model for warp requests: ``addresses`` is (requests, 32) byte addresses, one row per
    warp-wide request, −1 for a lane that does not take part; ``width`` the bytes each lane
    accesses (naturally aligned: 4, 8 or 16)."""
    a = np.asarray(addresses, dtype=np.int64)
    if a.ndim == 1:
        a = a.reshape(1, -1)
    active = a >= 0
    requests = int(active.any(axis=1).sum())
    elems = np.where(active, a // width, -1)
    requested = _distinct_per_row(elems) * width
    # a lane's access covers [a, a + width); with natural alignment and width <= 32 it never
    # straddles a sector, but a misaligned wide access would: count both ends
    first, last = np.where(active, a // SECTOR, -1), np.where(active, (a + width - 1) // SECTOR, -1)
    sectors = _distinct_per_row(np.concatenate([first, last], axis=1))
    lfirst, llast = np.where(active, a // LINE, -1), np.where(active, (a + width - 1) // LINE, -1)
    lines = _distinct_per_row(np.concatenate([lfirst, llast], axis=1))
    return Prediction(requests, requested, sectors, lines)


# -- the access patterns of umprof's kernels ---------------------------------------------------

def lanes(warps: int = 64) -> np.ndarray:
    """Global thread ids of the first ``warps`` warps, shaped (warps, 32)."""
    return np.arange(warps * WARP, dtype=np.int64).reshape(warps, WARP)


def strided(width: int, stride: int = 1, offset: int = 0, warps: int = 64) -> np.ndarray:
    """Addresses of ``x[i * stride + offset]`` for thread i (1D grid, elements of ``width`` bytes)."""
    return (lanes(warps) * stride + offset) * width


def block_warps(block_x: int, block_y: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """(threadIdx.x, threadIdx.y) of each lane of each warp of a block, (warps, 32); lanes past
    the block's last thread are −1 (a partial warp)."""
    n = block_x * block_y
    warps = -(-n // WARP)
    lin = np.arange(warps * WARP, dtype=np.int64).reshape(warps, WARP)
    tx, ty = lin % block_x, lin // block_x
    tx[lin >= n] = -1
    ty[lin >= n] = -1
    return tx, ty


def grid_2d(block_x: int, block_y: int, blocks: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    """Global (x, y) of every lane of every warp of the given blocks (bx, by), (requests, 32)."""
    tx, ty = block_warps(block_x, block_y)
    xs, ys = [], []
    for bx, by in blocks:
        xs.append(np.where(tx >= 0, bx * block_x + tx, -1))
        ys.append(np.where(ty >= 0, by * block_y + ty, -1))
    return np.concatenate(xs), np.concatenate(ys)


def matrix_index(x: np.ndarray, y: np.ndarray, cols: int, order: str) -> np.ndarray:
    """Element index of (x, y) in a ``cols``-wide matrix: row-major ``y*cols + x`` or column-major
    ``x*cols + y`` (seed 001's two kernels); −1 where the lane is inactive."""
    idx = y * cols + x if order == "row" else x * cols + y
    return np.where((x >= 0) & (y >= 0), idx, -1)


def to_bytes(index: np.ndarray, width: int) -> np.ndarray:
    """Element indices → byte addresses, keeping −1 for inactive lanes."""
    return np.where(index >= 0, index * width, -1)


def columns(pred_ld: Prediction | None, pred_st: Prediction | None) -> dict:
    """The result columns of a case's predictions (absent side: no column)."""
    out = {}
    for side, p in (("ld", pred_ld), ("st", pred_st)):
        if p is None:
            continue
        out[f"pred_{side}_eff"] = p.efficiency
        out[f"pred_{side}_line_eff"] = p.line_efficiency
        out[f"pred_{side}_sectors_per_req"] = p.sectors_per_request
    return out

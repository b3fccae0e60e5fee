"""Figures from a ResultSet (matplotlib, no display needed): what a person would rather look at than read."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from umprof.core.results import AXIS_PREFIX, slug
from umprof.core.units import format_size
from umprof.model import crossover
from umprof.views.terminal import _nan


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")  # files only: works on machines without a display
    import matplotlib.pyplot as plt

    return plt


def um_figure(df: pd.DataFrame, title: str):
    """Time per case beside its GPU fault groups and CPU faults (one scenario with UM counters)."""
    plt = _pyplot()
    tot = df[(df["phase"] == "total") & (df["status"] == "ok")]
    labels = list(tot["case"])
    fig, (ax_t, ax_f) = plt.subplots(1, 2, figsize=(13, 0.42 * len(labels) + 1.6), sharey=True,
                                     gridspec_kw={"width_ratios": [3, 2]})
    y = range(len(labels))
    ax_t.barh(y, tot["time_median_s"] * 1e3, color="#1f77b4")
    ax_t.set_yticks(list(y), labels, fontsize=8)
    ax_t.invert_yaxis()
    ax_t.set_xlabel("time per sample, ms (median)")
    ax_t.set_xscale("log")
    h = 0.4
    ax_f.barh([i - h / 2 for i in y], tot["um_gpu_fault_groups"].fillna(0), height=h, color="#d62728", label="GPU fault groups")
    ax_f.barh([i + h / 2 for i in y], tot["um_cpu_faults"].fillna(0), height=h, color="#ff7f0e", label="CPU faults")
    ax_f.set_xlabel("faults per sample (median)")
    ax_f.set_xscale("symlog")
    ax_f.legend(loc="lower right", fontsize=8)
    for i, inc in enumerate(tot.get("um_incomplete", pd.Series([None] * len(tot)))):
        if inc is True:
            ax_f.annotate("lower bound: CUPTI lost records", (1, i), fontsize=7, color="grey", va="center")
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def _kernel_rows(df: pd.DataFrame) -> pd.DataFrame:
    return df[(df["phase"] == "kernel") & (df["status"] == "ok")]


def _varying(k: pd.DataFrame, axis: str) -> bool:
    col = AXIS_PREFIX + axis
    return col in k.columns and k[col].nunique() > 2


def sweep_figure(k: pd.DataFrame, axis: str, title: str, series: str | None = None, ceiling: float | None = None):
    """Kernel GB/s against one axis, a line per value of ``series``; the sector model's prediction
    (the best measured figure scaled by the predicted share of useful bytes) dashed beside it,
    and the measured device copy as a ceiling."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(9, 4.8))
    groups = k.groupby(AXIS_PREFIX + series, sort=False) if series else [("", k)]
    for i, (label, g) in enumerate(groups):
        g = g.sort_values(AXIS_PREFIX + axis)
        x = g[AXIS_PREFIX + axis]
        color = f"C{i}"
        ax.plot(x, g["bytes_per_s"] / 1e9, marker="o", ms=3, color=color, label=str(label) or "measured")
        if "net_bytes_per_s" in g.columns and g["net_bytes_per_s"].notna().any():
            ax.plot(x, g["net_bytes_per_s"] / 1e9, color=color, alpha=0.5, lw=1, label=f"{label} less empty-kernel time".strip())
        eff = _predicted_share(g)
        if eff is not None:
            ax.plot(x, g["bytes_per_s"].max() / 1e9 * eff, ls="--", color=color, alpha=0.7, lw=1,
                    label=f"{label} predicted (sector model)".strip())
    if ceiling:
        ax.axhline(ceiling / 1e9, color="grey", ls=":", lw=1, label="measured device copy")
    ax.set_xlabel(axis)
    ax.set_ylabel("GB/s (bytes the algorithm moves)")
    if axis in ("blocks",) or (k[AXIS_PREFIX + axis].max() / max(1, k[AXIS_PREFIX + axis].min()) > 64):
        ax.set_xscale("log", base=2)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(title)
    fig.tight_layout()
    return fig


def _predicted_share(g: pd.DataFrame):
    """Useful share of fetched bytes, loads and stores weighted alike; None when the model is absent."""
    cols = [c for c in ("pred_ld_eff", "pred_st_eff") if c in g.columns and g[c].notna().any()]
    if not cols:
        return None
    return g[cols].mean(axis=1)


def heatmap_figure(k: pd.DataFrame, title: str):
    """Kernel GB/s for every 2D block shape (block_x across, block_y down)."""
    plt = _pyplot()
    t = k.pivot_table(index=AXIS_PREFIX + "block_y", columns=AXIS_PREFIX + "block_x", values="bytes_per_s",
                      aggfunc="median") / 1e9
    fig, ax = plt.subplots(figsize=(8, 6))
    im = ax.imshow(t.values, cmap="viridis", origin="lower")
    ax.set_xticks(range(len(t.columns)), [str(int(c)) for c in t.columns])
    ax.set_yticks(range(len(t.index)), [str(int(c)) for c in t.index])
    ax.set_xlabel("block_x (threads)")
    ax.set_ylabel("block_y (threads)")
    for (i, j), v in pd.DataFrame(t.values).stack().items():  # stack() drops the shapes not measured
        ax.text(j, i, f"{v:.0f}", ha="center", va="center", fontsize=7, color="white" if v < t.values[~pd.isna(t.values)].max() / 2 else "black")
    fig.colorbar(im, ax=ax, label="kernel GB/s")
    ax.set_title(title)
    fig.tight_layout()
    return fig


def overlap_figure(g: pd.DataFrame, title: str):
    """Overlap efficiency for every streams × chunk size, one panel per kernel load (``compute``)."""
    plt = _pyplot()
    p = g[(g["phase"] == "pipelined") & (g["status"] == "ok")]
    loads = sorted(p[AXIS_PREFIX + "compute"].unique())
    fig, axes = plt.subplots(1, len(loads), figsize=(4.2 * len(loads) + 1, 4), squeeze=False)
    for ax, load in zip(axes[0], loads):
        t = p[p[AXIS_PREFIX + "compute"] == load].pivot_table(
            index=AXIS_PREFIX + "streams", columns=AXIS_PREFIX + "chunk", values="overlap_efficiency", aggfunc="median")
        im = ax.imshow(t.values * 100, cmap="viridis", origin="lower", vmin=0, vmax=100, aspect="auto")
        ax.set_xticks(range(len(t.columns)), [format_size(c) for c in t.columns], fontsize=8)
        ax.set_yticks(range(len(t.index)), [str(int(s)) for s in t.index])
        ax.set_xlabel("chunk")
        ax.set_ylabel("streams")
        kind = "copy-bound" if load < 0.5 else "compute-bound" if load > 2 else "balanced"
        ax.set_title(f"kernel = {load:g} x copy ({kind})", fontsize=9)
        for (i, j), v in pd.DataFrame(t.values).stack().items():
            ax.text(j, i, f"{v:.0%}", ha="center", va="center", fontsize=7, color="white" if v < 0.6 else "black")
    fig.colorbar(im, ax=list(axes[0]), label="overlap efficiency, % (busiest engine / wall)")
    fig.suptitle(title)
    return fig


def topology_figure(matrix: pd.DataFrame, title: str):
    """nvbandwidth's matrix as a heat map: GB/s from each source (down) to each destination."""
    plt = _pyplot()
    gbs = matrix.astype(float).values / 1e9
    from matplotlib.colors import LogNorm

    fig, ax = plt.subplots(figsize=(1.6 * len(matrix.columns) + 2.5, 1.2 * len(matrix.index) + 1.5))
    im = ax.imshow(gbs, cmap="viridis", norm=LogNorm())  # links and DRAM differ a hundredfold
    ax.set_xticks(range(len(matrix.columns)), list(matrix.columns))
    ax.set_yticks(range(len(matrix.index)), list(matrix.index))
    ax.set_xlabel("to")
    ax.set_ylabel("from")
    top = pd.DataFrame(gbs).max().max()
    for (i, j), v in pd.DataFrame(gbs).stack().items():
        if v == v:  # a cell not measured stays blank
            ax.text(j, i, f"{v:.0f}", ha="center", va="center", fontsize=9, color="white" if v < top / 10 else "black")
    fig.colorbar(im, ax=ax, label="GB/s per direction")
    ax.set_title(title)
    fig.tight_layout()
    return fig


def figures(rs, crossovers: bool = True, um: bool = True):
    """(file stem, figure) for every figure the result file supports (lifecycle sweeps with their
    crossovers and the unified-memory bars left out on request)."""
    device_copy = next((d.get("d2d_bytes_per_s") for d in rs.devices if d.get("d2d_bytes_per_s")), None)
    if crossovers:
        yield from crossover_figures(rs.frame)
    from umprof.model.topology import bandwidth_matrix

    matrix = bandwidth_matrix(rs.frame, rs.devices)
    if not matrix.empty:
        yield "topology", topology_figure(matrix, "GB/s between host and GPUs (copy engines; diagonal: device copy)")
    for name, g in rs.frame.groupby("scenario", sort=False):
        if (g["op"].iloc[0] == "overlap" and g[AXIS_PREFIX + "streams"].nunique() > 1
                and g[AXIS_PREFIX + "chunk"].nunique() > 1):
            yield f"{name}-efficiency", overlap_figure(g, f"{name}: overlap efficiency by streams and chunk size")
        if um and "um_gpu_fault_groups" in g.columns and not g["um_gpu_fault_groups"].map(_nan).all():
            yield f"{name}-um", um_figure(g, f"{name}: time and unified-memory faults per case")
        k = _kernel_rows(g)
        if k.empty:
            continue
        op = g["op"].iloc[0]
        if op in ("coalescing", "traversal"):
            series = "access" if op == "coalescing" else "order"
            for axis in ("stride", "offset", "threads", "blocks"):
                others = [c for c in k.columns if c.startswith(AXIS_PREFIX) and c not in
                          (AXIS_PREFIX + axis, AXIS_PREFIX + series) and k[c].nunique() > 1]
                if _varying(k, axis) and not others:  # one line per series, nothing else mixed in
                    yield (f"{name}-{axis}", sweep_figure(k, axis, f"{name}: kernel GB/s vs {axis}", series, device_copy))
        if op == "matrix_add" and _varying(k, "block_x") and _varying(k, "block_y"):
            yield f"{name}-blocks", heatmap_figure(k, f"{name}: kernel GB/s by 2D block shape")


def save_plots(rs, outdir: str | Path) -> list[Path]:
    """Every figure the result file supports, as PNGs under ``outdir``; their paths."""
    return save_figures(figures(rs), outdir)


def save_figures(stem_figures, outdir: str | Path) -> list[Path]:
    """(file stem, figure) pairs saved as PNGs under ``outdir`` and closed; their paths."""
    plt = _pyplot()
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    written = []
    for stem, fig in stem_figures:
        path = outdir / f"{stem}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written


def crossover_figure(t: pd.DataFrame, axis: str, title: str, crossings: pd.DataFrame | None = None):
    """Total time vs the axis, a line per strategy (log-log), crossings marked."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 5))
    for s in t.index:
        ax.plot(t.columns.astype(float), t.loc[s] * 1e3, marker="o", label=s)
    if crossings is not None:
        for _, c in crossings.iterrows():
            y = float(np.exp(np.interp(math.log(c["crossing"]), np.log(t.columns.astype(float)),
                                       np.log(t.loc[c["a"]].to_numpy(float) * 1e3))))
            ax.plot([c["crossing"]], [y], marker="x", color="black", markersize=10, mew=2)
            ax.annotate(f"{c['faster_below']} | {c['faster_above']}\n{crossover.format_value(axis, c['crossing'])}", (c["crossing"], y),
                        textcoords="offset points", xytext=(6, 8), fontsize=7)
    ax.set_xscale("log", base=2 if axis in ("bytes", "reuse", "iterations") else 10)
    ax.set_yscale("log")
    if axis == "bytes":
        ticks = list(t.columns.astype(float))
        ax.set_xticks(ticks, [format_size(v) for v in ticks], fontsize=8)
    ax.set_xlabel({"bytes": "buffer size", "reuse": "kernel passes per transfer", "touched": "fraction of pages touched",
                   "iterations": "iterations"}[axis])
    ax.set_ylabel("whole lifecycle, ms (median)")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def crossover_figures(frame: pd.DataFrame, pairs_only: tuple[str, str] | None = None):
    """(file stem, figure) for each sweep, crossings marked (those outside the noise)."""
    found = crossover.find(frame, pairs_only)
    for scenario, name, fixed, t, _ in crossover.sweeps(frame):
        c = found[(found["scenario"] == scenario) & (found["axis"] == name) & (found["fixed"] == fixed)
                  & ~found["within_noise"]]
        stem = f"{scenario}-{name}" + (f"-{slug(fixed)}" if fixed else "")
        yield stem, crossover_figure(t, name, f"{scenario}: whole lifecycle vs {name}" + (f" ({fixed})" if fixed else ""), c)

"""Figures from a ResultSet (matplotlib, no display needed): what a person would rather look at than read."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from umprof.report import _nan


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


def save_plots(rs, outdir: str | Path) -> list[Path]:
    """Every figure the result file supports, as PNGs under ``outdir``; their paths."""
    plt = _pyplot()
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, g in rs.frame.groupby("scenario", sort=False):
        if "um_gpu_fault_groups" in g.columns and not g["um_gpu_fault_groups"].map(_nan).all():
            fig = um_figure(g, f"{name}: time and unified-memory faults per case")
            path = outdir / f"{name}-um.png"
            fig.savefig(path, dpi=110)
            plt.close(fig)
            written.append(path)
    return written

"""``umprof report``: one self-contained HTML file a person can read and send on.

Sections, each present when the results hold what it needs: the device and its ceilings; the
advice for traced applications (a timeline of their copies and kernels beside it);
the strategy breakdown (every lifecycle phase per strategy and size); copy bandwidth; the
access-pattern plots; the unified-memory table; the crossovers; and the recommendation
for the given workloads, with predicted against measured where ``recommend --verify``
results are included. Figures are PNGs embedded as data: URIs, the style is inline: the file
needs nothing beside it, and no network.
"""

from __future__ import annotations

import base64
import html
import io
import math
from datetime import datetime

import pandas as pd

from umprof.core.results import ResultSet
from umprof.core.units import format_rate, format_size, format_time
from umprof.core.version import __version__
from umprof.measure.ops.lifecycle import OP as LIFECYCLE

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em auto;max-width:1200px;color:#222;padding:0 1em}
h1{font-size:1.6em;margin-bottom:.2em}h2{border-bottom:2px solid #ddd;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;margin:.6em 0;font-size:.85em}th,td{border:1px solid #ccc;padding:.25em .6em;text-align:right}
th{background:#f2f2f2}td:first-child,th:first-child{text-align:left}
table.ranked tbody tr:first-child td{background:#e8f5e9;font-weight:600}
.muted{color:#777}.reason{background:#f7f9fc;border-left:4px solid #4a78c2;padding:.6em 1em;margin:.6em 0}
img{max-width:100%;border:1px solid #eee;margin:.4em 0}.fig{display:inline-block;width:49%;vertical-align:top}
.bad{color:#b00020;font-weight:600}.good{color:#1b5e20;font-weight:600}nav a{margin-right:1em}
"""


def _img(fig) -> str:
    from umprof.views.plots import _pyplot

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    _pyplot().close(fig)
    return f'<img alt="figure" src="data:image/png;base64,{base64.b64encode(buf.getvalue()).decode()}">'


def _table(rows, ranked: bool = False) -> str:
    """Rows (dicts or a DataFrame) as an HTML table, escaped; ``ranked`` highlights the first row."""
    frame = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(rows)
    if frame.empty:
        return ""
    return frame.to_html(index=False, escape=True, border=0, classes="ranked" if ranked else None)


def _device_section(sets) -> str:
    rows, seen = [], set()
    for rs in sets:
        for d in rs.devices:
            key = (d.get("host"), d.get("rank", 0), d.get("name"), d.get("pci_bus_id"))
            if key in seen:
                continue
            seen.add(key)
            rows.append({
                "host": d.get("host", "?"), "rank": d.get("rank", 0), "index": d.get("index", 0),
                "GPU": d.get("name", "?"), "cc": d.get("cc", "?"), "SMs": d.get("sms", "?"),
                "memory": format_size(d.get("memory_total_bytes") or math.nan),
                "PCIe link (per direction)": format_rate(d.get("pcie_bytes_per_s") or math.nan)
                + (f" (gen {d['pcie_gen']} x{d.get('pcie_width')})" if d.get("pcie_gen") else ""),
                "DRAM (theoretical)": format_rate(d.get("dram_bytes_per_s") or math.nan),
                "device copy (measured)": format_rate(d.get("d2d_bytes_per_s") or math.nan),
                "driver": d.get("driver", "?"),
            })
    return "<h2 id='device'>Device and ceilings</h2>" + _table(rows) + \
        "<p class='muted'>Every bandwidth below is read against these: copies and mapped access against the PCIe link, " \
        "kernels on device memory against DRAM and the measured device copy.</p>"


def _lifecycle_base(frame: pd.DataFrame) -> pd.DataFrame:
    """Lifecycle rows of the plain workload (whole buffer, streaming, one iteration, one pass)."""
    f = frame[(frame["op"] == "lifecycle") & (frame["status"] == "ok")]
    for col, default in (("axis.touched", 1.0), ("axis.pattern", "streaming"), ("axis.iterations", 1),
                         ("axis.pingpong", "no")):
        if col in f.columns:
            f = f[f[col].fillna(default) == default]
    return f[f["axis.reuse"] == f["axis.reuse"].min()] if not f.empty else f


def _breakdown_section(frame: pd.DataFrame) -> str:
    from umprof.nsight.nvtx import PHASE_COLORS
    from umprof.views.plots import _pyplot

    f = _lifecycle_base(frame)
    f = f[f["phase"] != "total"]
    if f.empty:
        return ""
    plt = _pyplot()
    parts = ["<h2 id='breakdown'>Strategy breakdown</h2><p>Every phase of a buffer's life (one kernel pass) per strategy: "
             "where the time goes, not only the copy.</p>"]
    sizes = sorted(f["axis.bytes"].unique())
    for size in sizes:
        g = f[f["axis.bytes"] == size]
        t = g.pivot_table(index="axis.strategy", columns="phase", values="time_median_s", aggfunc="median")
        t = t[[p for p in LIFECYCLE.phases if p in t.columns]].fillna(0)
        t = t.loc[t.sum(axis=1).sort_values().index]
        fig, ax = plt.subplots(figsize=(9, 0.35 * len(t) + 1.2))
        left = pd.Series(0.0, index=t.index)
        for ph in t.columns:
            ax.barh(t.index, t[ph] * 1e3, left=left * 1e3, label=ph, color=f"#{PHASE_COLORS.get(ph, 0x999999):06x}")
            left += t[ph]
        ax.set_xlabel("ms (median per phase)")
        ax.set_title(f"{format_size(size)}: lifecycle per strategy")
        ax.legend(fontsize=7, ncol=4, loc="lower right")
        fig.tight_layout()
        parts.append(f"<div class='fig'>{_img(fig)}</div>")
    return "".join(parts)


def _transfers_section(frame: pd.DataFrame, devices) -> str:
    from umprof.views.plots import _pyplot

    f = frame[(frame["op"] == "transfer") & (frame["status"] == "ok") & (frame["phase"] != "total")]
    if f.empty:
        return ""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(9, 4.5))
    for (strategy, phase), g in f.groupby(["axis.strategy", "phase"]):
        g = g.sort_values("axis.bytes")
        ax.plot(g["axis.bytes"], g["bytes_per_s"] / 1e9, marker=".", label=f"{strategy} {phase}")
    pcie = next((d.get("pcie_bytes_per_s") for d in devices if d.get("pcie_bytes_per_s")), None)
    if pcie:
        ax.axhline(pcie / 1e9, color="black", ls="--", lw=1, label="PCIe link")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("bytes per copy")
    ax.set_ylabel("GB/s")
    ax.legend(fontsize=7, ncol=2)
    ax.grid(True, alpha=.3)
    fig.tight_layout()
    return "<h2 id='transfers'>Copies</h2>" + _img(fig)


def _access_section(rs: ResultSet) -> str:
    from umprof.views import plots

    figs = list(plots.figures(rs, crossovers=False, um=False))  # those have their own sections
    if not figs:
        return ""
    return "<h2 id='access'>Access patterns</h2><p>Kernel bandwidth against stride, offset, threads and blocks, the " \
           "sector model's prediction dashed, the measured device copy as the ceiling.</p>" + \
        "".join(f"<div class='fig'>{_img(fig)}</div>" for _, fig in figs)


def _um_section(frame: pd.DataFrame) -> str:
    if "um_gpu_fault_groups" not in frame.columns:
        return ""
    from umprof.views.terminal import um_rows

    rows = [dict(scenario=name, **r) for name, g in frame[frame["scenario"].astype(str).str.startswith("um-")]
            .groupby("scenario", sort=False) for r in um_rows(g) if r["phase"] == "total"]
    if not rows:
        return ""
    return "<h2 id='um'>Unified memory</h2><p>Per case and sample (medians): time, migrations each way (count × " \
           "average size (min–max) = total) and page faults, from CUPTI.</p>" + _table(rows)


def _crossover_section(frame: pd.DataFrame) -> str:
    from umprof.model import crossover
    from umprof.views.plots import crossover_figures

    # the crossover group's sweeps (`umprof crossovers` reads any sweep; here, the ones made for it)
    frame = frame[frame["scenario"].astype(str).str.startswith("crossover-")]
    found = crossover.find(frame)
    figs = list(crossover_figures(frame))
    if not figs:
        return ""
    rows = [{"scenario": r["scenario"], "axis": r["axis"], "fixed": r["fixed"] or "-", "faster below": r["faster_below"],
             "crossing": crossover.format_value(r["axis"], r["crossing"]), "faster above": r["faster_above"],
             "between": r["between"]} for _, r in found[~found["within_noise"]].iterrows()]
    return "<h2 id='crossovers'>Crossovers</h2><p>Where the faster of two strategies changes, measured (crossings within " \
           "the noise left out).</p>" + _table(rows) + "".join(f"<div class='fig'>{_img(fig)}</div>" for _, fig in figs)


def _recommend_section(frame: pd.DataFrame, devices, workloads) -> str:
    from umprof.core.errors import UsageError
    from umprof.model import recommend as rmod
    from umprof.model.predict import Calibration

    if not workloads:
        return ""
    try:
        cal = Calibration(frame, devices[0] if devices else {})
    except UsageError:
        return ""  # no calibration among the results: nothing to predict from
    recs = rmod.recommend_all(cal, workloads)
    verdicts = rmod.verify_all(recs, frame)
    parts = ["<h2 id='recommend'>Recommendation</h2><p>Ranked by the whole run (setup + iterations × the steady "
             "iteration); `recommend --steady` ranks by the steady iteration alone.</p>"]
    for steady, rs_, vs_ in ((False, recs, verdicts), (True, None, None)):
        if steady:
            rs_ = rmod.recommend_all(cal, workloads, steady=True)
            vs_ = rmod.verify_all(rs_, frame)
        summary = rmod.summary_rows(zip(rs_, vs_))
        if summary:
            held = sum(r["held"] == "yes" for r in summary)
            what = "per steady iteration" if steady else "over the whole run"
            parts.append(f"<p>Top pick against the measured fastest {what} (recommend --verify, wall clock): "
                         f"{held} of {len(summary)} held.</p>" + _table(summary))
    for rec, v in zip(recs, verdicts):
        table = rec.to_frame()
        shown = pd.DataFrame({"strategy": table["strategy"]})
        for col in ("setup", "steady", "whole"):
            shown[{"steady": "per iteration"}.get(col, col)] = table[col].map(format_time)
        if v is not None:
            measured = dict(zip(v["table"]["strategy"], v["table"]["measured_s"]))
            shown["measured (whole)"] = table["strategy"].map(lambda s: format_time(measured.get(s, math.nan)))
        parts.append(f"<h3>{html.escape(rec.workload.label)}</h3><p class='muted'>{html.escape(rec.workload.describe())}</p>")
        parts.append(f"<div class='reason'>{html.escape(rec.reason)}</div>" + _table(shown, ranked=True))
        if rec.excluded:
            parts.append("<p class='muted'>Not ranked: " + "; ".join(html.escape(f"{s}: {why}") for s, why in rec.excluded.items()) + "</p>")
        if v is not None:
            parts.append(f"<p class='{'good' if v['ok'] else 'bad'}'>verified: {html.escape(v['summary'])}</p>")
    return "".join(parts)


def _topology_section(frame: pd.DataFrame, devices) -> str:
    from umprof.model.topology import bandwidth_matrix
    from umprof.views import plots

    matrix = bandwidth_matrix(frame, devices)
    if matrix.empty:
        return ""
    shown = matrix.map(lambda v: "-" if pd.isna(v) else format_rate(v)).reset_index()
    return ("<h2 id='topology'>Topology</h2><p class='muted'>GB/s per direction from each source (down) to each "
            "destination (across): GPU to GPU by copy engine with peer access on (p2p), host to each GPU alone "
            "(host-links), at the largest size measured; the diagonal is the device copy's one direction.</p>"
            + _table(shown) + _img(plots.topology_figure(matrix, "GB/s between host and GPUs")))


def _advise_section(advice) -> str:
    """Each traced application's copies and kernels on a timeline, beside what it should use and saves."""
    if not advice:
        return ""
    from umprof.views.timeline import timeline_figure

    parts = ["<h2 id='advise'>Advice for traced applications</h2><p>From each application's Nsight Systems trace "
             "(umprof advise): its copies (colored by the host memory they use) and kernels by stream, its loop, and "
             "each strategy's predicted time for that loop from the calibration of its GPU.</p>"]
    for a in advice:
        app = a.app
        parts.append(f"<h3>{html.escape(app.name)} (pid {app.pid}) on {html.escape(app.gpu)}</h3>")
        parts.append(_img(timeline_figure(app)))
        parts.append(f"<div class='reason'>{html.escape(a.verdict)}</div>")
        rows = [{"advice for": x.flow, "strategy": x.strategy, "change": x.change, "now": format_time(x.now_s),
                 "predicted": format_time(x.predicted_s), "saves": format_time(x.saving_s),
                 "tie": x.note if x.tie else ""} for x in a.advice]
        parts.append(_table(rows))
        ranking = [{"strategy": r["strategy"] + (" (now)" if r["strategy"] == app.strategy else ""),
                    "predicted": format_time(r["predicted_s"]), "saving": format_time(r["saving_s"])} for r in a.ranking]
        parts.append(_table(ranking, ranked=True))
        parts.append("".join(f"<p class='muted'>{html.escape(x)}</p>" for x in a.limits))
        parts.append(f"<p class='muted'>predicted from {html.escape(a.calibration)}</p>")
    return "".join(parts)


def _job_section(job) -> str:
    if not job:
        return ""
    from umprof.views.job_report import job_section

    return job_section(job, _img, _table)


def build(sets: list[ResultSet], names: list[str], workloads=None, advice=None, job=None) -> str:
    """The report's HTML text (``advice``: `umprof advise` results for traced applications; ``job``: the answer of
    `umprof advise` for a job's traces)."""
    frame = pd.concat([rs.frame for rs in sets], ignore_index=True) if sets else pd.DataFrame(
        columns=["scenario", "op", "case", "phase", "status"])
    devices = [d for rs in sets for d in rs.devices]
    merged = ResultSet(frame, sets[0].meta if sets else {}, devices[:1])
    sections = [
        _device_section(sets) if sets else "",
        _advise_section(advice),
        _job_section(job),
        _topology_section(frame, devices),
        _recommend_section(frame, devices, workloads),
        _breakdown_section(frame),
        _transfers_section(frame, devices),
        _crossover_section(frame),
        _um_section(frame),
        _access_section(merged),
    ]
    titles = {"device": "Device", "advise": "Advice", "job": "Job", "topology": "Topology", "recommend": "Recommendation", "breakdown": "Strategy breakdown", "transfers": "Copies",
              "crossovers": "Crossovers", "um": "Unified memory", "access": "Access patterns"}
    nav = " ".join(f"<a href='#{k}'>{v}</a>" for k, v in titles.items() if any(f"id='{k}'" in s for s in sections))
    head = (f"<h1>umprof report</h1><p class='muted'>{html.escape(', '.join(names))} · umprof {__version__} · "
            f"written {datetime.now():%Y-%m-%d %H:%M}</p><nav>{nav}</nav>")
    return (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>umprof report</title>"
            f"<style>{CSS}</style></head><body>{head}{''.join(sections)}</body></html>")

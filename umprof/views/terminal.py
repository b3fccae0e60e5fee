"""Terminal tables (rich) for a ResultSet: what ``umprof run`` prints and ``umprof show`` reprints."""

from __future__ import annotations

import math

import pandas as pd
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from umprof.core.results import AXIS_PREFIX, WHERE_COLUMNS, ResultSet, axis_text
from umprof.core.stats import UNSTABLE_NOISE
from umprof.core.units import format_percent, format_rate, format_size, format_time
from umprof.nsight.nvtx import PHASES

CEILING_NAMES = {"pcie": "link", "pcie-duplex": "duplex link", "dram": "DRAM"}


def ceiling_name(ceiling) -> str:
    """How a table names a row's ceiling: 'link', 'DRAM', 'GPU link' for a peer pair's path."""
    c = ceiling if isinstance(ceiling, str) else ""  # missing: None, NaN or pd.NA (a frame merged with others)
    if c.startswith("peer-duplex:"):
        return "duplex GPU link"
    if c.startswith("peer:"):
        return "GPU link"
    return CEILING_NAMES.get(c, "")


def device_lines(devices: list[dict]) -> list[str]:
    out = []
    several = len({d.get("host") for d in devices}) > 1 or any(d.get("rank") for d in devices)
    for d in devices:
        where = f"{d.get('host')} rank {d.get('rank', 0)} " if several else ""
        parts = [f"{where}GPU {d.get('index', 0)}: {d.get('name', '?')} (cc {d.get('cc', '?')}, {d.get('sms', '?')} SMs, "
                 f"{format_size(d.get('memory_total_bytes') or math.nan)})"]
        if d.get("pcie_gen"):
            parts.append(f"PCIe {d['pcie_gen']}.0 x{d.get('pcie_width')} = {format_rate(d.get('pcie_bytes_per_s') or math.nan)}/direction")
        if d.get("dram_bytes_per_s"):
            parts.append(f"DRAM {format_rate(d['dram_bytes_per_s'])} theoretical")
        if d.get("d2d_bytes_per_s"):
            parts.append(f"device copy {format_rate(d['d2d_bytes_per_s'])} measured (read+write)")
        out.append(" · ".join(parts))
    return out




def _note(row) -> str:
    status = row.get("status", "ok")
    if status == "skipped":
        return f"[yellow]skipped: {row.get('reason', '')}[/]"
    if status == "failed":
        return f"[red]FAILED: {row.get('reason', '')}[/]"
    notes = []
    if row.get("um_incomplete") is True:
        notes.append(f"[yellow]{row.get('reason', '')}[/]")
    nz = row.get("noise_rel")
    if isinstance(nz, float) and not math.isnan(nz) and nz >= UNSTABLE_NOISE:
        notes.append(f"[yellow]noise {nz:.0%}: may be unstable[/]")
    return "; ".join(notes)


def _phase_order(phases) -> list[str]:
    known = [p for p in PHASES if p in phases]
    return known + sorted(p for p in phases if p not in known and p != "total")


def _extra_columns(ok: pd.DataFrame) -> list[tuple[str, callable]]:
    """Columns shown when the scenario's kernel rows carry them: the measured device copy as a
    second ceiling, the sector model's prediction, Nsight Compute's measurement, occupancy."""
    k = ok[ok["phase"] == "kernel"]
    has = lambda c: c in k.columns and k[c].notna().any()  # noqa: E731
    has_any = lambda c: c in ok.columns and ok[c].notna().any()  # noqa: E731
    cols = []
    if has_any("overlap_efficiency"):  # the overlap op: how well the engines overlapped
        cols.append(("overlap eff.", lambda r: "-" if _nan(r.get("overlap_efficiency")) else format_percent(r["overlap_efficiency"])))
        cols.append(("speedup", lambda r: "-" if _nan(r.get("speedup")) else f"{r['speedup']:.2f}x"))
    if has_any("both_bytes_per_s"):  # bidirectional copies: each direction while the other runs, and the sum
        cols.append(("h2d | d2h at once", lambda r: "-" if _nan(r.get("h2d_both_bytes_per_s")) else
                     f"{format_rate(r['h2d_both_bytes_per_s'])} | {format_rate(r['d2h_both_bytes_per_s'])}"))
        cols.append(("sum GB/s", lambda r: "-" if _nan(r.get("both_bytes_per_s")) else format_rate(r["both_bytes_per_s"])))
    if has("d2d_util") and (k["ceiling"] == "dram").any():
        cols.append(("% of copy", lambda r: format_percent(r["d2d_util"]) if not _nan(r.get("d2d_util")) else "-"))
    if has("net_bytes_per_s"):
        cols.append(("net GB/s", lambda r: format_rate(r["net_bytes_per_s"]) if not _nan(r.get("net_bytes_per_s")) else "-"))
    if has("pred_ld_eff") or has("pred_st_eff"):
        cols.append(("predicted use", _predicted))
    if has("ncu_ld_eff") or has("ncu_st_eff"):
        cols.append(("ncu use", _ncu))
    if has("occupancy"):
        cols.append(("occupancy", lambda r: "-" if _nan(r.get("occupancy")) else
                     f"{r['occupancy']:.0%}" + ("" if _nan(r.get("registers")) else f" ({int(r['registers'])} regs)")))
    return cols


def _use(r, prefix) -> str:
    parts = []
    for side in ("ld", "st"):
        eff = r.get(f"{prefix}_{side}_eff")
        if not _nan(eff):
            spr = r.get(f"{prefix}_{side}_sectors_per_req")
            parts.append(f"{side} {eff:.0%}" + ("" if _nan(spr) else f" ({spr:.1f}/req)"))
    return " · ".join(parts) or "-"


def _predicted(r) -> str:
    """Bytes used of the 32-byte sectors fetched, and sectors per request, as the sector model predicts."""
    return _use(r, "pred")


def _ncu(r) -> str:
    return _use(r, "ncu")


def scenario_table(df: pd.DataFrame, title: str) -> Table:
    """One table for one scenario: a row per case. Axes with one value go into the title."""
    axes_all = [c for c in df.columns if c.startswith(AXIS_PREFIX) and df[c].notna().any()]
    fixed = [c for c in axes_all if df[c].nunique(dropna=False) == 1 and df["case"].nunique() > 1]
    axes = [c for c in axes_all if c not in fixed]
    if fixed:
        title += " · " + " ".join(f"{c[len(AXIS_PREFIX):]}={axis_text(c, df[c].iloc[0])}" for c in fixed)
    ok = df[(df["status"] == "ok") & (df["phase"] != "total")]
    phases = _phase_order(set(ok["phase"]))
    single = bool(len(ok)) and ok.groupby("case")["phase"].nunique().max() == 1
    extras = _extra_columns(ok) if len(ok) else []
    table = Table(title=title, title_justify="left", show_lines=False, header_style="bold")
    for c in axes:
        table.add_column(c[len(AXIS_PREFIX):])
    if single:
        table.add_column("phase")
        for c in ("time", "p99", "throughput", "% of ceiling", "noise"):
            table.add_column(c, justify="right")
    else:
        for p in phases:
            table.add_column(p, justify="right")
        table.add_column("total", justify="right", style="bold")
        if "kernel" in phases:
            table.add_column("kernel GB/s", justify="right")
    for name, _ in extras:
        table.add_column(name, justify="right")
    table.add_column("notes")
    for case, g in df.groupby("case", sort=False):
        first = g.iloc[0]
        cells = [axis_text(c, first[c]) for c in axes]
        by_phase = {r["phase"]: r for _, r in g.iterrows()}
        total = by_phase.get("total", first)
        if first["status"] != "ok":
            width = (6 if single else len(phases) + 1 + ("kernel" in phases)) + len(extras)
            table.add_row(*cells, *(["-"] * width), _note(first))
            continue
        kernel = by_phase.get("kernel", total)  # op facts not tied to a kernel sit on every row
        tail = [fn(kernel) for _, fn in extras]
        if single:
            r = by_phase[next(p for p in by_phase if p != "total")]
            cap = ceiling_name(r.get("ceiling"))
            pct = format_percent(r["util"]) + (f" {cap}" if cap else "") if not _nan(r.get("util")) else "-"
            p99 = "-" if _nan(r.get("time_p99_s")) else format_time(r["time_p99_s"])
            table.add_row(*cells, r["phase"], format_time(r["time_median_s"]), p99, format_rate(r["bytes_per_s"]), pct,
                          format_percent(r["noise_rel"]) if not _nan(r["noise_rel"]) else "-", *tail, _note(r))
        else:
            row = [format_time(by_phase[p]["time_median_s"]) if p in by_phase else "" for p in phases]
            row.append(format_time(total["time_median_s"]))
            if "kernel" in phases:
                k = by_phase.get("kernel")
                row.append("" if k is None else format_rate(k["bytes_per_s"]) + (
                    f" ({format_percent(k['util'])} {ceiling_name(k['ceiling'])})" if not _nan(k.get("util")) else ""))
            table.add_row(*cells, *row, *tail, _note(total))
    return table


def _nan(v) -> bool:
    return v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v))


def where_groups(df: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """The rows split by where they ran (host, then rank, then GPU), each part named by what
    differs: one part named '' when all ran in one place."""
    cols = [c for c in WHERE_COLUMNS if c in df.columns and df[c].nunique(dropna=True) > 1]
    if not cols:
        return [("", df)]
    names = {"host": "host {}", "rank": "rank {}", "device": "GPU {}"}
    return [(" ".join(names[c].format(v) for c, v in zip(cols, key if isinstance(key, tuple) else (key,))), part)
            for key, part in df.groupby(cols, sort=True, dropna=False)]


def print_results(rs: ResultSet, console: Console | None = None, scenario: str | None = None) -> None:
    console = console or Console()
    for line in device_lines(rs.devices):
        console.print(line)
    df = rs.frame
    if scenario:
        df = df[df["scenario"] == scenario]
    for name, g in df.groupby("scenario", sort=False):
        for where, part in where_groups(g):
            console.print(scenario_table(part, f"{name} ({g['op'].iloc[0]})" + (f" · {where}" if where else "")))
    keys = ["scenario", "case"] + [c for c in WHERE_COLUMNS if c in rs.frame.columns]
    counts = rs.frame.astype({k: str for k in keys}).drop_duplicates(keys)["status"].value_counts()
    console.print(", ".join(f"{n} {k}" for k, n in counts.items()) + " cases; times are medians; "
                  "throughput in decimal GB/s; % of ceiling: of the PCIe link per direction (link) or theoretical DRAM")


def print_trace_extras(rs: ResultSet, console: Console) -> None:
    """What a trace adds to its phase breakdown (in the ResultSet's metadata): its memory operations, its
    unified-memory totals, and what the trace lacked."""
    ops = rs.meta.get("memory_operations") or []
    if ops:
        t = Table(title="GPU memory operations (Nsight Systems)", title_justify="left", header_style="bold")
        for c in ("operation", "count", "total time", "bytes", "throughput"):
            t.add_column(c, justify="left" if c == "operation" else "right")
        for r in ops:
            t.add_row(str(r["operation"]), str(int(r["count"])), format_time(r["total_s"]),
                      format_size(r.get("bytes", math.nan)), format_rate(r.get("bytes_per_s", math.nan)))
        console.print(t)
    um = rs.meta.get("um") or {}
    if um:
        console.print("unified memory (Nsight Systems): " + ", ".join(
            f"{k.replace('_', ' ')} {format_size(v) if k.endswith('bytes') else v}" for k, v in um.items() if v is not None))
    for line in rs.meta.get("trace_notes") or []:
        console.print(f"[yellow]trace: {line}[/]")


def print_agreement(agree, console: Console) -> None:
    """Nsight's projected GPU time beside umprof's event time, per case and phase (``agree``: the table
    :func:`umprof.nsight.nsys_import.agreement` makes, or its records as a ResultSet's metadata keeps them)."""
    agree = pd.DataFrame(agree)
    if agree.empty:
        console.print("[yellow]agreement: no phase matched between the trace and the results[/]")
        return
    t = Table(title="Nsight Systems vs umprof (GPU time per phase)", title_justify="left", header_style="bold")
    for c in ("scenario", "case", "phase", "umprof", "nsys", "difference", ""):
        t.add_column(c, justify="right" if c in ("umprof", "nsys", "difference") else "left")
    for _, r in agree.iterrows():
        ok = bool(r["agrees"])
        t.add_row(r["scenario"], r["case"], r["phase"], format_time(r["umprof_s"]), format_time(r["nsys_s"]),
                  f"{r['diff_rel']:+.1%}", "agrees" if ok else "[red]differs by over 5%[/]")
    console.print(t)
    bad = int((~agree["agrees"]).sum())
    console.print(f"{len(agree) - bad} of {len(agree)} phases agree within 5%" + (f"; [red]{bad} differ[/]" if bad else ""))


UM_DIRECTIONS = (("htod", "Host To Device"), ("dtoh", "Device To Host"))


def _migrations(r, d) -> str:
    n, total = _num(r.get(f"um_{d}_migrations")), _num(r.get(f"um_{d}_bytes"))
    if not n:
        return "-"
    return (f"{n:g} × {format_size(total / n)} ({format_size(_num(r.get(f'um_{d}_min_bytes')))}–"
            f"{format_size(_num(r.get(f'um_{d}_max_bytes')))}) = {format_size(total)}")


def um_rows(df: pd.DataFrame) -> list[dict]:
    """nvprof's "Unified Memory profiling result" as rows of text: one per case and phase with UM
    activity (and every case's total). Migrations read count × average size (min–max) = total,
    as nvprof's columns did. The terminal table and the HTML report both show these."""
    if "um_htod_bytes" not in df.columns:
        return []
    ok = df[(df["status"] == "ok") & df["um_htod_bytes"].notna()]
    rows = []
    for case, g in ok.groupby("case", sort=False):
        for _, r in g.iterrows():
            faults = [_num(r.get(k)) for k in ("um_gpu_fault_groups", "um_gpu_faults", "um_cpu_faults")]
            other = [_num(r.get(k)) for k in ("um_thrashing", "um_throttling", "um_remote_maps")]
            moved = [_num(r.get(f"um_{d}_migrations")) for d, _ in UM_DIRECTIONS]
            if r["phase"] != "total" and not any(faults + other + moved):
                continue
            row = {"case": case, "phase": r["phase"], "time": format_time(r["time_median_s"])}
            row.update({name: _migrations(r, d) for d, name in UM_DIRECTIONS})
            row.update(zip(("GPU fault groups", "GPU faults", "CPU faults"), (f"{v:g}" for v in faults)))
            row["thrashing / throttling / remote maps"] = " / ".join(f"{v:g}" for v in other)
            rows.append(row)
    return rows


def um_table(df: pd.DataFrame, title: str) -> Table | None:
    """:func:`um_rows` as a terminal table, totals in bold; None where the scenario has no UM counters."""
    rows = um_rows(df)
    if not rows:
        return None
    t = Table(title=title, title_justify="left", header_style="bold")
    for col in rows[0]:
        t.add_column(col, no_wrap=col == "case", justify="left" if col in ("case", "phase") else "right")
    for r in rows:
        t.add_row(*r.values(), style="bold" if r["phase"] == "total" else None)
    return t


def _num(v) -> float:
    return 0.0 if _nan(v) else float(v)


def print_um(rs: ResultSet, console: Console, scenario: str | None = None) -> None:
    """The unified-memory tables of every scenario that has UM counters (medians per sample)."""
    df = rs.frame if not scenario else rs.frame[rs.frame["scenario"] == scenario]
    shown = 0
    for name, g in df.groupby("scenario", sort=False):
        t = um_table(g, f"{name}: unified memory per sample (CUPTI; medians over samples)")
        if t is not None:
            console.print(t)
            shown += 1
    if not shown:
        why = rs.meta.get("um_counters") or "not recorded"
        console.print(f"no unified-memory counters in this result (counters: {why})")


def recommendation_table(rec) -> Table:
    """Ranked strategies: setup, the steady iteration and the whole run, × the best by the figure
    that ranked them, and the steady iteration's phases."""
    from umprof.model.calibration import STEADY_PHASES

    df = rec.to_frame()
    phases = [p for p in STEADY_PHASES if p in df.columns and (df[p].fillna(0) != 0).any()]
    w = rec.workload
    by = "steady iteration (--steady)" if rec.steady else f"whole run of {w.iterations} iteration{'s' if w.iterations != 1 else ''}"
    head = f"{w.label}: {w.describe()}" if w.name else w.describe()
    t = Table(title=f"{head}\nranked by the {by}; steady phases per iteration", title_justify="left",
              header_style="bold")
    for col in ["#", "strategy", "setup", "per iteration", f"whole ({w.iterations} it.)", "× best", *phases]:
        t.add_column(col, justify="left" if col == "strategy" else "right")
    for _, r in df.iterrows():
        cells = [str(r["rank"]), r["strategy"], format_time(r["setup"]), format_time(r["steady"]),
                 format_time(r["whole"]), f"{r['vs_best']:.2f}"]
        cells += ["-" if _nan(r[p]) or r[p] == 0 else format_time(r[p]) for p in phases]
        t.add_row(*cells, style="bold green" if r["rank"] == 1 else None)
    return t


def print_recommendations(recs, verdicts, source: str, agree, drift: dict, runs, console: Console) -> None:
    """Each workload's answer (``print_recommendation``), then the verification's summary where several were
    verified, the earlier runs' agreement (``runs``: their names) and the phases' drift."""
    from umprof.model.recommend import drift_note

    for r, v in zip(recs, verdicts):
        print_recommendation(r, console, v, source)
    if sum(v is not None for v in verdicts) > 1:
        console.print(verification_summary(list(zip(recs, verdicts))))
    if agree:
        console.print(runs_agreement(agree, runs))
    note = drift_note(drift)
    if note:
        console.print(f"[yellow]note:[/] {note}")


def print_recommendation(rec, console: Console, verified: dict | None = None, verify_source: str = "") -> None:
    """The ranked table, the reason, what was not ranked and, where asked for, the verification
    (``verify_source`` names where measurements were looked for when this workload has none)."""
    console.print(recommendation_table(rec))
    console.print(rec.reason, markup=False)
    for s, why in rec.excluded.items():
        console.print(f"[dim]not ranked: {s}: {escape(str(why))}[/]")
    for n in rec.notes:
        console.print(f"[yellow]note:[/] {escape(str(n))}")
    if verified is not None:
        console.print(verification_table(verified, rec.steady))
        colour = "green" if verified["ok"] else "red"
        console.print(f"[{colour}]verified: {verified['summary']}[/]")
    elif verify_source:
        console.print(f"[yellow]not verified: {verify_source} has no measurements of this workload[/]")
    console.print()


def verification_table(verified: dict, steady: bool = False) -> Table:
    what = "steady iteration" if steady else "whole run"
    t = Table(title=f"predicted vs measured by wall clock ({what})", title_justify="left", header_style="bold")
    for col in ("strategy", "predicted", "measured", "error", "measured rank"):
        t.add_column(col, justify="left" if col == "strategy" else "right")
    for _, r in verified["table"].iterrows():
        t.add_row(r["strategy"], format_time(r["predicted_s"]), format_time(r["measured_s"]),
                  f"{r['error']:+.0%}", str(r.get("measured_rank", "-")))
    return t


def verification_summary(pairs: list) -> Table:
    """One row per verified workload: the top pick, the measured fastest and the gap."""
    from umprof.model.recommend import summary_rows

    rows = summary_rows(pairs)
    mode = "steady iteration" if pairs and pairs[0][0].steady else "whole run"
    held = sum(r["held"] == "yes" for r in rows)
    t = Table(title=f"recommend --verify ({mode}): {held} of {len(rows)} top picks held", title_justify="left",
              header_style="bold")
    for col in rows[0] if rows else ():
        t.add_column(col)
    for r in rows:
        t.add_row(*r.values(), style="red" if r["held"] == "NO" else None)
    return t


def runs_agreement(agree: dict, names: list[str]) -> str:
    """Lines saying how often one measured run's fastest strategy held (within 5%) in another run:
    how repeatable the verdict is, against which the top picks' count above is read."""
    out = [f"the measured runs against each other: one run's fastest within 5% of another's in {agree['held']} of "
           f"{agree['of']} (how repeatable the verdict itself is)"]
    for p in agree["pairs"]:
        out.append(f"  fastest in {names[p['fastest_of']]}, judged by {names[p['judged_by']]}: {p['held']} of {p['of']}")
    return "\n".join(out)


def crossover_table(found: pd.DataFrame) -> Table:
    """Crossings, one per row: the pair, the axis, where it crosses and which side wins where."""
    from umprof.model.crossover import format_value

    t = Table(title="crossovers (measured)", title_justify="left", header_style="bold")
    for col in ("scenario", "axis", "fixed", "faster below", "crossing", "faster above", "between points", "note"):
        t.add_column(col)
    for _, r in found.iterrows():
        note = "within noise: the lines touch" if r["within_noise"] else \
            f"{r['gap_below']:.0%} faster below, {r['gap_above']:.0%} above"
        t.add_row(r["scenario"], r["axis"], r["fixed"] or "-", r["faster_below"], format_value(r["axis"], r["crossing"]),
                  r["faster_above"], r["between"], note, style="dim" if r["within_noise"] else None)
    if found.empty:
        t.caption = "no crossing: one strategy of each pair is faster over the whole range"
    return t


def print_comparison(c, console: Console, name_a: str, name_b: str, show_all: bool = False) -> None:
    """The changed cases (all with show_all), the counts, and the cases found on one side only."""
    shown = c.matched if show_all else c.matched[c.matched["verdict"] != "SAME"]
    shown = shown.assign(order=shown["verdict"].map({"SLOW": 0, "FAST": 1, "SAME": 2})).sort_values(["order", "ratio"],
                                                                                                    ascending=[True, False])
    t = Table(title=f"B against A — A: {name_a} ({c.device_a}) · B: {name_b} ({c.device_b})", title_justify="left",
              header_style="bold")
    for col in ("scenario", "case", "phase", "A", "B", "B/A", "noise band", "verdict"):
        t.add_column(col, justify="right" if col in ("A", "B", "B/A", "noise band") else "left")
    style = {"SLOW": "red", "FAST": "green", "SAME": "dim"}
    for _, r in shown.iterrows():
        t.add_row(r["scenario"], r["case"], r["phase"], format_time(r["a_s"]), format_time(r["b_s"]),
                  f"{r['ratio']:.3f}", f"±{r['band']:.0%}", r["verdict"], style=style[r["verdict"]])
    if len(shown):
        console.print(t)
    n = c.counts()
    console.print(f"{len(c.matched)} matched: {n['SAME']} SAME, {n['FAST']} FAST, {n['SLOW']} SLOW"
                  + ("" if show_all or not n["SAME"] else " (SAME cases hidden; --all lists them)"))
    for side, name, cases in (("A", name_a, c.only_a), ("B", name_b, c.only_b)):
        if cases:
            if len(cases) <= 6:
                listed = "; ".join(f"{s} {k}" for s, k in cases)
            else:
                per = pd.Series([s for s, _ in cases]).value_counts(sort=False)
                listed = ", ".join(f"{s} {n}" for s, n in per.items())
            console.print(f"only in {side} ({name}): {len(cases)} case(s): {listed}")

"""`umprof advise` in the terminal: what the application does, what it should use, what that saves."""

from __future__ import annotations

import math

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from umprof.core.units import format_rate, format_share, format_size, format_time
from umprof.model.application import flow_size

FLOWS_SHOWN = 10


def flows_table(adv) -> Table:
    """The application's copy flows, the most time first, each beside the link's ceiling."""
    app = adv.app
    t = Table(title=f"transfer flows of {app.name} (pid {app.pid}, GPU {app.device})", header_style="bold")
    numbers = ("size", "count", "total", "time", "rate", "of link", "overlap")
    for col in ("dir", "memory", "size", "count", "total", "time", "rate", "of link", "sync", "stream", "overlap",
                "range"):
        t.add_column(col, justify="right" if col in numbers else "left")
    for _, f in app.flows.head(FLOWS_SHOWN).iterrows():
        t.add_row(f["direction"], f["host_kind"], flow_size(f), str(int(f["count"])),
                  format_size(int(f["total_bytes"])), format_time(f["time_s"]), format_rate(f["bytes_per_s"]),
                  _pct(f["bytes_per_s"] / adv.link_bytes_per_s), "yes" if f["sync"] else "no", str(f["stream"]),
                  _pct(f["overlap"]), escape(f["range"] or "-"))
    t.caption = f"of link: of the PCIe link's {format_rate(adv.link_bytes_per_s)} per direction"
    if len(app.flows) > FLOWS_SHOWN:
        t.caption += f"; {len(app.flows) - FLOWS_SHOWN} more flows in --json"
    return t


def ranking_table(adv) -> Table:
    """Every strategy that applies: the loop's predicted time and what it saves against now."""
    now = adv.advice[0].now_s if adv.advice else math.nan
    t = Table(title=f"the loop under each strategy (measured now: {format_time(now)})", header_style="bold")
    for col in ("#", "strategy", "predicted", "saving", "vs now"):
        t.add_column(col, justify="left" if col == "strategy" else "right")
    current = adv.app.strategy
    for i, r in enumerate(adv.ranking, 1):
        mark = " (now)" if r["strategy"] == current else ""
        t.add_row(str(i), r["strategy"] + mark, format_time(r["predicted_s"]), format_time(r["saving_s"]),
                  f"{r['predicted_s'] / now:.2f}x" if now > 0 else "-")
    return t


def choices_table(adv) -> Table:
    """The framework's own choices priced: what each saves and its band, whether it is advised, and its condition."""
    t = Table(title=f"{adv.framework}'s choices (advised: the band's low end above the prediction's own error)",
              header_style="bold")
    for col in ("choice", "saves", "band", "advised", "if"):
        t.add_column(col, justify="right" if col in ("saves", "band") else "left")
    for c in adv.choices:
        if c["host_bytes"]:
            t.add_row(c["code"], "-", "-", "memory", escape(c["idiom"]))
            continue
        advised = "chosen" if c.get("chosen") else "yes" if c["advised"] else "no"
        t.add_row(c["code"], format_time(c["saving_s"]), f"{format_time(c['low_s'])}-{format_time(c['high_s'])}",
                  advised, escape(c["why"]) if c["conditional"] else "")
    return t


def print_advice(adv, console: Console) -> None:
    """Everything `umprof advise` says about one application."""
    app = adv.app
    tot = app.totals
    console.rule(escape(f"{app.name} (pid {app.pid}) on {app.gpu}"))
    console.print(f"[dim]predicted from {escape(adv.calibration)}[/]")
    console.print(f"wall {format_time(tot['wall_s'])}: copies {format_time(tot['copy_s'])} ({tot['copies']}; "
                  f"{format_size(tot['h2d_bytes'])} in, {format_size(tot['d2h_bytes'])} out), kernels "
                  f"{format_time(tot['kernel_s'])} ({tot['kernels']})")
    um = app.um
    if um["managed"]:
        console.print(f"unified memory: {format_size(um['h2d_bytes'])} to the GPU in {um['h2d_migrations']} migrations, "
                      f"{format_size(um['d2h_bytes'])} back in {um['d2h_migrations']} ({format_time(um['migration_s'])}); "
                      f"{um['gpu_faults']} GPU faults in {um['gpu_fault_groups']} groups, {um['cpu_faults']} CPU faults; "
                      f"prefetch {'yes' if um['prefetch'] else 'no'}, advice {'yes' if um['advice'] else 'no'}")
    if len(app.flows):
        console.print(flows_table(adv))
    if app.loop is not None:
        _print_loop(app.loop, console)
    console.print(f"now: {app.strategy} ({app.strategy_why})", markup=False)
    if adv.framework:
        console.print(f"framework: {adv.framework} ({adv.framework_why})", markup=False)
    if adv.workload is not None:
        console.print(f"[dim]read as umprof's workload: {escape(adv.workload.describe())} ({escape(adv.mapping)})[/]")
        console.print(ranking_table(adv))
    console.print(adv.verdict, markup=False)
    for a in adv.advice:
        where = "the loop" if a.flow == "loop" else f"flow {a.flow}"
        colour = "green" if a.saving_s > 0 else "dim"
        console.print(f"[{colour}]advice for {escape(where)}: {a.strategy}: {escape(a.change)}[/] (now {format_time(a.now_s)}, "
                      f"predicted {format_time(a.predicted_s)}, saves {format_time(a.saving_s)})"
                      + (f"; [yellow]tie:[/] {escape(a.note)}" if a.tie else (f"; {escape(a.note)}" if a.note else "")))
    if adv.choices:
        console.print(choices_table(adv))
    for why, ways in _by_reason(adv.excluded).items():
        console.print(f"[dim]not ranked: {', '.join(ways)}: {escape(why)}[/]")
    for line in adv.limits + app.notes:
        console.print(f"[yellow]note:[/] {escape(str(line))}")
    console.print()



def _print_loop(loop, console: Console) -> None:
    """The loop's lines: its iterations, a loop inside each, and a loop before it."""
    p = loop.per_iteration
    console.print(f"loop: {loop.iterations} iterations ({loop.period} CUDA calls each, cut at "
                  f"{loop.anchor}); first {format_time(loop.first_s)}, then {format_time(loop.steady_s)} "
                  f"each: {format_size(p['h2d_bytes'])} in, {format_size(p['d2h_bytes'])} out, kernels "
                  f"{format_time(p['kernel_s'])}, GPU busy {format_time(p['busy_s'])}, the host alone "
                  f"{format_time(loop.idle_s)}"
                  + (f"; pages moved {format_size(p['um_h2d_bytes'])} to the GPU and {format_size(p['um_d2h_bytes'])} "
                     "back" if p["um_h2d_bytes"] or p["um_d2h_bytes"] else ""))
    inner = loop.inner
    if inner is not None:
        q = inner.per_iteration
        console.print(f"inside each: a loop of {round(inner.iterations / loop.iterations)} iterations "
                      f"({inner.period} CUDA calls each, cut at {inner.anchor}), {format_time(inner.steady_s)} "
                      f"each: {format_size(q['h2d_bytes'])} in, {format_size(q['d2h_bytes'])} out, kernels "
                      f"{format_time(q['kernel_s'])}")
    lead = loop.lead
    if lead is not None:
        q = lead.per_iteration
        console.print(f"before it: a loop of {lead.iterations} iterations ({lead.period} CUDA calls each), "
                      f"{format_time(lead.steady_s)} each: {format_size(q['h2d_bytes'])} in, "
                      f"{format_size(q['d2h_bytes'])} out, kernels {format_time(q['kernel_s'])}")


def _pct(v) -> str:
    return format_share(v) if v is not None else "-"


def _by_reason(excluded: dict) -> dict[str, list[str]]:
    """The ways not ranked, those of one reason together (a framework's reason holds several)."""
    out: dict[str, list[str]] = {}
    for way, why in excluded.items():
        out.setdefault(str(why), []).append(way)
    return out

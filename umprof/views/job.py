"""A job's advice in the terminal: its groups of identical ranks (each read once), its hosts, stragglers,
shared links and saving (the document :func:`umprof.model.job.job_answer` makes). What the traces name (hosts, paths,
GPUs) is printed as it is, never read as rich markup."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from umprof.core.units import format_rate, format_size, format_time

RANKS_NAMED = 6  # a group names this many of its ranks, then counts the others
FLOWS_SHOWN = 4  # a group's flows listed, the most time first


def _ranks_text(names: list[str]) -> str:
    more = len(names) - RANKS_NAMED
    return ", ".join(names[:RANKS_NAMED]) + (f" and {more} more" if more > 0 else "")


def _host(name: str) -> str:
    return name or "host not named"


def print_group(g: dict, console: Console) -> None:
    """One group of identical ranks: who, what they do, what they should use."""
    console.rule(escape(f"group {g['group']}: {g['count']} rank{'s' if g['count'] > 1 else ''} "
                        f"({', '.join(f'{_host(h)} ×{n}' for h, n in g['hosts'].items())})"))
    console.print(f"ranks: {_ranks_text(g['ranks'])}; read from {g['read_from']}", markup=False)
    t = g["now_s"]
    console.print(f"measured: {format_time(t['median'])} (fastest {format_time(t['min'])}, slowest "
                  f"{format_time(t['max'])}); now: {g['strategy_now']}", markup=False)
    for f in sorted(g["flows"], key=lambda f: -f["time_s"])[:FLOWS_SHOWN]:
        console.print(f"  flow: {f['direction']} {f['host_kind']} {format_size(int(f['bytes']))} ×{f['count']}, "
                      f"{format_time(f['time_s'])} at {format_rate(f['bytes_per_s'])}", markup=False)
    loop = g.get("loop")
    if loop:
        calls = loop["calls_per_iteration"]
        console.print(f"  loop: {loop['iterations']} iterations of {calls} call{'' if calls == 1 else 's'}, "
                      f"{format_time(loop['steady_s'])} each", markup=False)
    for a in g["advice"]:
        console.print(f"  advice ({a['flow']}): {a['strategy']}: {a['change']}; saves {format_time(a['saving_s'])} "
                      f"of {format_time(a['now_s'])}", markup=False)
    if g.get("verdict"):
        console.print(f"  {g['verdict']}", markup=False)


def hosts_table(hosts: list[dict]) -> Table:
    t = Table(title="hosts", header_style="bold")
    for col in ("host", "ranks", "GPUs", "groups"):
        t.add_column(col)
    for h in hosts:
        t.add_row(escape(_host(h["host"])), str(len(h["ranks"])),
                  escape(", ".join(f"{g} ×{n}" for g, n in h["gpus"].items())), ", ".join(map(str, h["groups"])))
    return t


def print_stragglers(s: dict, console: Console) -> None:
    if not s["count"]:
        console.print(f"stragglers: none (no rank's copies {s['margin']:.0%} slower than its group's)", markup=False)
        return
    console.print(f"stragglers: {s['count']} rank(s) whose copies took over {s['margin']:.0%} longer than their "
                  "group's median:", markup=False)
    for x in s["slowest"]:
        console.print(f"  {x['rank']} on {_host(x['host'])} (group {x['group']}): copies {format_time(x['copy_s'])}, "
                      f"{format_time(x['extra_s'])} ({x['extra_share']:.0%}) over {format_time(x['group_median_copy_s'])}",
                      markup=False)


def _rate(v) -> str:
    return format_rate(v) if v else "-"


def print_shared(shared: list[dict], console: Console) -> None:
    """Per host: the ranks copying at once and the share of the links each counts on, beside what they measured."""
    for h in shared:
        if h["ranks"] < 2:
            continue
        per, got = h["shared_bytes_per_s"], h["measured_bytes_per_s"]
        console.print(f"shared links, {_host(h['host'])}: {h['ranks']} ranks copy at once on {h['gpus_at_once']} GPU(s) "
                      f"(up to {h['ranks_on_a_link']} a link{'; ' + h['figure'] if h['figure'] else ''}): each counts on "
                      f"{_rate(per['h2d'])} in, {_rate(per['d2h'])} out of {_rate(h['link_bytes_per_s'])}; measured "
                      f"{_rate(got['h2d'])} in, {_rate(got['d2h'])} out (median rank); {h['bounded_ranks']} rank(s)' "
                      "advised time raised to what their bytes need through that share", markup=False)


def print_saving(s: dict | None, console: Console) -> None:
    if s is None:
        console.print("[bold]no rank could be advised[/]")
        return
    what = "the job's saving" if s["synchronised"] else "the ranks' savings, summed"
    console.print(f"[bold]{what}: {format_time(s['saving_s'])}[/] ({escape(s['why'])}): slowest rank now "
                  f"{format_time(s['now_s'])} ({escape(str(s['slowest_now']))}), after the advice {format_time(s['predicted_s'])} "
                  f"({escape(str(s['slowest_after']))})" + _alone(s))


def _alone(s: dict) -> str:
    """What the ranks' savings add up to priced alone, where the shared links or the slowest rank make it differ."""
    if abs(s["saving_alone_s"] - s["rank_seconds_saved"]) < 1e-9 and abs(s["rank_seconds_saved"] - s["saving_s"]) < 1e-9:
        return ""
    return (f"; the ranks' savings priced alone add up to {format_time(s['saving_alone_s'])}, on their shares of the "
            f"links {format_time(s['rank_seconds_saved'])}")


def print_job(doc: dict, console: Console) -> None:
    """Everything `umprof advise` says about a job of several traces."""
    job, tot = doc["job"], doc["job"]["totals"]
    if not tot["advised"]:  # nothing to tabulate: the problems, on stderr, say why each rank was not advised
        console.print(f"[bold]0 of {tot['traces']} traces advised[/]")
        print_limits(job["limits"], console)
        return
    console.print(f"[bold]{tot['advised']} of {tot['traces']} traces advised[/], {tot['hosts']} host(s), "
                  f"{escape(', '.join(f'{g} ×{n}' for g, n in tot['gpus'].items()))}; copies {format_time(tot['copy_s'])} "
                  f"({format_size(tot['h2d_bytes'])} in, {format_size(tot['d2h_bytes'])} out)")
    for g in job["groups"]:
        print_group(g, console)
    console.rule("the job")
    console.print(hosts_table(job["hosts"]))
    print_shared(job.get("shared_links", []), console)
    print_stragglers(job["stragglers"], console)
    print_saving(job["saving"], console)
    print_limits(job["limits"], console)


def print_limits(limits: list, console: Console) -> None:
    """The job's limits, a line each: its code, then its text."""
    for lim in limits:
        console.print(f"[yellow]{escape(lim['code'])}[/]: {escape(lim['text'])}")

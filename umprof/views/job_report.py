"""A job's section of the HTML report: per host a timeline of its rank groups (a row each: the measured time, its
copies, the time predicted after the advice on the ranks' shares of the links), then each group's advice once, the
stragglers, the saving and the limits."""

from __future__ import annotations

import html

from umprof.core.units import format_time
from umprof.views.plots import _pyplot

HOSTS_DRAWN = 8  # hosts with a timeline each; the others are listed in the hosts table
MEASURED, COPIES, AFTER = "#c9d3e0", "#2f6db5", "#1b5e20"


def _median(xs: list[float]) -> float:
    xs = sorted(xs)
    return xs[len(xs) // 2] if xs else 0.0


def host_rows(doc: dict, host: str) -> list[dict]:
    """The host's rank groups, one row each: medians over its ranks of that group (seconds)."""
    group_of = {p: g["group"] for g in doc["job"]["groups"] for p in g["paths"]}
    by_group: dict[int, list[dict]] = {}
    for r in doc["ranks"]:
        if r.get("job") and (r.get("host") or "") == host:
            by_group.setdefault(group_of[r["path"]], []).append(r["job"])
    return [{"group": g, "ranks": len(rows), "now_s": _median([x["now_s"] for x in rows]),
             "slowest_s": max(x["now_s"] for x in rows), "copy_s": _median([x["copy_s"] for x in rows]),
             "predicted_s": _median([x["predicted_s"] for x in rows])} for g, rows in sorted(by_group.items())]


def host_timeline(host: str, rows: list[dict]):
    """A host's groups on one time axis: the measured time (to the slowest rank), its copies, and the predicted."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(11, 1.4 + 0.5 * len(rows)))
    for i, r in enumerate(rows):
        ax.barh(i, r["slowest_s"] * 1e3, color=MEASURED, height=0.7, label="measured (slowest rank)" if i == 0 else None)
        ax.barh(i, r["copy_s"] * 1e3, color=COPIES, height=0.35, label="copies" if i == 0 else None)
        ax.plot([r["predicted_s"] * 1e3] * 2, [i - 0.4, i + 0.4], color=AFTER, lw=2,
                label="predicted after the advice" if i == 0 else None)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([f"group {r['group']} ({r['ranks']} rank{'s' if r['ranks'] > 1 else ''})" for r in rows])
    ax.invert_yaxis()
    ax.set_xlabel("ms (measured: the group's slowest rank; copies and predicted: its median rank)")
    ax.set_title(f"host {host or '(not in the traces)'}")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)  # beside the bars, never over them
    fig.tight_layout()
    return fig


def job_section(doc: dict, img, table) -> str:
    """The job's HTML (``img``: a figure as an <img>; ``table``: rows as a <table>, both the report's)."""
    job = doc["job"]
    tot, s = job["totals"], job["saving"]
    parts = ["<h2 id='job'>A job's ranks</h2>",
             f"<p>{tot['advised']} of {tot['traces']} rank traces advised, on {tot['hosts']} host(s).</p>"]
    if s:
        parts.append(f"<div class='reason'>The job saves {format_time(s['saving_s'])} ({html.escape(s['why'])}): now "
                     f"{format_time(s['now_s'])}, predicted {format_time(s['predicted_s'])}.</div>")
    for h in job["hosts"][:HOSTS_DRAWN]:
        parts.append(img(host_timeline(h["host"], host_rows(doc, h["host"]))))
    parts.append(table([{"host": h["host"] or "-", "ranks": len(h["ranks"]), "GPUs": ", ".join(h["gpus"]),
                         "groups": ", ".join(map(str, h["groups"]))} for h in job["hosts"]]))
    for g in job["groups"]:
        parts.append(f"<h3>group {g['group']}: {g['count']} rank(s), read from {html.escape(g['read_from'])}</h3>")
        parts.append(f"<div class='reason'>{html.escape(g['verdict'])}</div>")
        parts.append(table([{"advice for": a["flow"], "strategy": a["strategy"], "change": a["change"],
                             "now": format_time(a["now_s"]), "saves": format_time(a["saving_s"])} for a in g["advice"]]))
    slow = job["stragglers"]["slowest"]
    if slow:
        parts.append(table([{"straggler": x["rank"], "host": x["host"], "group": x["group"],
                             "copies": format_time(x["copy_s"]), "over its group": f"{x['extra_share']:.0%}"}
                            for x in slow]))
    parts += [f"<p class='muted'>{html.escape(x['code'])}: {html.escape(x['text'])}</p>"
              for x in job["limits"] + job["problems"]]
    return "".join(parts)

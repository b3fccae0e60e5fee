"""A job's ranks advised together: its traces' advice (one rank each) read as one answer.

Each rank comes as a plain record (what advising its trace returned: its path, host, rank, the
``AppAdvice.to_dict()`` of its applications, or the error that stopped it), so that records made in
other processes or on other machines read the same. From them:

- **groups**: ranks of identical behaviour (the same flows, loop, current strategy and advice, sizes read
  within ``SIZE_STEPS``), so that 512 identical ranks read as one group; and the ranks of each host;
- **shared links**: the ranks of one host copying at once share its links: ranks on one GPU share that
  GPU's link, ranks on several GPUs keep the share the host's concurrent figure (``host-links``) says; an
  advised loop is not promised faster than its bytes can pass through its share;
- **stragglers**: the ranks whose copies took longest beside their group's others, and by how much;
- **saving**: where the ranks synchronise (collective kernels), a step ends with its slowest rank: the
  job saves what its slowest rank's time drops by, not the sum of the ranks' savings.
"""

from __future__ import annotations

import math
from collections import Counter
from statistics import median_high

from umprof.model.shared_links import DIRECTIONS, ConcurrentFigures

JOB_SCHEMA = 1  # the job document's layout (``job_answer``)
SIZE_STEPS = 4  # sizes read to a quarter of a power of two: a flow's bytes within ~19% read alike
# flows under this share of a rank's bytes do not tell ranks apart: a DDP job's two ranks (torchrun, H100,
# 2026-12-06) differed only in one-off copies of 4-96 bytes, 1e-6 of their bytes
FLOW_SHARE = 0.01
# a rank's copies this much slower than its group's median make it a straggler: the advice's prediction
# error (10%, model.advise's PREDICTION_ERROR) is the closest two identical ranks can be told apart
STRAGGLER_MARGIN = 0.10
STRAGGLERS_SHOWN = 8  # the slowest ranks listed; the others are counted


def rank_label(r: dict) -> str:
    """A rank's name: 'rank 3', or its file's name where its rank is not known."""
    return f"rank {r['rank']}" if r.get("rank") is not None else str(r["path"]).rsplit("/", 1)[-1]


def check_ranks(ranks: list[dict]) -> tuple[list[dict], list[dict]]:
    """The ranks the job's answer reads (advised, of the job's GPU model and umprof schema), and a problem for
    each other one: {path, code, text}, one line naming its file."""
    problems = [{"path": r["path"], "code": "rank-failed", "text": _named(r["path"], r["error"])}
                for r in ranks if r.get("error")]
    ok = [r for r in ranks if not r.get("error") and r.get("applications")]
    for r in ranks:
        if not r.get("error") and not r.get("applications"):
            problems.append({"path": r["path"], "code": "rank-empty", "text": f"{r['path']}: no CUDA work advised"})
    if not ok:
        return [], problems
    gpu = Counter(_app(r)["gpu"] for r in ok).most_common(1)[0][0]
    version = Counter(_version(r) for r in ok).most_common(1)[0][0]
    kept = []
    for r in ok:
        if _app(r)["gpu"] != gpu:
            problems.append({"path": r["path"], "code": "gpu-mixed", "text": f"{r['path']}: traced on {_app(r)['gpu']}, "
                             f"the job's other ranks on {gpu}: left out of the job's answer (advise it on its own: umprof advise "
                             f"{r['path']})"})
        elif _version(r) != version:
            problems.append({"path": r["path"], "code": "schema-mixed", "text": f"{r['path']}: advised by umprof "
                             f"{_version(r)}, the job's other ranks by {version}: left out of the job's answer"})
        else:
            kept.append(r)
    return kept, problems


def _host(r: dict) -> str:
    return r.get("host") or ""  # '' where its trace does not name it


def _grouped(items, key) -> dict:
    """The items by ``key(item)``, each group in the items' order."""
    out: dict = {}
    for item in items:
        out.setdefault(key(item), []).append(item)
    return out


def _named(path: str, text: str) -> str:
    return text if text.startswith(str(path)) else f"{path}: {text}"


def _app(r: dict) -> dict:
    return r["applications"][0]  # the busiest process and GPU of its trace (api.advise's order)


def _version(r: dict) -> str:
    return f"{r.get('umprof', '?')} schema {_app(r).get('schema', 1)}"


def _step(x: float) -> float:
    return round(math.log2(x) * SIZE_STEPS) / SIZE_STEPS if x and x > 0 else 0.0


def signature(app: dict) -> tuple:
    """What a rank does, for grouping: the kinds of its flows that carry ``FLOW_SHARE`` of its bytes or more
    (direction, memory, size step, sync; however many streams carry each), its loop (calls an iteration, iterations
    to a size step), its current strategy and what each piece of its advice would use."""
    total = sum(f["total_bytes"] for f in app["flows"])
    flows = tuple(sorted({(f["direction"], f["host_kind"], _step(f["bytes"]), bool(f["sync"])) for f in app["flows"]
                          if f["total_bytes"] >= FLOW_SHARE * total}))
    loop = app.get("loop")
    loop_key = None if loop is None else (loop["calls_per_iteration"], _step(loop["iterations"]))
    advice = tuple(sorted((a["flow"] == "loop", a["strategy"], a["saving_s"] > 0) for a in app["advice"]))
    return flows, loop_key, app["strategy_now"], advice


def loop_s(app: dict) -> float:
    """The rank's measured time the advice prices: its loop's, else its GPU work's whole span."""
    loop = app.get("loop")
    return float(loop["measured_s"]) if loop else float(app["totals"]["wall_s"])


def loop_bytes(app: dict) -> dict[str, float]:
    """Bytes each way over the span ``loop_s`` covers."""
    loop, t = app.get("loop"), app["totals"]
    if not loop:
        return {d: float(t[f"{d}_bytes"]) for d in DIRECTIONS}
    per, first, n = loop["per_iteration"], loop["first"], loop["iterations"]
    return {d: float(first.get(f"{d}_bytes", 0.0) or 0.0) + float(per.get(f"{d}_bytes", 0.0) or 0.0) * max(n - 1, 0)
            for d in DIRECTIONS}


def measured_rates(app: dict) -> dict[str, float | None]:
    """Each direction's bytes/s over the rank's copies as traced (None where it copies none that way)."""
    out = {}
    for d in DIRECTIONS:
        flows = [f for f in app["flows"] if f["direction"] == d]
        seconds = sum(f["time_s"] for f in flows)
        out[d] = sum(f["total_bytes"] for f in flows) / seconds if seconds > 0 else None
    return out


def loop_saving(app: dict) -> tuple[float, str]:
    """The loop's advised saving (seconds) and the strategy it comes from ('' where none is advised)."""
    loop = next((a for a in app["advice"] if a["flow"] == "loop"), None)
    return (max(float(loop["saving_s"]), 0.0), loop["strategy"]) if loop else (0.0, "")


def _copies(app: dict) -> bool:
    return any(v > 0 for v in loop_bytes(app).values())


def shared_links(ranks: list[dict], figures: ConcurrentFigures) -> tuple[dict[str, dict], list[dict]]:
    """Each rank's share of its host's links while the host's other ranks copy too (keyed by path), and a limit
    for each host whose GPUs copy at once with no concurrent figure for them."""
    by_host = _grouped((r for r in ranks if _copies(_app(r))), _host)
    out, limits = {}, []
    unnamed = by_host.pop("", [])
    if len(unnamed) > 1:
        limits.append({"code": "host-unknown", "text": (
            f"{len(unnamed)} ranks' traces do not name their host: each is priced as if it had its host's links "
            "to itself")})
    unmeasured: dict[tuple[str, int], list[str]] = {}
    for host, members in sorted(by_host.items()):
        devices = Counter((_app(r)["gpu"], _app(r)["device"]) for r in members)
        gpu = _app(members[0])["gpu"]
        kept, figure_words = _kept(figures, gpu, len(devices))
        if len(devices) > 1 and kept is None:
            unmeasured.setdefault((gpu, len(devices)), []).append(host)
        for r in members:
            out[r["path"]] = _share(r, devices[(_app(r)["gpu"], _app(r)["device"])], len(devices), kept, figure_words)
    limits += [_unmeasured_limit(gpu, n, names) for (gpu, n), names in unmeasured.items()]
    return out, limits


def _unmeasured_limit(gpu: str, gpus: int, hosts: list[str]) -> dict:
    named = ", ".join(hosts[:3]) + (f" and {len(hosts) - 3} more" if len(hosts) > 3 else "")
    return {"code": "no-concurrent-figure", "text": (
        f"{len(hosts)} host(s) ({named}): {gpus} {gpu} GPUs each copy at once, and no host-links measurement of "
        f"{gpus} or more of them is at hand (`umprof run host-links --device all` on such a host, passed with --links): "
        "each GPU is priced at its link's rate alone, which sharing the host can lower")}


def _kept(figures: ConcurrentFigures, gpu: str, gpus: int) -> tuple[dict | None, str]:
    """Each direction's share of its rate a GPU keeps with ``gpus`` GPUs copying at once, and where it comes from."""
    if gpus <= 1:
        return {d: 1.0 for d in DIRECTIONS}, ""  # one GPU's link, shared by its ranks: no host figure needed
    found = {d: figures.lookup(gpu, d, gpus) for d in DIRECTIONS}
    if any(f is None for f in found.values()):
        return None, ""
    return {d: f.kept for d, f in found.items()}, "; ".join(sorted({f"{f.source} ({f.gpus} GPUs)" for f in found.values()}))


def _share(r: dict, on_link: int, gpus: int, kept: dict | None, figure_words: str) -> dict:
    """One rank's priced share: the rate it can count on each way and the least time its loop's bytes need."""
    app = _app(r)
    link = app.get("link_bytes_per_s") or math.nan
    share = {d: link * (kept or {}).get(d, 1.0) / on_link for d in DIRECTIONS}
    need = loop_bytes(app)
    floor = max((need[d] / share[d] for d in DIRECTIONS if need[d] > 0 and share[d] > 0), default=0.0)
    return {"ranks_on_link": on_link, "gpus_at_once": gpus, "figure": figure_words or None,
            "kept": kept, "link_bytes_per_s": None if math.isnan(link) else link,
            "shared_bytes_per_s": {d: None if math.isnan(v) else v for d, v in share.items()},
            "measured_bytes_per_s": measured_rates(app), "bytes": need, "least_s": floor}


def rank_row(r: dict, share: dict | None) -> dict:
    """A rank's figures for the job: its time, copies, advised saving, and that saving priced on its share of the
    links (no faster than its bytes through its share)."""
    app = _app(r)
    now, (saving, strategy) = loop_s(app), loop_saving(app)
    alone = now - saving
    priced = max(alone, share["least_s"]) if share else alone
    return {"path": r["path"], "rank": r.get("rank"), "label": rank_label(r), "host": _host(r),
            "gpu": app["gpu"], "device": app["device"], "now_s": now, "copy_s": float(app["totals"]["copy_s"]),
            "advised": strategy, "saving_alone_s": saving, "predicted_s": priced, "saving_s": max(now - priced, 0.0),
            "shared": share, "collectives": int(r.get("collectives") or 0), "world_size": r.get("world_size")}


def shared_summary(rows: dict[str, dict]) -> list[dict]:
    """Per host: its ranks copying at once, the share each counts on, what they measured, and how many ranks' advised
    times the share raised (their bytes need longer through it than the advice alone predicts)."""
    by_host = _grouped((r for r in rows.values() if r["shared"]), lambda r: r["host"])
    out = []
    for host, rs in sorted(by_host.items()):
        first = rs[0]["shared"]  # a host's ranks share its figure and link
        out.append({"host": host, "ranks": len(rs), "gpus_at_once": first["gpus_at_once"],
                    "ranks_on_a_link": max(r["shared"]["ranks_on_link"] for r in rs),
                    "figure": first["figure"], "kept": first["kept"], "link_bytes_per_s": first["link_bytes_per_s"],
                    "shared_bytes_per_s": {d: _median_of(r["shared"]["shared_bytes_per_s"][d] for r in rs)
                                           for d in DIRECTIONS},
                    "measured_bytes_per_s": {d: _median_of(r["shared"]["measured_bytes_per_s"][d] for r in rs)
                                             for d in DIRECTIONS},
                    "bounded_ranks": sum(1 for r in rs if r["predicted_s"] > r["now_s"] - r["saving_alone_s"])})
    return out


def _median_of(values) -> float | None:
    """The median of the values given (None aside; the higher middle one of an even count), None where none is."""
    xs = [v for v in values if v is not None]
    return median_high(xs) if xs else None


def groups(ranks: list[dict], rows: dict[str, dict]) -> list[dict]:
    """Ranks of identical behaviour (``signature``), the largest group first: each read once, from its median rank."""
    by_sig = _grouped(ranks, lambda r: signature(_app(r)))
    out = []
    for i, members in enumerate(sorted(by_sig.values(), key=lambda m: (-len(m), rank_label(m[0])))):
        members = sorted(members, key=lambda r: rows[r["path"]]["now_s"])
        median_rank = members[len(members) // 2]  # median_high's, of the times it is sorted by
        middle = _app(median_rank)
        times = [rows[r["path"]]["now_s"] for r in members]
        out.append({"group": i + 1, "ranks": [rank_label(r) for r in members], "count": len(members),
                    "hosts": dict(Counter(_host(r) for r in members)), "read_from": rank_label(median_rank),
                    "now_s": {"min": times[0], "median": rows[median_rank["path"]]["now_s"], "max": times[-1]},
                    "saving_s": median_high(rows[r["path"]]["saving_s"] for r in members),
                    "strategy_now": middle["strategy_now"], "flows": middle["flows"], "loop": middle.get("loop"),
                    "advice": middle["advice"], "verdict": middle.get("verdict", ""), "limits": middle.get("limits", []),
                    "paths": [r["path"] for r in members]})
    return out


def hosts(ranks: list[dict], found: list[dict]) -> list[dict]:
    """Each host's ranks, GPUs and the groups they belong to."""
    group_of = {p: g["group"] for g in found for p in g["paths"]}
    out: dict[str, dict] = {}
    for r in ranks:
        h = out.setdefault(_host(r), {"host": _host(r), "ranks": [], "gpus": Counter(), "groups": set()})
        h["ranks"].append(rank_label(r))
        h["gpus"][f"{_app(r)['gpu']} #{_app(r)['device']}"] += 1
        h["groups"].add(group_of[r["path"]])
    return [dict(h, gpus=dict(h["gpus"]), groups=sorted(h["groups"])) for h in sorted(out.values(), key=lambda h: h["host"])]


def stragglers(found: list[dict], rows: dict[str, dict]) -> dict:
    """The ranks whose copies took ``STRAGGLER_MARGIN`` longer than their group's median, slowest first."""
    slow = []
    for g in found:
        median = median_high(rows[p]["copy_s"] for p in g["paths"])
        if len(g["paths"]) < 2 or median <= 0:
            continue
        for p in g["paths"]:
            extra = rows[p]["copy_s"] - median
            if extra > STRAGGLER_MARGIN * median:
                slow.append({"rank": rows[p]["label"], "host": rows[p]["host"], "group": g["group"], "path": p,
                             "copy_s": rows[p]["copy_s"], "group_median_copy_s": median, "extra_s": extra,
                             "extra_share": extra / median})
    slow.sort(key=lambda s: -s["extra_s"])
    return {"margin": STRAGGLER_MARGIN, "count": len(slow), "slowest": slow[:STRAGGLERS_SHOWN]}


def job_saving(rows: dict[str, dict]) -> dict:
    """The job's saving: where its ranks run collectives, or were launched as one job (a launcher's world size: a
    data-parallel job's collectives may run on the host, gloo's or MPI's, as no kernel), a step waits for the slowest
    rank, so the job saves what its slowest rank's time drops by; else the ranks' savings add up."""
    ranks = list(rows.values())
    collectives = any(r["collectives"] for r in ranks)
    size = max((r["world_size"] or 0 for r in ranks), default=0)
    synchronised = collectives or size > 1
    now = max(ranks, key=lambda r: r["now_s"])
    after = max(ranks, key=lambda r: r["predicted_s"])
    total = sum(r["saving_s"] for r in ranks)
    return {"synchronised": synchronised, "now_s": now["now_s"], "slowest_now": now["label"],
            "predicted_s": after["predicted_s"], "slowest_after": after["label"],
            "saving_s": now["now_s"] - after["predicted_s"] if synchronised else total,
            "rank_seconds_saved": total,
            "saving_alone_s": sum(r["saving_alone_s"] for r in ranks),
            "why": _why(collectives, size)}


def _why(collectives: bool, size: int) -> str:
    if collectives:
        return "its ranks run collective kernels: a step ends with the slowest rank"
    if size > 1:
        return (f"its ranks were launched as one job of {size} (the launcher's world size) and run no collective "
                "kernel (gloo's or MPI's run on the host): its steps are taken to end with the slowest rank")
    return "no collective kernels and no launcher's world size in its traces: each rank's saving is its own, summed"


def job_answer(ranks: list[dict], figures: ConcurrentFigures | None = None) -> dict:
    """The job's answer: {"schema", "job": {totals, groups, hosts, stragglers, saving, shared_links, limits,
    problems}, "ranks": [...]} from its ranks' records (see the module's docstring)."""
    kept, problems = check_ranks(ranks)
    shares, limits = shared_links(kept, figures or ConcurrentFigures())
    rows = {r["path"]: rank_row(r, shares.get(r["path"])) for r in kept}
    found = groups(kept, rows)
    job = {"totals": _totals(ranks, kept), "groups": found, "hosts": hosts(kept, found),
           "stragglers": stragglers(found, rows), "saving": job_saving(rows) if rows else None,
           "shared_links": shared_summary(rows),
           "limits": limits, "problems": problems}
    out_ranks = [dict(r, job=rows.get(r["path"])) for r in ranks]
    return {"schema": JOB_SCHEMA, "job": job, "ranks": out_ranks}


def _totals(ranks: list[dict], kept: list[dict]) -> dict:
    apps = [_app(r) for r in kept]
    return {"traces": len(ranks), "advised": len(kept), "failed": sum(1 for r in ranks if r.get("error")),
            "hosts": len({_host(r) for r in kept}), "gpus": dict(Counter(a["gpu"] for a in apps)),
            "copy_s": sum(a["totals"]["copy_s"] for a in apps),
            "h2d_bytes": sum(a["totals"]["h2d_bytes"] for a in apps),
            "d2h_bytes": sum(a["totals"]["d2h_bytes"] for a in apps)}

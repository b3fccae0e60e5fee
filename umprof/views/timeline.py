"""An application's copies and kernels on a timeline, by stream, colored by host memory kind."""

from __future__ import annotations

import numpy as np

from umprof.views.plots import _pyplot

COLORS = {"pageable": "#e6862e", "pinned": "#2f6db5", "managed": "#3a9a4a", "device": "#8e6bbf", "unknown": "#999999"}
KERNEL = "#555555"
MAX_ITERATIONS = 4  # a loop's first iterations are drawn: the picture of one is the picture of all


def timeline_figure(app, max_ops: int = 4000):
    """The application's first iterations (or its first ``max_ops`` operations): one row per stream,
    copies colored by the host memory they read or write, kernels gray, unified-memory migrations
    as thin marks on their own row."""
    plt = _pyplot()
    copies, kernels = app.copies, app.kernels
    t0 = min([x for x in (copies["start"].min(), kernels["start"].min()) if x == x] or [0])
    end = None
    if app.loop is not None:  # from the first GPU operation, as long as that many steady iterations take
        end = t0 + app.loop.steady_s * 1e9 * min(app.loop.iterations, MAX_ITERATIONS)
    ops = []
    for _, r in copies.head(max_ops).iterrows():
        if end is None or r["start"] <= end:
            um = str(r["direction"]).startswith("um_")
            ops.append(("UM migrations" if um else f"stream {r['stream']}", r["start"], r["end"],
                        COLORS.get(r["host_kind"], COLORS["unknown"]), r["direction"]))
    for _, r in kernels.head(max_ops).iterrows():
        if end is None or r["start"] <= end:
            ops.append((f"stream {r['stream']}", r["start"], r["end"], KERNEL, "kernel"))
    rows = sorted({o[0] for o in ops}, key=lambda x: (x == "UM migrations", x))
    fig, ax = plt.subplots(figsize=(11, 1.9 + 0.45 * max(len(rows), 1)))
    for i, row in enumerate(rows):
        mine = [o for o in ops if o[0] == row]
        bars = [((o[1] - t0) / 1e6, max((o[2] - o[1]) / 1e6, 1e-4)) for o in mine]
        ax.broken_barh(bars, (i - 0.4, 0.8), facecolors=[o[3] for o in mine])
    ax.set_yticks(np.arange(len(rows)))
    ax.set_yticklabels(rows)
    ax.set_xlabel("ms from the first GPU operation")
    shown = (f"the time of {min(app.loop.iterations, MAX_ITERATIONS)} of its {app.loop.iterations} iterations"
             if app.loop else "the run")
    fig.suptitle(f"{app.name.rsplit('/', 1)[-1]} on {app.gpu}: {shown}", fontsize=10)
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in (*COLORS.values(), KERNEL)]
    ax.legend(handles, [*(f"copy, {k} memory" for k in COLORS), "kernel"], fontsize=7, loc="lower center",
              bbox_to_anchor=(0.5, 1.0), ncol=6, frameon=False)
    fig.tight_layout()
    return fig

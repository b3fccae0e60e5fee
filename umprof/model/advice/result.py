"""What the advice on a trace answers: one Advice per change (the loop's, then each flow's), an AppAdvice per
application, and its limits, each a Limit: a stable code that tools match on, and the text a person reads."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from umprof.model.advice import thresholds as th
from umprof.model.application import Application, Loop
from umprof.model.workload import Workload


# the advise JSON's shape: 2 gives limits and notes as {"code", "text"}; a tool reading it checks this first
SCHEMA = 2
# the application's notes (umprof.model.application) carry no code of their own: each is named by how it begins
NOTE_CODES = (("the trace holds", "other-processes"), ("its process drives", "several-gpus"))


class Limit(str):
    """A limit of the advice or a note on it: its text (it is the string), and ``code``, a stable kebab-case name that
    tools match on instead of the words."""

    code: str

    def __new__(cls, code: str, text: str) -> "Limit":
        obj = super().__new__(cls, text)
        obj.code = code
        return obj

    @property
    def text(self) -> str:
        return str.__str__(self)

    def to_dict(self) -> dict:
        return {"code": self.code, "text": self.text}


@dataclass
class Advice:
    """One change and what it saves: for the loop as a whole or one flow of copies."""

    flow: str  # 'loop', or the flow it is for ('h2d pageable 64MiB stream 7')
    strategy: str
    change: str
    now_s: float  # measured in the trace
    predicted_s: float
    saving_s: float
    tie: bool = False  # within the prediction's error of the best
    note: str = ""
    saving_low_s: float = 0.0  # the saving's band: the prediction's own error either side (thresholds.SAVING_ERROR)
    saving_high_s: float = 0.0
    idiom: str = ""  # the framework's own choice this change is (torch_choices' code: 'pinned-out'), '' for a way's
    conditional: bool = False  # the saving holds only where ``note`` says
    # what made it advisable: the figure of its saving that was weighed (the saving, or its band's low end) and the
    # share of the time the ways price it had to exceed (thresholds.SAVING_ERROR or NOISE); 0 where none was weighed
    weighed_s: float = 0.0
    must_clear: float = 0.0

    def to_dict(self) -> dict:
        return {"flow": self.flow, "strategy": self.strategy, "change": self.change, "now_s": self.now_s,
                "predicted_s": self.predicted_s, "saving_s": self.saving_s, "saving_low_s": self.saving_low_s,
                "saving_high_s": self.saving_high_s, "tie": self.tie, "note": self.note,
                "idiom": self.idiom or None, "conditional": self.conditional}


def band(saving: float, priced: float, most: float = float("inf")) -> tuple[float, float]:
    """A saving's band: the prediction's own error on a saving (a share of the time the ways price, ``priced_s``)
    either side, the high end no more than ``most`` (what the change removes); none for no saving."""
    if saving == 0:
        return 0.0, 0.0
    err = th.SAVING_ERROR * priced
    return saving - err, min(saving + err, max(saving, most))


@dataclass
class AppAdvice:
    """What umprof advises for one application (a process on a GPU) of a trace."""

    app: Application
    calibration: str
    workload: Workload | None
    mapping: str  # how the workload was read from the trace, in words
    link_bytes_per_s: float = math.nan  # the PCIe link's ceiling per direction (the calibration's GPU)
    ranking: list[dict] = field(default_factory=list)  # every strategy: predicted and saving, fastest first
    excluded: dict = field(default_factory=dict)
    advice: list[Advice] = field(default_factory=list)  # the loop's first, then the flows'
    verdict: str = ""
    limits: list[Limit] = field(default_factory=list)
    wall_s: float | None = None  # the program's untraced wall time, where given
    traced_s: float = math.nan  # the loop's time as traced
    tracing_overhead_s: float = 0.0  # the tracing's own time in it, taken out of the time now (rules.tracing)
    # the part of the time now that the ways price (``priced_s``): the prediction's own error, and the noise a saving
    # must clear, are shares of it
    priced_s: float = math.nan
    overhead_from: str = ""  # "wall" (measured against wall_s) or "estimate" (from the trace's records)
    framework: str = ""  # what the program allocates and copies with: "pytorch", "cupy", "pycuda" or "cuda"
    framework_why: str = ""  # the trace's evidence for it, in words
    tracer: str = "nsys"  # what recorded the trace: "nsys" (Nsight Systems) or "kineto" (torch.profiler)
    choices: list[dict] = field(default_factory=list)  # the framework's own choices priced (PyTorch's), best first

    @property
    def loop_advice(self) -> Advice | None:
        return next((a for a in self.advice if a.flow == "loop"), None)

    def to_dict(self) -> dict:
        """The advice as JSON-ready data (``umprof advise --json``)."""
        a = self.app
        return {
            "process": {"pid": a.pid, "name": a.name}, "gpu": a.gpu, "device": a.device,
            "calibration": self.calibration, "strategy_now": a.strategy, "strategy_now_why": a.strategy_why,
            "totals": a.totals,
            "link_bytes_per_s": plain(self.link_bytes_per_s),
            "flows": [dict({k: plain(v) for k, v in r.items()},
                           link_share=plain(r["bytes_per_s"] / self.link_bytes_per_s))
                      for r in a.flows.to_dict(orient="records")],
            "loop": _loop_dict(a),
            "unified_memory": a.um,
            "host_fault_stalls": {"traced_s": a.host_faults.seconds, "stretches": a.host_faults.stretches},
            "workload": None if self.workload is None else {"text": self.workload.describe(), "read_as": self.mapping,
                                                             **self.workload.__dict__},
            "ranking": self.ranking, "excluded": self.excluded,
            "advice": [x.to_dict() for x in self.advice], "verdict": self.verdict,
            "limits": [coded(x).to_dict() for x in self.limits], "notes": [coded(x).to_dict() for x in a.notes],
            "schema": SCHEMA,
            "framework": {"name": self.framework or None, "evidence": self.framework_why or None},
            "tracer": self.tracer, "choices": self.choices,
            "time_now": {"traced_s": plain(self.traced_s), "untraced_wall_s": self.wall_s,
                         "tracing_overhead_s": self.tracing_overhead_s, "overhead_from": self.overhead_from or None,
                         "priced_s": plain(self.priced_s)},
        }


def _loop_dict(a: Application) -> dict | None:
    loop = a.loop
    if loop is None:
        return None
    return {**_loop_core(loop), "measured_s": loop_s(a),
            "inner": None if loop.inner is None else _loop_core(loop.inner),
            "before": None if loop.lead is None else {
                "iterations": loop.lead.iterations, "calls_per_iteration": loop.lead.period,
                "steady_s": loop.lead.steady_s, "per_iteration": loop.lead.per_iteration}}


def _loop_core(loop) -> dict:
    """A loop's (or its inner loop's) count, cut, times and what an iteration does."""
    return {"iterations": loop.iterations, "calls_per_iteration": loop.period, "cut_at": loop.anchor,
            "first_s": loop.first_s, "steady_s": loop.steady_s, "per_iteration": loop.per_iteration,
            "first": {k: plain(v) for k, v in loop.first.items()}}


def coded(x: str) -> Limit:
    """A limit or note as a Limit: itself, or a note of the application's named by how it begins (NOTE_CODES)."""
    if isinstance(x, Limit):
        return x
    return Limit(next((code for start, code in NOTE_CODES if x.startswith(start)), "application-note"), x)


def plain(v):
    """A figure as JSON takes it: NaN as None, numpy scalars as Python's."""
    if isinstance(v, float) and math.isnan(v):
        return None
    return getattr(v, "item", lambda: v)()


def loop_s(app: Application) -> float:
    """The loop's measured time: its first iteration's start to its last's end (the run's, without a loop)."""
    if app.loop is None:
        return app.wall_s
    return (app.loop.span[1] - app.loop.span[0]) / 1e9


def first_setup_s(loop: Loop | None) -> float:
    """The first iteration's time beyond a steady one's, less what the GPU did beyond a steady iteration's work: the
    setup it carries (CUDA's and its libraries' first use, its data made or loaded). Nothing without a loop; the
    loop of copies before it where it has one (its ``lead``, whose first iteration is the run's first)."""
    if loop is None:
        return 0.0
    if loop.lead is not None:
        return first_setup_s(loop.lead)
    return _beyond_steady_s(loop, loop.first)


def _beyond_steady_s(loop: Loop, iteration: dict) -> float:
    """An iteration's wall time beyond a steady one's, less what the GPU did beyond a steady iteration's work."""
    gpu_more = max(0.0, iteration.get("busy_s", 0.0) - loop.per_iteration.get("busy_s", 0.0))
    return max(0.0, iteration["wall_s"] - loop.steady_s - gpu_more)


def last_teardown_s(loop: Loop | None) -> float:
    """What the program does after its GPU's last work, up to its last CUDA call (its results written, a framework's
    libraries unloaded at exit: 0.6 s after a PyTorch loop's last kernel on an H100), as far as its last iteration
    runs beyond a steady one's with the GPU no busier. Host work followed by more GPU work stays priced: a trace that
    holds part of a loop runs on into the program's other work, which the GPU takes part in. Nothing without a loop of
    two iterations or more."""
    if loop is None or not loop.last:
        return 0.0
    return min(_beyond_steady_s(loop, loop.last), loop.after_gpu_s)


def priced_s(loop: Loop | None, now_s: float, setup_s: float = 0.0) -> float:
    """The part of the loop's time now (``now_s``) that the ways price, of which the prediction's own error on a
    saving (SAVING_ERROR) and the noise a saving must clear (NOISE) are shares: the time now less its first
    iteration's one-off setup, which no way of moving memory changes (the CUDA context, libraries and kernels loaded,
    a framework's own start: 4.1 s of a PyTorch DataLoader loop's 5.5 s on an H100, whose 191 steady iterations took
    1.2 s), and its last iteration's one-off teardown (``last_teardown_s``). That is less the setup the ways do price
    (``setup_s``: the program's allocation calls, wherever they fall, and the current way's predicted first write and
    first-iteration extra, which differ from way to way). Never below the steady iterations' total, nor above the time
    now; the time now itself without a loop."""
    if loop is None:
        return now_s
    one_off = max(0.0, first_setup_s(loop) + last_teardown_s(loop) - setup_s)
    return min(now_s, max(now_s - one_off, (loop.iterations - 1) * loop.steady_s))

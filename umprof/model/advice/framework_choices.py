"""The framework's own choices in the advice: a PyTorch program's (:mod:`umprof.model.torch_choices`) priced beside
umprof's ways. The loop's advice becomes the best of them, in PyTorch's idiom, where the low end of its saving's band
beats the way's; every one is listed with its band (``AppAdvice.choices``). The do-no-harm rule holds for them as
for the ways: a choice is advised only where the low end of its band is above the prediction's own error on a
saving (thresholds.SAVING_ERROR of the time the ways price, ``result.priced_s``); one whose saving rests on what
the trace cannot show is said as conditional, with the condition. A DataLoader that builds its batches in the loop's
own thread (``num_workers=0``) is said with worker processes as the change, bounded, not priced (``loader_limit``)."""

from __future__ import annotations

from umprof.core.units import format_time
from umprof.model import torch_choices
from umprof.model.advice import explain
from umprof.model.advice import thresholds as th
from umprof.model.advice.result import Advice, AppAdvice, Limit
from umprof.model.application import Application

# the way of umprof's each choice amounts to (what its host memory becomes), for tools that read strategies
STRATEGY_OF = {"pin-once": "pinned", "drop-pin": "pageable", "dataloader-pin-thread": "pageable",
               "dataloader-unpinned": "pageable", "dataloader-pinned": "pinned", "dataset-pinned-once": "pinned",
               "resident": "resident", "offload-pinned": "pinned", "offload-prefetched": "pinned-pipelined",
               "pinned-out": "pinned", "pinned-in": "pinned", "host-step-on-gpu": "resident",
               "host-ops-on-gpu": "pageable"}


def epochs_of(app: Application) -> int | None:
    """How many passes the loop makes over its data, where the trace shows it: the outer loop's count where the loop
    holds a shorter one (batches in epochs, layers in requests); else unknown."""
    loop = app.loop
    return loop.iterations if loop is not None and loop.inner is not None else None


def advisable(c: torch_choices.TorchChoice, priced: float) -> bool:
    """Whether a choice may be advised: it saves time, and the low end of its band exceeds the prediction's own error
    on a saving (a share of the time the ways price, ``priced``)."""
    return not c.host_bytes and c.low_s > 0 and c.low_s > th.SAVING_ERROR * priced


def add_pytorch_choices(app: Application, cal, ranges, out: AppAdvice) -> None:
    """Price the PyTorch program's choices, list them on ``out`` and make the best the loop's advice where it beats
    the way advised (see the module's docstring), the choice of the highest low end of its band first."""
    loop = out.loop_advice
    if loop is None or ranges is None:
        return
    # the trace does not say how much GPU memory is free: choices keeps data there only within its share of it
    found = torch_choices.choices(app, ranges, cal, epochs=epochs_of(app))
    now_s, priced = loop.now_s, out.priced_s
    out.choices = [dict(c.to_dict(), strategy=STRATEGY_OF.get(c.code), advised=advisable(c, priced),
                        text=torch_choices.describe(c)) for c in found]
    # the best is the one whose saving is surest: the highest low end of its band
    best = max((c for c in found if advisable(c, priced)), key=lambda c: c.low_s, default=None)
    if best is None or not explain.beats_way(loop, best.low_s):
        return
    chosen = _as_advice(best, now_s)
    for d in out.choices:
        d["chosen"] = d["code"] == best.code
    explain.advise_instead(app, out, chosen, condition=best.why if best.conditional else "")


def _as_advice(c: torch_choices.TorchChoice, now_s: float) -> Advice:
    """The choice as the loop's advice: its saving held within the time now."""
    saving = min(c.saving_s, now_s)
    return Advice("loop", STRATEGY_OF.get(c.code, c.code), c.idiom, now_s, now_s - saving, saving,
                  note=c.why if c.conditional else "", saving_low_s=min(c.low_s, saving),
                  saving_high_s=min(c.high_s, now_s), idiom=c.code, conditional=c.conditional,
                  weighed_s=c.low_s, must_clear=th.SAVING_ERROR)


def loader_limit(app: Application, ranges, out: AppAdvice) -> list[Limit]:
    """Where a PyTorch loop builds its DataLoader's batches in its own thread (``num_workers=0``) for more than the
    prediction's error: that time said, with worker processes as the change that can hide it behind the GPU's work,
    bounded by that time and the GPU's idle time over the loop (less the tracing's); the trace cannot say how fast
    workers would keep up, so it is said, not priced."""
    seconds, batches = torch_choices.loader_in_loop(app, ranges)
    if batches < torch_choices.RECURRING or seconds <= th.SAVING_ERROR * out.priced_s:
        return []
    at_most = min(seconds, explain.idle_untraced_s(app, out))
    return [Limit("loader-in-loop-thread",
                  f"its DataLoader builds each batch in the loop's own thread (num_workers=0): "
                  f"{format_time(seconds / batches)} a batch, {format_time(seconds)} over {batches} batches; "
                  "`DataLoader(..., num_workers=4, persistent_workers=True)` builds them in worker processes while "
                  f"the GPU works, and can save up to {format_time(at_most)} (that time, no more than the GPU's idle "
                  "time over the loop); the trace cannot say how fast the workers keep up (the cores they share with "
                  "the loop, each batch's passage from them): time it")]

"""Work on several GPUs at once, timed: a :class:`Leg` is one GPU's share of a phase, issued on
that GPU's own stream between its own events (CUDA times events only within one GPU).

A phase whose legs run on other GPUs is timed on the run's GPU like this: the timer's start
event, then a ``go`` event on the run's legacy stream that every leg's stream waits for; the
legs; then a fence stream on the run's GPU that waits for every leg's end. The legacy stream
waits for that fence, so the timer's end event closes the phase when the last leg is done.
Each leg's own time (its events) is the time of that direction alone.
"""

from __future__ import annotations

from contextlib import contextmanager

from umprof.core.devices import ALL, pair_text, pairs, parse_pair
from umprof.core.errors import CaseSkipped


def gpus_text(devices) -> str:
    return f"{len(devices)} (GPU {', '.join(map(str, devices))})"


def case_pair(ctx, text: str) -> tuple[int, int]:
    """(A, B) of a case's ``pair`` axis, or CaseSkipped: one GPU (``all`` made no pair), or a
    pair naming a GPU the run does not have."""
    pair = parse_pair(text)
    if pair == ALL:
        raise CaseSkipped(f"needs two GPUs; the run has {gpus_text(ctx.devices)}")
    missing = [g for g in pair if g not in ctx.devices]
    if missing:
        raise CaseSkipped(f"pair {text}: GPU {missing[0]} is not among the run's {gpus_text(ctx.devices)}; "
                          "pass --device with both")
    return pair


def pair_cases(params: dict, devices, both_directions: bool) -> list[dict]:
    """An op's ``device_cases``: ``pair=all`` → every pair of the run's GPUs (ordered, or one per
    unordered pair when a case covers both directions); an explicit pair stays as it is."""
    if str(params["pair"]).lower() != ALL:
        return [params]
    return [{**params, "pair": pair_text(a, b)} for a, b in pairs(devices, both_directions)]


class Leg:
    """One GPU's stream and event pair, created in that GPU's context."""

    def __init__(self, session):
        self.session = session
        cuda = session.cuda
        with self.session.current():
            self.stream = cuda.Stream()
            self.start, self.end = cuda.Event(), cuda.Event()

    @contextmanager
    def issue(self, after=None):
        """The body issues the leg's work on ``self.stream`` with the leg's GPU current, after
        the event ``after`` (from any GPU) and between the leg's events."""
        with self.session.current():
            if after is not None:
                self.stream.wait_for_event(after)
            self.start.record(self.stream)
            yield self.stream
            self.end.record(self.stream)

    def seconds(self) -> float:
        """The leg's time by its own GPU's events (waits for the leg to end)."""
        with self.session.current():
            self.end.synchronize()
            return self.end.time_since(self.start) / 1e3


class Fence:
    """The run GPU's side of a phase spread over legs: a ``go`` event the legs start after, and
    a stream that waits for their ends (the legacy stream, and so the timer, waits for it)."""

    def __init__(self, session):
        cuda = session.cuda
        self.go = cuda.Event()
        self.stream = cuda.Stream()  # a blocking stream: the legacy stream waits for its work

    def open(self):
        """Record ``go`` on the legacy stream (after the timer's start event); returns it."""
        self.go.record()
        return self.go

    def close(self, legs) -> None:
        for leg in legs:
            self.stream.wait_for_event(leg.end)

"""The adjustments of the advice: each a named rule in a module of its own that corrects the calibration's prices
with what the trace measured, in seconds, for the program as it runs now and for the ways it applies to.

Every rule returns an :class:`Adjustment`; ``advice.pipeline.adjust`` adds them up (the program's time now first:
what its trace measured stands for the model's price of its own way; then what the other ways keep or drop) and
ranks the ways by the sums."""

from __future__ import annotations

from dataclasses import dataclass, field

from umprof.model.advice.result import Limit


@dataclass
class Adjustment:
    """What one rule changes: ``now_s`` added to the time of the program as it runs now (its current way's, in the
    model's frame), ``ways`` (strategy -> seconds) added to those ways' predicted times, and the limits it says.
    ``seconds`` is the rule's own figure (what it measured or priced), said in its limit."""

    rule: str
    seconds: float = 0.0
    now_s: float = 0.0
    ways: dict[str, float] = field(default_factory=dict)
    limits: list[Limit] = field(default_factory=list)


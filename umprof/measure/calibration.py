"""What a calibration measures: the ``calibration`` group's scenarios whole (``full``), or the part
that differs between machines of one GPU model (``quick``).

A full calibration is every scenario of ``scenarios/calibration/`` as its file says (about 5
minutes on an H100 or an H200). A quick one measures the host's writes and reads, the copies each
way (whole and in parts), allocation and first touch (of numpy's and of malloc's pages, copied in and
stored word by word), and
managed memory's faults back to the host (read back by numpy and word by word), at fewer sizes and with shorter sampling (about a
minute), and takes the kernels' passes and the access patterns' ratios, which belong to the GPU
model, from that model's shipped calibration.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from umprof.core.errors import UsageError

GROUP = "calibration"


@dataclass(frozen=True)
class Profile:
    name: str
    about: str
    scenarios: tuple[str, ...] = ()  # empty: every scenario of the group
    axes: dict = field(default_factory=dict)  # scenario → {axis: values}, as `-a` takes them
    timing: dict = field(default_factory=dict)  # every scenario's stopping rule, over its own [timing]
    needs_base: bool = False  # completed by the shipped calibration of the GPU's model


PROFILES = {
    "full": Profile("full", "every calibration scenario as scenarios/calibration/ defines it"),
    "quick": Profile(
        "quick", "the host's memory, the link, allocation and managed faults back to the host, at fewer sizes; "
                 "the kernels and access patterns from the GPU model's shipped calibration",
        scenarios=("calibration-loop-sizes", "calibration-loop-steady", "calibration-loop-setup",
                   "calibration-loop-setup-malloc", "calibration-loop-setup-stores", "calibration-loop-host",
                   "calibration-loop-host-read", "calibration-loop-read-words", "calibration-loop-copies"),
        axes={"calibration-loop-sizes": {"bytes": "16MiB,256MiB"},
              "calibration-loop-steady": {"bytes": "64KiB,1MiB"},
              "calibration-loop-setup": {"bytes": "64KiB,16MiB,256MiB,1GiB"},
              "calibration-loop-setup-malloc": {"bytes": "64KiB,16MiB,256MiB,1GiB"},
              "calibration-loop-setup-stores": {"bytes": "16MiB,256MiB"},
              "calibration-loop-host": {"bytes": "16MiB,256MiB"},
              "calibration-loop-host-read": {"bytes": "16MiB,256MiB"},
              "calibration-loop-read-words": {"bytes": "16MiB,256MiB"},
              "calibration-loop-copies": {"copies": "32,512,2048"}},
        timing={"timeout": 0.1},
        needs_base=True),
}


def profile(name: str) -> Profile:
    if name not in PROFILES:
        raise UsageError(f"calibration profile: expected one of {', '.join(PROFILES)}, got {name!r}")
    return PROFILES[name]


def scenarios(name: str = "full") -> list:
    """The scenarios a calibration of this profile measures, its axes and sampling applied."""
    from umprof.measure.scenario import resolve

    prof = profile(name)
    chosen = resolve([GROUP])
    if prof.scenarios:
        chosen = [s for s in chosen if s.name in prof.scenarios]
    for s in chosen:
        for axis, values in prof.axes.get(s.name, {}).items():
            s.override(axis, values)
        s.timing = dict(s.timing, **prof.timing)
    return [r for s in chosen for r in s.in_rounds()]

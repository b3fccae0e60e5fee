"""Scenarios: a TOML file names an op and its axes; expanding the axes gives the cases.

Every message names the file and key, what was expected and what was given, and all of
this runs before the GPU is touched.
"""

from __future__ import annotations

import itertools
import re
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from umprof.core.axes import parse_override
from umprof.core.errors import UsageError
from umprof.core.resources import scenarios_dir

_SCENARIO_KEYS = {"name", "about", "op", "kernel", "default", "compile_options", "group", "rounds", "outer"}
_TOP_KEYS = {"scenario", "axes", "timing"}
TIMING_KEYS = {"min_samples", "min_time", "max_noise", "timeout", "warmup", "long_sample"}
ROUND_MARK = ".r"  # a later round's results are the scenario's name + ROUND_MARK + its number


def round_name(name: str, round: int) -> str:
    """The name round ``round`` of a scenario measured in rounds is saved under: its own for the
    first, ``NAME.rK`` for a later one."""
    return name if round == 1 else f"{name}{ROUND_MARK}{round}"


def round_base(names):
    """Scenario names (a pandas Series) with any later round's mark taken off: ``NAME.rK`` → ``NAME``."""
    return names.str.replace(rf"{re.escape(ROUND_MARK)}\d+$", "", regex=True)


def round_number(names):
    """Which round each of ``names`` (a pandas Series of scenario names) is: K for ``NAME.rK``, 1 for
    an unmarked name."""
    marked = names.str.extract(rf"{re.escape(ROUND_MARK)}(\d+)$")[0]
    return marked.fillna("1").astype(int)


def is_round_of(names, name: str):
    """Which of ``names`` (a pandas Series of scenario names) are ``name`` or one of its later
    rounds (``NAME.rK``)."""
    return round_base(names) == name


@dataclass(frozen=True)
class Case:
    """One point of a scenario's axes."""

    scenario: str
    params: dict
    label: str

    def key(self) -> tuple:
        return (self.scenario, tuple(sorted(self.params.items())))


@dataclass
class Scenario:
    name: str
    about: str
    op: Any  # umprof.measure.ops.Op
    path: Path
    axes: dict[str, list] = field(default_factory=dict)
    kernel: str | None = None
    default: bool = False
    timing: dict = field(default_factory=dict)
    compile_options: list[str] = field(default_factory=list)
    group: str = ""  # `umprof run GROUP` runs every shipped scenario of the group
    rounds: int = 1  # every case measured once per round (see in_rounds)
    outer: str | None = None  # the axis the cases go through slowest (default: the op's first)

    def override(self, name: str, values: str) -> None:
        """Replace an axis' values from the command line (``-a name=values``)."""
        spec = self.op.axes.by_name.get(name)
        if spec is None:
            raise UsageError(f"option '-a {name}=...': scenario '{self.name}' has no axis '{name}'; "
                             f"its axes are: {', '.join(self.op.axes.names())}")
        self.axes[name] = spec.parse(values, where=f"option '-a {name}=...' (scenario '{self.name}')")

    def to_data(self) -> dict:
        """The scenario's tables as :func:`scenario_from_data` reads them, axes as they are now
        (overrides applied): how a run hands its scenarios to a fresh process."""
        head = {"name": self.name, "about": self.about, "op": self.op.name, "default": self.default,
                "compile_options": list(self.compile_options), "group": self.group, "rounds": self.rounds}
        if self.outer is not None:
            head["outer"] = self.outer
        if self.kernel is not None:
            head["kernel"] = self.kernel
        return {"scenario": head, "axes": {k: list(v) for k, v in self.axes.items()}, "timing": dict(self.timing)}

    def in_rounds(self) -> list[Scenario]:
        """The scenario as its rounds: round K runs every case once more, saved under
        :func:`round_name`, in reverse order in even rounds (so that a slow spell of the machine
        weighs on one round of a case, which the median over the rounds outvotes, and no case
        always follows the same one); itself where it has one round."""
        if self.rounds <= 1:
            return [self]
        out = []
        for k in range(1, self.rounds + 1):
            # every axis reversed reverses the axes' product: the cases in reverse order
            axes = {n: list(v) if k % 2 else list(v)[::-1] for n, v in self.axes.items()}
            out.append(replace(self, name=round_name(self.name, k), axes=axes, timing=dict(self.timing), rounds=1,
                               compile_options=list(self.compile_options)))
        return out

    def cases(self) -> list[Case]:
        """The axes' product, in file order (``outer`` first where set), with cases the op calls
        equivalent merged."""
        names = self.op.axes.names()
        order = [self.outer, *(n for n in names if n != self.outer)] if self.outer else names
        out, seen = [], set()
        for combo in itertools.product(*(self.axes[n] for n in order)):
            given = dict(zip(order, combo))
            params = self.op.canonical({n: given[n] for n in names})
            if params is None:
                continue
            case = Case(self.name, params, self.op.label(params))
            if case.key() not in seen:
                seen.add(case.key())
                out.append(case)
        return out


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate one scenario file."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"{path}: no such scenario file") from None
    except tomllib.TOMLDecodeError as e:
        raise UsageError(f"{path}: not valid TOML: {e}") from None
    return scenario_from_data(data, path)


def scenario_from_data(data: dict, path: Path) -> Scenario:
    """A scenario from its file's tables (``[scenario]``, ``[axes]``, ``[timing]``), validated;
    ``path`` names it in messages."""
    from umprof.measure.ops import get_op, op_names

    path = Path(path)
    unknown = set(data) - _TOP_KEYS
    if unknown:
        raise UsageError(f"{path}: unknown table(s) {', '.join(sorted(unknown))}; expected [scenario], [axes], [timing]")
    head = data.get("scenario")
    if not isinstance(head, dict):
        raise UsageError(f"{path}: expected a [scenario] table with name, about and op")
    unknown = set(head) - _SCENARIO_KEYS
    if unknown:
        raise UsageError(f"{path}: [scenario]: unknown key(s) {', '.join(sorted(unknown))}; "
                         f"expected {', '.join(sorted(_SCENARIO_KEYS))}")
    for key in ("name", "op"):
        if not isinstance(head.get(key), str) or not head[key]:
            raise UsageError(f"{path}: [scenario] {key}: expected a non-empty string, got {head.get(key)!r}")
    op = get_op(head["op"])
    if op is None:
        raise UsageError(f"{path}: [scenario] op: expected one of {', '.join(op_names())}, got {head['op']!r}")
    kernel = head.get("kernel", op.default_kernel)
    if kernel is not None:
        _check_kernel_ref(kernel, f"{path}: [scenario] kernel")
    options = head.get("compile_options", [])
    if not isinstance(options, list) or not all(isinstance(o, str) for o in options):
        raise UsageError(f"{path}: [scenario] compile_options: expected a list of strings, got {options!r}")
    default = head.get("default", False)
    if not isinstance(default, bool):
        raise UsageError(f"{path}: [scenario] default: expected true or false, got {default!r}")
    group = head.get("group", "")
    if not isinstance(group, str):
        raise UsageError(f"{path}: [scenario] group: expected a string, got {group!r}")
    rounds = head.get("rounds", 1)
    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
        raise UsageError(f"{path}: [scenario] rounds: expected a positive integer, got {rounds!r}")
    outer = head.get("outer")
    if outer is not None and outer not in op.axes.by_name:
        raise UsageError(f"{path}: [scenario] outer: expected one of op '{op.name}''s axes "
                         f"({', '.join(op.axes.names())}), got {outer!r}")

    axes_raw = data.get("axes", {})
    if not isinstance(axes_raw, dict):
        raise UsageError(f"{path}: [axes]: expected a table")
    axes = {}
    for name, raw in axes_raw.items():
        spec = op.axes.by_name.get(name)
        if spec is None:
            raise UsageError(f"{path}: [axes] {name}: op '{op.name}' has no axis '{name}'; "
                             f"its axes are: {', '.join(op.axes.names())}")
        axes[name] = spec.parse(raw, where=f"{path}: axis '{name}'")
    for spec in op.axes.specs:
        axes.setdefault(spec.name, list(spec.default))

    timing = data.get("timing", {})
    if not isinstance(timing, dict) or set(timing) - TIMING_KEYS:
        raise UsageError(f"{path}: [timing]: expected keys among {', '.join(sorted(TIMING_KEYS))}, got {timing!r}")
    for k, v in timing.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
            raise UsageError(f"{path}: [timing] {k}: expected a non-negative number, got {v!r}")

    return Scenario(name=head["name"], about=head.get("about", ""), op=op, path=path, axes=axes,
                    kernel=kernel, default=default, timing=timing, compile_options=options, group=group,
                    rounds=rounds, outer=outer)


def _check_kernel_ref(ref, where):
    if not isinstance(ref, str) or ":" not in ref or not ref.split(":", 1)[0].endswith(".cu"):
        raise UsageError(f"{where}: expected FILE.cu:SYMBOL (a file in kernels/), got {ref!r}")


CALIBRATION_FOLDER = "calibration"  # scenarios/calibration/: the scenarios `umprof calibrate` measures


def shipped_scenarios() -> dict[str, Path]:
    """Name → path of every scenario shipped in scenarios/ (the user's, at the top) and in
    scenarios/calibration/ (what a calibration measures)."""
    root = scenarios_dir()
    paths = sorted(root.glob("*.toml")) + sorted((root / CALIBRATION_FOLDER).glob("*.toml"))
    return {p.stem: p for p in paths}


def resolve(names: list[str]) -> list[Scenario]:
    """Scenario names, group names or file paths → loaded scenarios; none → the default suite."""
    shipped = shipped_scenarios()
    if not names:
        loaded = [load_scenario(p) for p in shipped.values()]
        return [s for s in loaded if s.default]
    out, groups = [], None
    for name in names:
        if name.endswith(".toml") or "/" in name:
            out.append(load_scenario(name))
        elif name in shipped:
            out.append(load_scenario(shipped[name]))
        else:
            if groups is None:
                groups = {}
                for p in shipped.values():
                    s = load_scenario(p)
                    if s.group:
                        groups.setdefault(s.group, []).append(s)
            if name not in groups:
                raise UsageError(f"unknown scenario {name!r}: expected a file path, a group "
                                 f"({', '.join(sorted(groups))}) or one of {', '.join(shipped)}")
            out.extend(groups[name])
    return out


def apply_overrides(scenarios: list[Scenario], overrides: list[str]) -> None:
    """Apply ``-a name=values`` to every scenario that has that axis; refuse one none has."""
    for text in overrides:
        name, values = parse_override(text)
        targets = [s for s in scenarios if name in s.op.axes.by_name]
        if not targets:
            known = sorted({n for s in scenarios for n in s.op.axes.names()})
            raise UsageError(f"option '-a {text}': no selected scenario has an axis '{name}'; "
                             f"their axes are: {', '.join(known)}")
        for s in targets:
            s.override(name, values)

"""Axes: named lists of values a scenario sweeps, and the syntax people write them in.

In a scenario file an axis is a TOML list (``[1, 8]``, ``["pinned", "managed"]``,
``["4KiB", "1MiB"]``), one value, or a generator string:

* ``pow2:START..STOP[:STEP]``: powers of two ``2**START`` .. ``2**STOP``, every STEP-th
  exponent (``pow2:20..30:2`` is 1 MiB, 4 MiB, .. 1 GiB);
* ``range:START..STOP[:STEP]``: integers START .. STOP inclusive (``range:32..1024:32``).

On the command line (``-a name=VALUES``) the same generators work, and a list is written
with commas: ``-a strategy=pinned,managed -a bytes=4KiB,1MiB``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Sequence

from umprof.core.errors import UsageError
from umprof.core.units import format_size, parse_size

_GEN_RE = re.compile(r"^(pow2|range):(-?\d+)\.\.(-?\d+)(?::(\d+))?$")
MAX_AXIS_VALUES = 10_000


@dataclass(frozen=True)
class AxisSpec:
    """What values an axis takes: ``kind`` is size, int, float, choice, pair (GPU pairs such
    as ``0>1``, or ``all``) or str."""

    name: str
    kind: str
    default: tuple = ()
    choices: tuple[str, ...] = ()
    about: str = ""
    minimum: float | None = None
    maximum: float | None = None
    quiet_default: bool = False  # case names leave the axis out while it holds its (one) default

    def expected(self) -> str:
        if self.kind == "choice":
            return "one of " + ", ".join(self.choices)
        if self.kind == "size":
            return "byte sizes (4096, '64KiB', '1GiB') or pow2:START..STOP[:STEP]"
        if self.kind == "int":
            return "integers, a list, or range:START..STOP[:STEP] / pow2:START..STOP[:STEP]"
        if self.kind == "float":
            return "numbers"
        if self.kind == "pair":
            return "GPU pairs SRC>DST (such as 0>1) or all"
        return "strings"

    def format(self, value: Any) -> str:
        """A value as a person reads it in a case name."""
        return format_size(value) if self.kind == "size" else str(value)

    def parse(self, raw: Any, where: str = "") -> list:
        """Turn a TOML value or CLI string into the axis' list of values, validated.

        ``where`` prefixes every message (``"scenarios/x.toml: axis 'bytes'"``).
        """
        where = where or f"axis '{self.name}'"
        items = _split(raw, where)
        if not items:
            raise UsageError(f"{where}: expected {self.expected()}, got an empty list")
        values = []
        for item in items:
            values.extend(self._expand_item(item, where))
        if len(values) > MAX_AXIS_VALUES:
            raise UsageError(f"{where}: {len(values)} values is more than {MAX_AXIS_VALUES}; narrow it")
        seen = []
        for v in values:  # keep order, drop repeats
            if v not in seen:
                seen.append(v)
        return seen

    def _expand_item(self, item: Any, where: str) -> list:
        if isinstance(item, str) and _GEN_RE.match(item.strip()):
            if self.kind not in ("size", "int"):
                raise UsageError(f"{where}: expected {self.expected()}, got generator {item!r}")
            return [self._check_range(v, where) for v in _generate(item.strip(), where)]
        if self.kind == "choice":
            if not isinstance(item, str) or item not in self.choices:
                raise UsageError(f"{where}: expected {self.expected()}, got {item!r}")
            return [item]
        if self.kind == "size":
            try:
                value = parse_size(item)
            except ValueError as e:
                if isinstance(item, str) and item.startswith(("pow2", "range")):
                    raise UsageError(f"{where}: expected pow2:START..STOP[:STEP] or range:START..STOP[:STEP], got {item!r}") from None
                raise UsageError(f"{where}: {e}") from None
            return [self._check_range(value, where)]
        if self.kind == "int":
            try:
                if isinstance(item, bool) or (isinstance(item, float) and item != int(item)):
                    raise ValueError
                value = int(item)
            except (TypeError, ValueError):
                if isinstance(item, str) and item.startswith(("pow2", "range")):
                    raise UsageError(f"{where}: expected pow2:START..STOP[:STEP] or range:START..STOP[:STEP], got {item!r}") from None
                raise UsageError(f"{where}: expected {self.expected()}, got {item!r}") from None
            return [self._check_range(value, where)]
        if self.kind == "float":
            try:
                if isinstance(item, bool):
                    raise ValueError
                value = float(item)
            except (TypeError, ValueError):
                raise UsageError(f"{where}: expected {self.expected()}, got {item!r}") from None
            return [self._check_range(value, where)]
        if self.kind == "pair":
            from umprof.core.devices import ALL, pair_text, parse_pair

            pair = parse_pair(item, where)
            return [ALL if pair == ALL else pair_text(*pair)]
        return [str(item)]

    def _check_range(self, v, where):
        if self.minimum is not None and v < self.minimum:
            raise UsageError(f"{where}: expected values >= {self.format(self.minimum)}, got {self.format(v)}")
        if self.maximum is not None and v > self.maximum:
            raise UsageError(f"{where}: expected values <= {self.format(self.maximum)}, got {self.format(v)}")
        return v


def _split(raw: Any, where: str) -> list:
    if isinstance(raw, (list, tuple)):
        return list(raw)
    if isinstance(raw, str):
        text = raw.strip()
        if _GEN_RE.match(text):
            return [text]
        return [p.strip() for p in text.split(",") if p.strip()]
    if isinstance(raw, (int, float)):
        return [raw]
    raise UsageError(f"{where}: expected a list, a value or a generator string, got {type(raw).__name__} {raw!r}")


def _generate(text: str, where: str) -> list[int]:
    m = _GEN_RE.match(text)
    kind, start, stop, step = m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4) or 1)
    if step <= 0:
        raise UsageError(f"{where}: expected {kind}:START..STOP[:STEP] with STEP >= 1, got {text!r}")
    if stop < start:
        raise UsageError(f"{where}: expected {kind}:START..STOP[:STEP] with START <= STOP, got {text!r}")
    if kind == "pow2":
        if start < 0 or stop > 62:
            raise UsageError(f"{where}: expected pow2 exponents between 0 and 62, got {text!r}")
        return [2**e for e in range(start, stop + 1, step)]
    if (stop - start) // step + 1 > MAX_AXIS_VALUES:
        raise UsageError(f"{where}: {text!r} gives more than {MAX_AXIS_VALUES} values; narrow it")
    return list(range(start, stop + 1, step))


def parse_override(text: str) -> tuple[str, str]:
    """Split a CLI ``-a name=values`` into its name and its values text."""
    name, sep, values = text.partition("=")
    if not sep or not name.strip() or not values.strip():
        raise UsageError(f"option '-a/--axis': expected NAME=VALUES (e.g. bytes=pow2:20..24), got {text!r}")
    return name.strip(), values.strip()


@dataclass
class AxisSet:
    """The axes an op declares, in the order cases are named."""

    specs: Sequence[AxisSpec] = field(default_factory=list)

    def __post_init__(self):
        self.by_name = {s.name: s for s in self.specs}

    def names(self) -> list[str]:
        return [s.name for s in self.specs]

"""The workload model: what an application does with one buffer, in the terms that decide
which host-memory strategy wins.

A :class:`Workload` is the buffer's size; how many kernel passes reuse it per transfer
(``reuse``); the fraction of its 64 KiB pages a pass touches (``touched``); how a pass walks
them (``pattern``: streaming, strided, random, warp-pages); how many rounds of passes run
(``iterations``) and whether the host reads and updates the buffer between rounds
(``pingpong``); and whether it fits in device memory (``fits``; by default: whether it fits
in the device's memory, as the results or the GPU report it).

It is written as CLI options (``umprof recommend --bytes 256MiB --reuse 16``) or a TOML file
(``scenarios/workloads/example.toml`` documents every key), and it maps one-to-one onto the
``lifecycle`` op's axes, so ``recommend --verify`` measures exactly the workload it predicted.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from pathlib import Path

from umprof.core.errors import UsageError
from umprof.core.units import format_size, parse_size
from umprof.measure.ops.lifecycle import PAGE_BYTES, PAGE_WORDS, PATTERNS  # noqa: F401 (the op's granule and patterns)


@dataclass(frozen=True)
class Workload:
    """One buffer's use by an application (see the module's docstring)."""

    bytes: int
    name: str = ""
    reuse: int = 1
    touched: float = 1.0
    pattern: str = "streaming"
    stride: int = 8
    iterations: int = 1
    pingpong: bool = False
    fits: bool | None = None

    def __post_init__(self):
        _check(self)

    @property
    def label(self) -> str:
        return self.name or self.describe()

    @property
    def touched_text(self) -> str:
        """The touched fraction as a percentage a person reads (two decimals under 1%)."""
        return f"{self.touched:.0%}" if self.touched >= 0.01 else f"{self.touched:.2%}"

    def describe(self) -> str:
        """One line a person reads: '256MiB, reuse 16, touched 100%, streaming, 1 iteration'."""
        parts = [format_size(self.bytes), f"reuse {self.reuse}", f"touched {self.touched_text}",
                 self.pattern + (f" (stride {self.stride})" if self.pattern == "strided" else "")]
        parts.append(f"{self.iterations} iteration" + ("s" if self.iterations != 1 else ""))
        if self.pingpong:
            parts.append("ping-pong")
        if self.fits is False:
            parts.append("does not fit in device memory")
        return ", ".join(parts)

    def lifecycle_axes(self) -> dict[str, list]:
        """The ``lifecycle`` op's axes for this workload (every strategy is added by the caller)."""
        return {
            "bytes": [self.bytes], "reuse": [self.reuse], "touched": [self.touched], "pattern": [self.pattern],
            "stride": [self.stride], "iterations": [self.iterations], "pingpong": ["yes" if self.pingpong else "no"],
        }


KEYS = {f.name for f in fields(Workload)}


def _check(w: Workload) -> None:
    """Raise UsageError naming the key, what is expected and what was given."""
    def bad(key, expected):
        raise UsageError(f"key '{key}': expected {expected}, got {getattr(w, key)!r}")

    if not isinstance(w.name, str):
        bad("name", "text")
    if not isinstance(w.bytes, int) or isinstance(w.bytes, bool) or w.bytes < PAGE_BYTES:
        bad("bytes", "a size of at least 64KiB ('256MiB', 1073741824)")
    if w.bytes % PAGE_BYTES:
        bad("bytes", "a multiple of 64 KiB (the granule of 'touched')")
    if not isinstance(w.reuse, int) or isinstance(w.reuse, bool) or not 1 <= w.reuse <= 1024:
        bad("reuse", "an integer from 1 to 1024 (kernel passes per transfer)")
    if isinstance(w.touched, bool) or not isinstance(w.touched, (int, float)) or not 0 < w.touched <= 1:
        bad("touched", "a fraction in (0, 1] of the buffer each pass touches")
    if w.pattern not in PATTERNS:
        bad("pattern", "one of " + ", ".join(PATTERNS))
    if (not isinstance(w.stride, int) or isinstance(w.stride, bool) or w.stride < 1
            or w.stride & (w.stride - 1) or w.stride > PAGE_WORDS):
        bad("stride", f"a power of two from 1 to {PAGE_WORDS} (4-byte words between touched words)")
    if not isinstance(w.iterations, int) or isinstance(w.iterations, bool) or not 1 <= w.iterations <= 1024:
        bad("iterations", "an integer from 1 to 1024 (rounds of reuse passes)")
    if not isinstance(w.pingpong, bool):
        bad("pingpong", "true or false (the host reads and updates the buffer between iterations)")
    if w.fits is not None and not isinstance(w.fits, bool):
        bad("fits", "true, false, or absent (decided from the device's memory)")
    if w.touched * (w.bytes // PAGE_BYTES) < 1:
        bad("touched", f"a fraction that selects at least one 64 KiB page of {format_size(w.bytes)}")


def from_mapping(raw: dict, where: str) -> Workload:
    """A Workload from a TOML table or the CLI's options; ``where`` names the source in errors."""
    unknown = sorted(set(raw) - KEYS)
    if unknown:
        raise UsageError(f"{where}: unknown key {unknown[0]!r}; a workload's keys are: {', '.join(sorted(KEYS))}")
    if "bytes" not in raw:
        raise UsageError(f"{where}: key 'bytes' is missing: expected the buffer's size ('256MiB')")
    values = dict(raw)
    try:
        values["bytes"] = parse_size(values["bytes"])
    except (UsageError, ValueError, TypeError):
        raise UsageError(f"{where}: key 'bytes': expected a size ('256MiB', 1073741824), got {raw['bytes']!r}") from None
    if isinstance(values.get("touched"), int) and not isinstance(values.get("touched"), bool):
        values["touched"] = float(values["touched"])
    try:
        return Workload(**values)
    except UsageError as e:
        raise UsageError(f"{where}: {e}") from None


def load_workloads(path: str | Path) -> list[Workload]:
    """The workloads of a TOML file: one ``[workload]`` table, or several ``[[workload]]``."""
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib

    path = Path(path)
    if not path.is_file():
        raise UsageError(f"{path}: no such workload file")
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as e:
        raise UsageError(f"{path}: not valid TOML: {e}") from None
    unknown = sorted(set(doc) - {"workload"})
    if unknown or "workload" not in doc:
        raise UsageError(f"{path}: expected a [workload] table or [[workload]] tables, got "
                         f"{', '.join(repr(k) for k in doc) or 'an empty file'}")
    tables = doc["workload"] if isinstance(doc["workload"], list) else [doc["workload"]]
    out = []
    for i, t in enumerate(tables):
        where = f"{path}: workload {t.get('name') or i + 1}" if len(tables) > 1 else str(path)
        if not isinstance(t, dict):
            raise UsageError(f"{where}: expected a table of keys, got {t!r}")
        out.append(from_mapping(t, where))
    return out


def with_fit(w: Workload, device_memory_bytes: int | None) -> Workload:
    """``fits`` decided from the device's memory where the workload leaves it open."""
    if w.fits is not None or not device_memory_bytes:
        return w
    return replace(w, fits=w.bytes <= device_memory_bytes)

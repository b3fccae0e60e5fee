"""Which GPUs a run uses, and the GPU pairs a peer-to-peer case names: parsed and checked
without a GPU, so a mistake is reported before anything is opened.

``--device`` takes ``0`` (one GPU), ``0,1`` (a list) or ``all``; a p2p case's ``pair`` axis
takes ``0>1`` (GPU 0 sends to / reads from GPU 1, as the op's method says) or ``all`` (every
ordered pair of the run's GPUs).
"""

from __future__ import annotations

import re

from umprof.core.errors import UsageError

ALL = "all"


def parse_devices(text, option: str = "--device"):
    """``ALL`` or a tuple of distinct GPU indices, from ``'all'``, ``'1'``, ``'0,1'`` or an int."""
    if isinstance(text, int) and not isinstance(text, bool):
        if text < 0:
            raise UsageError(f"option '{option}': expected a GPU index >= 0, 'all' or a list such as 0,1; got {text}")
        return (text,)
    if isinstance(text, (list, tuple)):
        items = [str(x) for x in text]
    else:
        raw = str(text).strip()
        if raw.lower() == ALL:
            return ALL
        items = [p.strip() for p in raw.split(",")]
    out = []
    for p in items:
        if not re.fullmatch(r"\d+", p):
            raise UsageError(f"option '{option}': expected a GPU index, 'all' or a list such as 0,1; got {text!r}")
        i = int(p)
        if i in out:
            raise UsageError(f"option '{option}': GPU {i} is listed twice in {text!r}")
        out.append(i)
    if not out:
        raise UsageError(f"option '{option}': expected a GPU index, 'all' or a list such as 0,1; got {text!r}")
    return tuple(out)


def resolve_devices(spec, count: int, option: str = "--device") -> list[int]:
    """The GPU indices a parsed spec names on a machine with ``count`` GPUs."""
    if spec == ALL:
        return list(range(count))
    bad = [i for i in spec if i >= count]
    if bad:
        raise UsageError(f"option '{option}': expected GPUs 0..{count - 1} (this machine has {count} GPU(s)), got {bad[0]}")
    return list(spec)


def parse_pair(text: str, where: str = "axis 'pair'") -> tuple[int, int] | str:
    """``(src, dst)`` from ``'0>1'``, or ``ALL``."""
    raw = str(text).strip()
    if raw.lower() == ALL:
        return ALL
    m = re.fullmatch(r"(\d+)\s*>\s*(\d+)", raw)
    if not m:
        raise UsageError(f"{where}: expected SRC>DST (such as 0>1) or 'all', got {text!r}")
    src, dst = int(m.group(1)), int(m.group(2))
    if src == dst:
        raise UsageError(f"{where}: a pair needs two different GPUs, got {text!r}")
    return src, dst


def pair_text(src: int, dst: int) -> str:
    return f"{src}>{dst}"


def pairs(devices: list[int], both_directions: bool = False) -> list[tuple[int, int]]:
    """Every ordered pair of ``devices``; with ``both_directions`` one per unordered pair (a
    case that moves data both ways at once measures 0>1 and 1>0 together)."""
    return [(a, b) for a in devices for b in devices if a != b and (not both_directions or a < b)]

"""Byte sizes and rates: parsing what people type, printing what people read.

The data keeps SI base units (bytes, seconds, bytes/s); conversion happens only here.
"""

from __future__ import annotations

import math
import re

_SIZE_UNITS = {
    "": 1, "b": 1,
    "k": 1024, "kib": 1024, "kb": 1000,
    "m": 1024**2, "mib": 1024**2, "mb": 1000**2,
    "g": 1024**3, "gib": 1024**3, "gb": 1000**3,
    "t": 1024**4, "tib": 1024**4, "tb": 1000**4,
}
_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")


def parse_size(text: str | int) -> int:
    """Parse ``4096``, ``"4KiB"``, ``"256 MiB"``, ``"1G"`` (binary), ``"1GB"`` (decimal) to bytes."""
    if isinstance(text, bool):
        raise ValueError(f"expected a byte size such as 4096, '64KiB' or '1GiB', got {text!r}")
    if isinstance(text, int):
        if text < 0:
            raise ValueError(f"expected a non-negative byte size, got {text}")
        return text
    m = _SIZE_RE.match(str(text))
    if not m or m.group(2).lower() not in _SIZE_UNITS:
        raise ValueError(f"expected a byte size such as 4096, '64KiB' or '1GiB', got {text!r}")
    value = float(m.group(1)) * _SIZE_UNITS[m.group(2).lower()]
    if value != int(value):
        raise ValueError(f"expected a whole number of bytes, got {text!r}")
    return int(value)


def format_size(nbytes: float) -> str:
    """``268435456`` → ``"256MiB"``; exact binary multiples print without decimals."""
    if nbytes is None or (isinstance(nbytes, float) and math.isnan(nbytes)):
        return "-"
    n = float(nbytes)
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if abs(n) >= scale:
            v = n / scale
            return f"{v:.0f}{unit}" if v == int(v) else f"{v:.3g}{unit}"
    return f"{n:.0f}B"


def format_rate(bytes_per_s: float) -> str:
    """Bytes per second as decimal GB/s (the unit bandwidthTest and nvbandwidth print)."""
    if bytes_per_s is None or math.isnan(bytes_per_s):
        return "-"
    if bytes_per_s >= 1e12:
        return f"{bytes_per_s / 1e12:.2f} TB/s"
    return f"{bytes_per_s / 1e9:.1f} GB/s" if bytes_per_s >= 1e9 else f"{bytes_per_s / 1e6:.1f} MB/s"


def format_time(seconds: float) -> str:
    """Seconds printed in the unit that keeps three significant digits readable."""
    if seconds is None or math.isnan(seconds):
        return "-"
    if seconds < 0:  # a saving (the time overlapping steps hide)
        return "-" + format_time(-seconds)
    # a figure that rounds to 1000 of a unit (0.9996 s) is printed in the next one ("1 s", not "1e+03 ms")
    if seconds >= 0.9995:
        return f"{seconds:.3g} s"
    if seconds >= 0.9995e-3:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds * 1e6:.3g} µs"


def format_percent(fraction: float) -> str:
    if fraction is None or math.isnan(fraction):
        return "-"
    return f"{fraction * 100:.1f}%" if fraction < 10 else f"{fraction * 100:.0f}%"

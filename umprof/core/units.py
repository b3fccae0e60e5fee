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
    """``268435456`` → ``"256MiB"``; exact binary multiples print without decimals, and no size in exponent
    notation (1023.9 MiB is ``"1024MiB"``, not ``"1.02e+03MiB"``)."""
    if nbytes is None or (isinstance(nbytes, float) and math.isnan(nbytes)):
        return "-"
    n = float(nbytes)
    for unit, scale in (("PiB", 1024**5), ("TiB", 1024**4), ("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if abs(n) >= scale:
            v = n / scale
            return f"{v:.0f}{unit}" if v == int(v) or abs(v) >= 999.5 else f"{v:.3g}{unit}"
    return f"{n:.0f}B"


def format_rate(bytes_per_s: float) -> str:
    """Bytes per second as decimal GB/s (the unit bandwidthTest and nvbandwidth print)."""
    if bytes_per_s is None or math.isnan(bytes_per_s):
        return "-"
    if bytes_per_s >= 1e12:
        return f"{bytes_per_s / 1e12:.2f} TB/s"
    return f"{bytes_per_s / 1e9:.1f} GB/s" if bytes_per_s >= 1e9 else f"{bytes_per_s / 1e6:.1f} MB/s"


# below half a nanosecond a time is printed as none (no trace's clock resolves it, and no "-0 µs")
ZERO_S = 0.5e-9
# (seconds at and above which, the unit, seconds in the unit): each unit up to where three significant digits of it
# would round to 1000 (0.9996 s is "1 s", not "1e+03 ms"; 1260 s is "21 min", not "1.26e+03 s")
TIME_UNITS = ((5999.5, "h", 3600.0), (999.5, "min", 60.0), (0.9995, "s", 1.0), (0.9995e-3, "ms", 1e-3),
              (0.9995e-6, "µs", 1e-6), (0.0, "ns", 1e-9))


def format_time(seconds: float) -> str:
    """Seconds printed in the unit that keeps three significant digits readable: ns to hours, never in exponent
    notation, and never a negative zero."""
    if seconds is None or math.isnan(seconds):
        return "-"
    if abs(seconds) < ZERO_S:
        return "0 s"
    if seconds < 0:  # a saving (the time overlapping steps hide)
        return "-" + format_time(-seconds)
    for least, unit, scale in TIME_UNITS:
        if seconds >= least:
            v = seconds / scale
            return f"{v:.0f} {unit}" if v >= 999.5 else f"{v:.3g} {unit}"
    return "0 s"


def format_percent(fraction: float) -> str:
    """A fraction as a percentage, one decimal under 1000% (never "-0.0%")."""
    if fraction is None or math.isnan(fraction):
        return "-"
    text = f"{fraction * 100:.1f}%" if fraction < 10 else f"{fraction * 100:.0f}%"
    return text[1:] if text in ("-0.0%", "-0%") else text


def format_share(fraction: float) -> str:
    """A share in whole percent, as a person says it: "under 1%" (or "over -1%") where it rounds to none but is not
    none ("within 0%" says nothing), never "-0%"."""
    if fraction is None or math.isnan(fraction):
        return "-"
    if fraction != 0 and abs(fraction) < 0.005:
        return "under 1%" if fraction > 0 else "over -1%"
    text = f"{fraction:.0%}"
    return "0%" if text == "-0%" else text

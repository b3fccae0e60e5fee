"""Where the shipped kernels/ and scenarios/ are: a checkout, or an installed wheel."""

from __future__ import annotations

import os
import sys
from pathlib import Path

_CHECKOUT = Path(__file__).resolve().parents[2]  # umprof/core/resources.py → the checkout


def _find(kind: str) -> Path:
    env = os.environ.get(f"UMPROF_{kind.upper()}_DIR")
    candidates = [Path(env)] if env else []
    # A checkout or an editable install first, then the wheel's data files.
    candidates += [_CHECKOUT / kind, Path(sys.prefix) / "share" / "umprof" / kind]
    for c in candidates:
        if c.is_dir():
            return c
    raise FileNotFoundError(f"umprof's {kind}/ folder was not found (looked in: {', '.join(map(str, candidates))})")


def kernels_dir() -> Path:
    """The folder of shipped CUDA sources (``UMPROF_KERNELS_DIR`` overrides it)."""
    return _find("kernels")


def scenarios_dir() -> Path:
    """The folder of shipped scenario files (``UMPROF_SCENARIOS_DIR`` overrides it)."""
    return _find("scenarios")

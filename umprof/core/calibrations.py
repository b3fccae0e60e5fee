"""Calibrations on disk: the ones shipped with umprof, the ones measured on this machine, and which
one answers for a GPU.

A calibration is a result file of the ``calibration`` group's scenarios. umprof ships one per GPU
model its release was measured on (``umprof/calibrations/*.parquet``); ``umprof calibrate`` measures
this machine's into the user's cache (platformdirs' cache folder, ``UMPROF_CACHE_DIR`` overrides it),
one file per GPU, driver, host and profile. A *quick* calibration measures only what differs between
machines of one GPU model (the host's memory, the link, allocation, the faults back to the host) and
completes the rest from the shipped calibration of that model (its ``base``; ``umprof.api`` joins
them). Nothing here touches a GPU.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from umprof.core.errors import UsageError
from umprof.core.results import read_header, slug

SHIPPED_DIR = Path(__file__).resolve().parents[1] / "calibrations"
ENV_CACHE = "UMPROF_CACHE_DIR"
PROFILES = ("full", "quick")
# a calibration's rows must be of this result layout or newer: older ones took the steady iteration
# as the median (layout 4 made it the mean), and predictions from such a file mix two meanings
MIN_SCHEMA = 4
META_KEY = "calibration"  # the result file's metadata that `umprof calibrate` writes


@dataclass
class CalibrationFile:
    """One calibration on disk, as :func:`describe` reads it from its metadata alone."""

    path: Path
    origin: str  # 'shipped', 'cached' or 'file'
    gpu: str
    memory_bytes: int
    profile: str  # 'full' or 'quick'
    measured: str  # ISO time the measurement started
    host: str
    cpu: str
    driver: str
    schema: int
    complete: bool
    base: str | None  # a quick calibration's shipped base (its file name)
    cases: int
    wall_s: float | None
    runs: tuple[str, ...] = ()  # a calibration that pools several runs (a shipped one): each, in words

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def date(self) -> str:
        return self.measured[:10]

    def matches(self, gpu: str, memory_bytes: int | None = None) -> bool:
        """Whether this calibration is of that GPU (its name; its memory within 5% where given)."""
        if _norm(self.gpu) != _norm(gpu):
            return False
        return not memory_bytes or not self.memory_bytes or abs(self.memory_bytes / memory_bytes - 1) < 0.05

    def summary(self) -> str:
        """'the shipped calibration of NVIDIA H200 (full, measured 2026-11-25 on host vm, driver 580.82)'."""
        where = {"shipped": "the shipped calibration", "cached": "this machine's cached calibration",
                 "file": f"the calibration {self.path}"}[self.origin]
        return (f"{where} of {self.gpu} ({self.profile}, measured {self.date} on host {self.host or '?'}"
                f"{', driver ' + self.driver if self.driver else ''}"
                f"{', ' + self.cpu if self.cpu else ''}"
                f"{f'; {len(self.runs)} runs pooled' if len(self.runs) > 1 else ''})")


def _norm(name: str) -> str:
    return re.sub(r"\s+", " ", str(name or "")).strip().lower()


def describe(path: str | Path, origin: str = "file") -> CalibrationFile:
    """What a calibration file is (GPU, profile, when, where), from its metadata."""
    path = Path(path)
    if not path.is_file():
        raise UsageError(f"{path}: no such calibration file")
    header = read_header(path)
    meta, devices = header.get("meta") or {}, header.get("devices") or []
    dev = devices[0] if devices else {}
    cal = meta.get(META_KEY) or {}
    return CalibrationFile(
        path=path, origin=origin, gpu=str(dev.get("name") or "unknown GPU"),
        memory_bytes=int(dev.get("memory_total_bytes") or 0), profile=str(cal.get("profile", "full")),
        measured=str(meta.get("time", "")), host=str(meta.get("host", "")), cpu=str(meta.get("cpu", "")),
        driver=str(meta.get("driver_version") or ""), schema=int(header.get("schema_version") or 0),
        complete=bool(cal.get("complete", True)), base=cal.get("base"), cases=int(cal.get("cases") or 0),
        wall_s=meta.get("wall_s"), runs=tuple(str(r) for r in cal.get("runs") or ()))


def check(cf: CalibrationFile) -> CalibrationFile:
    """Refuse, in one line, a calibration this umprof cannot predict from: an older layout, or one
    cut short (``umprof calibrate`` again resumes it)."""
    if cf.schema < MIN_SCHEMA:
        raise UsageError(f"{cf.path}: a calibration of result layout {cf.schema}, older than this umprof's "
                         f"({MIN_SCHEMA}: the steady iteration is the mean): measure it again with `umprof calibrate`")
    if not cf.complete:
        raise UsageError(f"{cf.path}: an unfinished calibration ({cf.cases} cases measured): `umprof calibrate` "
                         "resumes it")
    return cf


def shipped() -> list[CalibrationFile]:
    """The calibrations shipped with this umprof, one per GPU model."""
    return [describe(p, "shipped") for p in sorted(SHIPPED_DIR.glob("*.parquet"))]


def cache_dir() -> Path:
    """Where `umprof calibrate` keeps this machine's calibrations."""
    env = os.environ.get(ENV_CACHE)
    if env:
        return Path(env) / "calibrations"
    import platformdirs

    return Path(platformdirs.user_cache_dir("umprof")) / "calibrations"


def cached() -> list[CalibrationFile]:
    """This machine's calibrations (unreadable files are left out)."""
    out = []
    for p in sorted(cache_dir().glob("*.parquet")):
        try:
            out.append(describe(p, "cached"))
        except UsageError:
            continue
    return out


def cache_path(gpu: str, memory_bytes: int, driver: str, host: str, profile: str) -> Path:
    """The cache file of one GPU, driver, host and profile."""
    name = lambda t: slug(str(t)) or "unknown"  # noqa: E731
    gib = round(memory_bytes / 2**30) if memory_bytes else 0
    return cache_dir() / f"{name(gpu)}-{gib}gib-driver-{name(driver)}-{name(host)}-{profile}.parquet"


def writable_cache() -> Path:
    """The cache folder, created; an unwritable one is refused in one line."""
    d = cache_dir()
    try:
        d.mkdir(parents=True, exist_ok=True)
        probe = d / ".umprof-write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as e:
        raise UsageError(f"{d}: the calibration cache is not writable ({e.strerror or e}); set {ENV_CACHE} to a "
                         "writable folder or pass -o FILE") from None
    return d


def known_gpus() -> list[str]:
    """The GPU names a shipped calibration answers for."""
    return [c.gpu for c in shipped()]


def shipped_for(name: str) -> CalibrationFile:
    """The shipped calibration whose GPU name contains ``name`` ('H200', 'h100', 'NVIDIA H200');
    an unknown or ambiguous name lists the known ones."""
    files = shipped()
    want = _norm(name)
    exact = [c for c in files if _norm(c.gpu) == want]
    found = exact or [c for c in files if want and want in _norm(c.gpu)]
    if len(found) == 1:
        return found[0]
    known = ", ".join(repr(c.gpu) for c in files) or "none"
    what = "matches several" if found else "matches no shipped calibration"
    raise UsageError(f"option '--gpu': {name!r} {what}; the GPUs umprof ships calibrations for: {known}")


def for_gpu(gpu: str, memory_bytes: int | None = None, driver: str = "", host: str = "") -> CalibrationFile | None:
    """The calibration that answers for this GPU: this machine's cached one (same driver and host
    first, full before quick), else the shipped one of its model; None where there is neither."""
    mine = [c for c in cached() if c.complete and c.schema >= MIN_SCHEMA and c.matches(gpu, memory_bytes)]
    mine.sort(key=lambda c: c.measured, reverse=True)  # the newest first among equals (a stable sort)
    mine.sort(key=lambda c: (c.host != host, c.driver != driver, c.profile != "full"))
    if mine:
        return mine[0]
    return next((c for c in shipped() if c.matches(gpu, memory_bytes)), None)

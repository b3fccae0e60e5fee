"""ResultSet: one tidy DataFrame (a row per case × phase) plus the run's metadata.

Saved as Parquet (metadata in the schema), CSV (metadata on a first ``# umprof`` line) or
JSON (``{"schema_version", "meta", "devices", "cases"}``), chosen by the file's suffix.
A :class:`ResultWriter` refuses to overwrite an existing file unless forced, and rewrites
its file atomically after every case, so an interrupted run keeps what it measured.
"""

from __future__ import annotations

import json
import math
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from umprof.core.errors import UsageError
from umprof.core.units import format_size
from umprof.core.version import READABLE_SCHEMAS, SCHEMA_VERSION

FORMATS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".json": "json"}
AXIS_PREFIX = "axis."
# Columns every row has, in this order; axis.* columns follow "case", op extras go last.
BASE_COLUMNS = [
    "scenario", "op", "case", "phase", "status", "reason", "samples",
    "gpu_time_median_s", "gpu_time_mean_s", "gpu_time_stdev_s", "gpu_time_min_s", "gpu_time_max_s", "gpu_time_iqr_s",
    "cpu_time_median_s", "cpu_time_mean_s", "cpu_time_stdev_s", "cpu_time_min_s", "cpu_time_max_s", "cpu_time_iqr_s",
    "time_median_s", "time_p99_s", "bytes", "bytes_per_s", "ceiling", "ceiling_bytes_per_s", "util", "d2d_util",
    "noise_rel", "unstable", "stop_reason", "case_wall_s", "device", "host", "rank",
]
# What tells two rows of one case apart in a run over several GPUs or processes.
WHERE_COLUMNS = ("host", "rank", "device")


@dataclass
class ResultSet:
    frame: pd.DataFrame
    meta: dict = field(default_factory=dict)
    devices: list = field(default_factory=list)

    @property
    def axis_columns(self) -> list[str]:
        return [c for c in self.frame.columns if c.startswith(AXIS_PREFIX)]

    def failed_cases(self) -> int:
        """How many cases failed (recorded with their reason in ``notes``)."""
        if self.frame.empty or "status" not in self.frame.columns:
            return 0
        failed = self.frame[self.frame["status"] == "failed"]
        keys = ["scenario", "case"] + [c for c in WHERE_COLUMNS if c in failed.columns]
        return len(failed[keys].astype(str).drop_duplicates())

    def save(self, path: str | Path) -> None:
        """Write atomically in the format the suffix names."""
        path = Path(path)
        fmt = format_for(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp")
        header = {"schema_version": SCHEMA_VERSION, "meta": self.meta, "devices": self.devices}
        if fmt == "parquet":
            import pyarrow as pa
            import pyarrow.parquet as pq

            table = pa.Table.from_pandas(_arrow_safe(self.frame), preserve_index=False)
            md = dict(table.schema.metadata or {})
            md[b"umprof"] = json.dumps(header, default=_json_default).encode()
            pq.write_table(table.replace_schema_metadata(md), tmp)
        elif fmt == "csv":
            with open(tmp, "w", encoding="utf-8", newline="") as f:
                f.write("# umprof " + json.dumps(header, default=_json_default) + "\n")
                self.frame.to_csv(f, index=False)
        else:
            doc = dict(header, cases=[_clean_record(r) for r in self.frame.to_dict(orient="records")])
            tmp.write_text(json.dumps(doc, indent=1, default=_json_default), encoding="utf-8")
        os.replace(tmp, path)

    @classmethod
    def load(cls, path: str | Path) -> "ResultSet":
        """Read a file written by :meth:`save`; the message names the file and what is wrong."""
        path = Path(path)
        header, frame = _read(path, rows=True)
        frame = _upgrade(path, header, frame)
        return cls(frame=frame, meta=header.get("meta", {}), devices=header.get("devices", []))


def read_header(path: str | Path) -> dict:
    """A result file's header (``schema_version``, ``meta``, ``devices``) without reading its rows
    where the format allows (Parquet's schema, CSV's first line); the message names the file."""
    return _read(Path(path), rows=False)[0]


def _read(path: Path, rows: bool) -> tuple[dict, pd.DataFrame | None]:
    """(header, rows or None) of a result file in any format :meth:`ResultSet.save` writes; a file that
    is missing, foreign or truncated is one UsageError naming it."""
    fmt = format_for(path)
    if not path.is_file():
        raise UsageError(f"{path}: no such result file")
    frame = None
    try:
        if fmt == "parquet":
            import pyarrow.parquet as pq

            # One open file: given a path, pyarrow takes the size from one look and the bytes
            # from another, so a writer's atomic replace in between reads as a truncated file.
            # On the caller's thread alone: a process that exits soon after a read (a usage error,
            # exit 2) could abort in Arrow's thread pools' teardown ("terminate called without an
            # active exception", apache/arrow#34314; 1 in 200 runs of scripts/ship_run.py's usage error), and
            # result files are small enough that threads save nothing.
            with open(path, "rb") as f:
                table = pq.read_table(f, use_threads=False, pre_buffer=False) if rows else None
                schema = table.schema if rows else pq.read_schema(f)
            raw = (schema.metadata or {}).get(b"umprof")
            if raw is None:
                raise UsageError(f"{path}: a Parquet file, but not one umprof wrote (no 'umprof' metadata)")
            header = json.loads(raw)
            frame = table.to_pandas(use_threads=False) if rows else None
        elif fmt == "csv":
            with open(path, encoding="utf-8") as f:
                first = f.readline()
                if not first.startswith("# umprof "):
                    raise UsageError(f"{path}: a CSV file, but not one umprof wrote (first line should start '# umprof ')")
                header = json.loads(first[len("# umprof "):])
                frame = pd.read_csv(f) if rows else None
        else:
            header = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(header, dict) or "cases" not in header:
                raise UsageError(f"{path}: JSON, but not an umprof result (no 'cases' key)")
            cases = header.pop("cases")
            frame = pd.DataFrame(cases) if rows else None
    except UsageError:
        raise
    except Exception as e:  # truncated, foreign, or not text: one line that names the file
        detail = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise UsageError(f"{path}: could not read it as {fmt} (truncated, or not an umprof result?): {detail}") from None
    if not isinstance(header, dict):
        raise UsageError(f"{path}: not an umprof result (its header is not a JSON object)")
    return header, frame


def _upgrade(path: Path, header: dict, frame: pd.DataFrame) -> pd.DataFrame:
    """The frame in this umprof's layout, from any layout it reads; a layout it cannot read
    is refused by name."""
    version = header.get("schema_version")
    if version not in READABLE_SCHEMAS:
        if isinstance(version, int) and version > SCHEMA_VERSION:
            raise UsageError(f"{path}: result schema version {version} was written by a newer umprof; this one "
                             f"reads versions {READABLE_SCHEMAS[0]}..{READABLE_SCHEMAS[-1]}: upgrade umprof to read it")
        raise UsageError(f"{path}: schema_version {version!r} is not a result layout umprof knows "
                         f"(this one reads versions {READABLE_SCHEMAS[0]}..{READABLE_SCHEMAS[-1]})")
    if version < 2:  # version 1 had no case wall time and no p99
        frame = frame.copy()
        frame["case_wall_s"] = float("nan")
        frame["time_p99_s"] = float("nan")
    if version < 3:  # one GPU, one process: the run's first device
        devices = header.get("devices") or [{}]
        frame = frame.copy()
        frame["device"] = int(devices[0].get("index", 0) or 0)
        frame["host"] = devices[0].get("host") or header.get("meta", {}).get("host", "")
        frame["rank"] = 0
    if version < 4 and "wall_steady_s" in frame.columns:
        frame = _steady_as_mean(frame)
    return frame


def _steady_as_mean(frame: pd.DataFrame) -> pd.DataFrame:
    """A loop's rows of layouts before 4, whose ``wall_steady_s`` was the median steady iteration,
    in layout 4's terms: ``wall_steady_median_s`` keeps that median, ``wall_steady_s`` becomes the
    mean, (``wall_s`` − ``wall_setup_s`` − median) / (iterations − 1) (the old setup had the median
    taken off), and ``wall_setup_s`` = ``wall_s`` − iterations × mean (a loop of one iteration has no
    steady one: its rows stay as they were)."""
    frame = frame.copy()
    median = frame["wall_steady_s"].astype(float)
    frame["wall_steady_median_s"] = median
    if "axis.iterations" not in frame:
        return frame
    its = pd.to_numeric(frame["axis.iterations"], errors="coerce")
    steady = its >= 2
    mean = (frame["wall_s"].astype(float) - frame["wall_setup_s"].astype(float) - median) / (its - 1)
    frame.loc[steady, "wall_steady_s"] = mean[steady]
    frame.loc[steady, "wall_setup_s"] = (frame["wall_s"].astype(float) - its * mean)[steady]
    return frame


def merge_results(sets: list["ResultSet"], ranks: list[dict] | None = None) -> "ResultSet":
    """One ResultSet from the ranks' (or several runs') sets: rows concatenated in order, each
    GPU listed once per host and rank, the first set's metadata with ``ranks`` added (what each
    contributed: host, rank, rows, failed cases, wall time)."""
    if not sets:
        raise UsageError("nothing to merge: no result sets given")
    frames = [r.frame for r in sets if len(r.frame)]
    frame = ordered(pd.concat(frames, ignore_index=True)) if frames else sets[0].frame
    devices, seen = [], set()
    for r in sets:
        for d in r.devices:
            key = (d.get("host"), d.get("rank", 0), d.get("index"))
            if key not in seen:
                seen.add(key)
                devices.append(d)
    meta = dict(sets[0].meta)
    meta["ranks"] = ranks if ranks is not None else [
        {"rank": int(r.frame["rank"].iloc[0]) if len(r.frame) and "rank" in r.frame else i,
         "host": r.meta.get("host"), "rows": len(r.frame), "failed": r.failed_cases(), "wall_s": r.meta.get("wall_s")}
        for i, r in enumerate(sets)]
    meta["wall_s"] = max((r.meta.get("wall_s") or 0) for r in sets) or meta.get("wall_s")
    return ResultSet(frame, meta, devices)


def slug(text: str) -> str:
    """Text as a lowercase name for files and scenarios: runs of anything but letters and digits become '-'."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def format_for(path: Path) -> str:
    fmt = FORMATS.get(Path(path).suffix.lower())
    if fmt is None:
        raise UsageError(f"{path}: expected a file ending in .parquet, .csv or .json, got {Path(path).suffix or 'no suffix'!r}")
    return fmt


def ordered(frame: pd.DataFrame) -> pd.DataFrame:
    """Base columns first (case, axis.*, ...), op-specific extras after, in stable order."""
    axes = [c for c in frame.columns if c.startswith(AXIS_PREFIX)]
    head = ["scenario", "op", "case"]
    rest = [c for c in BASE_COLUMNS if c not in head]
    extras = [c for c in frame.columns if c not in BASE_COLUMNS and c not in axes]
    for c in BASE_COLUMNS:
        if c not in frame.columns:
            frame[c] = pd.NA
    return frame[head + axes + rest + extras]


class ResultWriter:
    """Collects rows and rewrites the result file as cases finish: after the first case, then at
    most once every FLUSH_EVERY_S (or ten times what the last rewrite took, for a file grown large:
    rewriting 6000 rows took 0.1 s, and a calibration of 1000 cases rewritten after each case
    spent a sixth of its time so), and when told (:meth:`flush`: the runner's last rewrite, also
    after Ctrl-C or a lost context).

    ``resume=True`` keeps the rows of an existing file (its cases are :attr:`done`) and adds
    to them: how a run goes on in a fresh process after its CUDA context was lost, or after an
    interrupted one is started again."""

    FLUSH_EVERY_S = 1.0

    def __init__(self, path: str | Path, meta: dict, force: bool = False, resume: bool = False):
        self.path = Path(path)
        format_for(self.path)
        if self.path.is_dir():
            raise UsageError(f"{self.path}: is a folder; expected a file ending in .parquet, .csv or .json")
        if self.path.exists() and not force and not resume:
            raise UsageError(f"{self.path}: already exists; pass --force to overwrite it or -o to write elsewhere")
        self.meta = meta
        self.devices: list = []
        self.rows: list[dict] = []
        self.done: set = set()
        self.pending = False  # rows added since the file was last written
        self._flushed_at, self._flush_cost = -math.inf, 0.0
        if resume and self.path.exists():
            earlier = ResultSet.load(self.path)
            self.meta = {**earlier.meta, **{k: v for k, v in meta.items() if k not in earlier.meta}}
            self.devices = earlier.devices
            self.rows = [{k: v for k, v in r.items() if not _missing(v)} for r in earlier.frame.to_dict(orient="records")]
            self.done = {(r["scenario"], r["case"], int(r.get("device", 0) or 0)) for r in self.rows}

    def add(self, rows: list[dict]) -> None:
        """Keep a case's rows; rewrite the file if it is due (see the class's docstring)."""
        self.rows.extend(rows)
        self.pending = True
        if time.monotonic() - self._flushed_at >= max(self.FLUSH_EVERY_S, 10 * self._flush_cost):
            self.flush()

    def result(self) -> ResultSet:
        frame = ordered(pd.DataFrame(self.rows)) if self.rows else pd.DataFrame(columns=BASE_COLUMNS)
        return ResultSet(frame, self.meta, self.devices)

    def flush(self) -> None:
        """Rewrite the file with every row kept so far."""
        t0 = time.monotonic()
        self.result().save(self.path)
        self._flushed_at = time.monotonic()
        self._flush_cost, self.pending = self._flushed_at - t0, False


def _missing(v) -> bool:
    return v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v))


def _json_default(o):
    try:
        import numpy as np

        if isinstance(o, np.generic):
            return o.item()
    except ImportError:
        pass
    if o is pd.NA:
        return None
    return str(o)


def _clean_record(r: dict) -> dict:
    out = {}
    for k, v in r.items():
        if v is pd.NA or (isinstance(v, float) and math.isnan(v)):
            v = None
        out[k] = v
    return out


def _arrow_safe(frame):
    """A column whose values mix types (an op's int beside another op's text) cannot become one
    Arrow column: write those as text rather than lose the file."""
    out = frame
    for col in frame.columns:
        if frame[col].dtype != object:
            continue
        kinds = {type(v) for v in frame[col] if v is not None and not (isinstance(v, float) and v != v)}
        if len(kinds) > 1 and not kinds <= {int, float, bool}:
            if out is frame:
                out = frame.copy()
            out[col] = frame[col].map(lambda v: v if v is None or (isinstance(v, float) and v != v) else str(v))
    return out


SIZE_AXES = {AXIS_PREFIX + "bytes", AXIS_PREFIX + "page"}  # axes of kind 'size', shown as 64KiB


def axis_text(col: str, v) -> str:
    """An axis value as case names show it: sizes as 64KiB, whole floats as integers."""
    if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA:
        return "-"
    if col in SIZE_AXES or col.endswith("_bytes"):
        return format_size(v)
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)

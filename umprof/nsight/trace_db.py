"""Any application's Nsight Systems trace, read with SQL: its copies, kernels, CUDA calls, unified
memory and NVTX ranges as tables.

An ``.sqlite`` export is read directly (no nsys needed); an ``.nsys-rep`` is exported once with
``nsys export --type sqlite`` and the export kept beside it (reused while it is newer than the
report). Nsight Systems' tables are those of its export schema (``CUPTI_ACTIVITY_KIND_MEMCPY``,
``..._KERNEL``, ``..._MEMSET``, ``..._RUNTIME``, ``CUDA_UM_*_PAGE_FAULT_EVENTS``, ``NVTX_EVENTS``,
``TARGET_INFO_GPU``, ``CUPTI_ACTIVITY_KIND_GRAPH_TRACE``, ``StringIds`` and the ``ENUM_*`` tables
that name its codes); columns are looked up by name, so a version that adds or drops one still reads,
and a trace without a table reads as an empty one. Times are nanoseconds on the trace's clock.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pandas as pd

from umprof.core.errors import ToolUnavailable, UsageError
from umprof.nsight.kineto import GZIP_MAGIC, KINETO_SUFFIXES, SQLITE_MAGIC, is_kineto_trace, read_kineto
from umprof.nsight.rank_info import launcher_of
from umprof.nsight.tables import GRAPH_COLUMNS, TraceTables  # noqa: F401 (TraceTables is imported from here)

NSYS_REPORT, NSYS_EXPORT = ".nsys-rep", ".sqlite"  # Nsight Systems' report, and the SQLite export made of it
NSYS_SUFFIXES = (NSYS_REPORT, NSYS_EXPORT)
# the trace files umprof reads, in the words of every message that says what a file should have been
EXPECTED = (f"expected an Nsight Systems {NSYS_REPORT} report or the {NSYS_EXPORT} that `nsys export --type sqlite` "
            f"makes of it, or torch.profiler's JSON trace ({' or '.join(KINETO_SUFFIXES)})")
# CUPTI's codes where a trace has no ENUM table naming them (CUpti_ActivityMemcpyKind, ...MemoryKind)
COPY_KINDS = {0: "unknown", 1: "h2d", 2: "d2h", 3: "h2a", 4: "a2h", 5: "a2a", 6: "a2d", 7: "d2a", 8: "d2d",
              9: "h2h", 10: "p2p", 11: "um_h2d", 12: "um_d2h", 13: "um_d2d"}
MEM_KINDS = {0: "unknown", 1: "pageable", 2: "pinned", 3: "device", 4: "array", 5: "managed", 6: "device",
             7: "managed"}
PID_SHIFT = 24  # a globalTid / globalPid holds the process id in bits 24..47
# rows read from SQLite at once: a table is read in chunks, so that Python's row objects never hold more than this
# many rows (a table of 10M rows as one list of tuples takes gigabytes), while pandas keeps the columns
CHUNK_ROWS = 250_000
# What a trace without one of these tables lacks, said in its notes (nsys leaves out a table it has no rows for)
MISSING = {"CUPTI_ACTIVITY_KIND_MEMCPY": "no memory copies",
           "CUPTI_ACTIVITY_KIND_KERNEL": "no kernels",
           "NVTX_EVENTS": "no NVTX ranges (traced without `-t nvtx`, or the application marks none)",
           "CUDA_UM_GPU_PAGE_FAULT_EVENTS": "no unified-memory GPU page faults (none, or traced without "
                                            "--cuda-um-gpu-page-faults=true)",
           "CUDA_UM_CPU_PAGE_FAULT_EVENTS": "no unified-memory CPU page faults (none, or traced without "
                                            "--cuda-um-cpu-page-faults=true)"}


HEAD_BYTES = 4096  # what is read of a file to say what it holds: a trace can be gigabytes


def open_trace(path, nsys: str | None = None) -> TraceTables:
    """Read a trace: ``.sqlite`` directly, ``.nsys-rep`` through its SQLite export (made once with
    nsys, kept beside it). Bad input is one :class:`UsageError` naming the file and saying what it is; an
    ``.nsys-rep`` without nsys is a :class:`~umprof.core.errors.ToolUnavailable` naming the report."""
    path = Path(path)
    head = _head(path)
    if head.startswith(SQLITE_MAGIC):
        return read_sqlite(path)
    what = content_of(head)
    if head.startswith(GZIP_MAGIC) or what == JSON:  # torch.profiler's trace, gzipped or not
        return read_kineto(path)
    if path.suffix == NSYS_REPORT and what == BINARY:
        return read_sqlite(export_sqlite(path, nsys))
    if path.suffix == NSYS_EXPORT and what == BINARY:
        raise UsageError(f"{path}: not an SQLite file (its first bytes are not SQLite's header); {EXPECTED}")
    raise UsageError(f"{path}: {what}, not a trace; {EXPECTED}")


def folder_traces(folder) -> list[Path]:
    """The traces under a folder, in name order: Nsight Systems' reports and exports (a report whose export lies
    beside it counted once) and torch.profiler's JSON (one file per rank, as TensorBoard's plugin stores them, or
    any other name), a JSON file that is not a trace (a config, results) left out; one line naming the folder and
    what was expected where it holds none."""
    folder = Path(folder)
    files = sorted(f for f in folder.rglob("*") if f.is_file() and not f.name.startswith("."))
    nsys = {f for f in files if f.name.endswith(NSYS_SUFFIXES)}
    # an export beside its own report, not a file of that name in another folder
    nsys -= {f for f in nsys if f.suffix == NSYS_REPORT and f.with_suffix(NSYS_EXPORT) in nsys}
    json_files = [f for f in files if f.name.endswith(KINETO_SUFFIXES)]
    found = sorted(nsys | {f for f in json_files if is_kineto_trace(f)})
    if not found:
        others = f" ({len(json_files)} JSON file(s) in it, none a torch.profiler trace)" if json_files else ""
        raise UsageError(f"{folder}: a folder with no traces in it{others}; {EXPECTED}")
    return found


def _head(path: Path) -> bytes:
    """The file's first HEAD_BYTES, or a UsageError naming it where there is no file to read."""
    if path.is_dir():
        raise UsageError(f"{path}: a directory, not a trace file; {EXPECTED}")
    if not path.exists():
        raise UsageError(f"{path}: no such trace file; {EXPECTED}")
    try:
        with open(path, "rb") as f:
            return f.read(HEAD_BYTES)
    except OSError as e:
        raise UsageError(f"{path}: could not be read ({e.strerror or e})") from None


BINARY = "binary data of no kind umprof reads"
JSON = "a JSON file"
# what a file's first bytes say it is, where they say it (magic numbers); a gzip file never comes here: open_trace
# gives it to the torch.profiler reader, which says what is inside it
MAGICS = ((b"PK\x03\x04", "a zip archive"), (b"\x7fELF", "an executable (ELF)"), (b"PAR1", "a Parquet file"))


def content_of(head: bytes) -> str:
    """What a file whose first bytes are ``head`` holds, in words: empty, an archive, an executable, Parquet, text
    (JSON among it), else BINARY."""
    if not head:
        return "an empty file"
    for magic, what in MAGICS:
        if head.startswith(magic):
            return what
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as e:
        if e.start < len(head) - 4:  # not a character cut at the end of what was read
            return BINARY
        text = head[:e.start].decode("utf-8")
    if "\x00" in text:
        return BINARY
    return JSON if text.lstrip()[:1] in ("{", "[") else "a text file"


def export_sqlite(report: Path, nsys: str | None = None) -> Path:
    """The report's SQLite export beside it (``app.nsys-rep`` → ``app.sqlite``), made now unless a
    newer one is there; written to a temporary name first, so that no half export is left."""
    import subprocess

    from umprof.nsight.nsys import last_line, find_nsys

    out = report.with_suffix(".sqlite")
    if out.is_file() and out.stat().st_mtime >= report.stat().st_mtime:
        return out
    try:
        exe = find_nsys(nsys)
    except ToolUnavailable as e:
        raise ToolUnavailable(f"{report}: an Nsight Systems report, read through its SQLite export, which needs nsys: "
                              f"{e}") from None
    tmp = out.with_name(f".{out.stem}.exporting.sqlite")
    tmp.unlink(missing_ok=True)
    proc = subprocess.run([exe, "export", "--type", "sqlite", "--force-overwrite", "true", "--output", str(tmp),
                           str(report)], capture_output=True, text=True)
    if proc.returncode != 0 or not tmp.is_file():
        tmp.unlink(missing_ok=True)
        raise UsageError(f"{report}: nsys could not export it ({last_line(proc.stderr or proc.stdout)}); is it a "
                         "complete Nsight Systems report?")
    tmp.replace(out)
    return out


def read_sqlite(path: Path) -> TraceTables:
    """The tables of an Nsight Systems SQLite export (see the module's docstring)."""
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.DatabaseError as e:
        raise UsageError(f"{path}: an SQLite file that could not be read ({e}): truncated, or not a trace?") from None
    try:
        if not tables & {"CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",
                         "TARGET_INFO_SESSION_START_TIME", "StringIds"}:
            raise UsageError(f"{path}: an SQLite database, but not an Nsight Systems export (none of its tables: "
                             f"found {', '.join(sorted(tables)[:5]) or 'no tables'})")
        r = _Reader(con, tables)
        host, rank, world_size = launcher_of(r.system_env())
        return TraceTables(path=path, gpus=r.gpus(), processes=r.processes(), copies=r.copies(), kernels=r.kernels(),
                           memsets=r.memsets(), calls=r.calls(), gpu_faults=r.gpu_faults(), cpu_faults=r.cpu_faults(),
                           ranges=r.ranges(), notes=r.notes, graphs=r.graphs(), host=host, rank=rank,
                           world_size=world_size, rank_from="environment")
    except sqlite3.DatabaseError as e:
        raise UsageError(f"{path}: the trace could not be read ({e}): truncated or damaged?") from None
    finally:
        con.close()


class _Reader:
    def __init__(self, con: sqlite3.Connection, tables: set[str]):
        self.con, self.tables, self.notes = con, tables, []
        self._strings: dict[int, str] | None = None

    def columns(self, table: str) -> set[str]:
        return {r[1] for r in self.con.execute(f"PRAGMA table_info({table})")} if table in self.tables else set()

    def _lacks(self, table: str) -> None:
        """Say once in the notes what a trace without ``table`` lacks (MISSING)."""
        if table in MISSING and MISSING[table] not in self.notes:
            self.notes.append(MISSING[table])

    def frame(self, table: str, wanted: dict[str, str], where: str = "") -> pd.DataFrame:
        """``SELECT`` the columns of ``wanted`` (our name → the trace's) that the table has; the rest
        come back empty."""
        have = self.columns(table)
        if not have:
            self._lacks(table)
            return pd.DataFrame(columns=list(wanted))
        cols = [f'"{src}" AS "{ours}"' for ours, src in wanted.items() if src in have]
        chunks = list(pd.read_sql_query(f"SELECT {', '.join(cols)} FROM {table} {where}", self.con,
                                        chunksize=CHUNK_ROWS))
        df = pd.concat(chunks, ignore_index=True) if len(chunks) > 1 else chunks[0]
        for ours in wanted:
            if ours not in df:
                df[ours] = pd.NA
        return df[list(wanted)]

    def strings(self) -> dict[int, str]:
        if self._strings is None:
            self._strings = dict(self.con.execute("SELECT id, value FROM StringIds").fetchall()) \
                if "StringIds" in self.tables else {}
        return self._strings

    def enum(self, table: str, default: dict[int, str], mapping) -> dict[int, str]:
        """A code → name table from the trace's ENUM table (its names mapped to ours), else CUPTI's."""
        if table not in self.tables:
            return default
        out = {}
        for code, name, label in self.con.execute(f"SELECT id, name, label FROM {table}"):
            out[int(code)] = mapping(f"{name} {label or ''}".lower(), default.get(int(code), "unknown"))
        return out or default

    def system_env(self) -> dict[str, str]:
        """``TARGET_INFO_SYSTEM_ENV`` as name → value (its text columns, or string ids through ``StringIds``); none
        where it cannot be read: the host and rank it names are the trace's labels, not what is advised."""
        have = self.columns("TARGET_INFO_SYSTEM_ENV")
        try:
            if {"name", "value"} <= have:
                rows = self.con.execute("SELECT name, value FROM TARGET_INFO_SYSTEM_ENV").fetchall()
            elif {"nameId", "valueId"} <= have:
                strings = self.strings()
                rows = [(strings.get(n), strings.get(v))
                        for n, v in self.con.execute("SELECT nameId, valueId FROM TARGET_INFO_SYSTEM_ENV")]
            else:
                rows = []
        except sqlite3.Error:
            return {}
        return {str(k): str(v) for k, v in rows if k is not None and v is not None}

    def gpus(self) -> pd.DataFrame:
        have = self.columns("TARGET_INFO_GPU")
        if not have:
            return pd.DataFrame(columns=["device", "name", "memory_bytes"])
        dev = "cuDevice" if "cuDevice" in have else "id"
        df = self.frame("TARGET_INFO_GPU", {"device": dev, "name": "name", "memory_bytes": "totalMemory"})
        return df.drop_duplicates("device").reset_index(drop=True)

    def processes(self) -> pd.DataFrame:
        """pid, name (the command the process was started as) and program (its main thread's name, the
        executable the kernel runs: ``python3`` for a script started by its ``#!`` line or a wrapper that
        execs the interpreter; the name where the trace has no thread names)."""
        df = self.frame("PROCESSES", {"global": "globalPid", "pid": "pid", "name": "name"})
        if not len(df):
            return pd.DataFrame(columns=["pid", "name", "program"])
        threads = self.frame("ThreadNames", {"tid": "globalTid", "name": "nameId"})
        strings = self.strings()
        # a main thread's global id is its process's plus its pid (the tid of a process's first thread)
        main = {int(t): strings.get(int(n), "") for t, n in zip(threads["tid"], threads["name"])
                if pd.notna(t) and pd.notna(n)}
        df["program"] = [main.get(int(g) + int(p), "") or name if pd.notna(g) and pd.notna(p) else name
                         for g, p, name in zip(df["global"], df["pid"], df["name"])]
        return df[["pid", "name", "program"]]

    def copies(self) -> pd.DataFrame:
        df = self.frame("CUPTI_ACTIVITY_KIND_MEMCPY", {
            "start": "start", "end": "end", "global": "globalPid", "device": "deviceId", "stream": "streamId",
            "correlation": "correlationId", "bytes": "bytes", "kind": "copyKind", "src": "srcKind", "dst": "dstKind",
            "cause": "migrationCause", "address": "virtualAddress"})
        kinds = self.enum("ENUM_CUDA_MEMCPY_OPER", COPY_KINDS, _copy_kind)
        mems = self.enum("ENUM_CUDA_MEM_KIND", MEM_KINDS, _mem_kind)
        df["kind"] = _named(df["kind"], kinds, "unknown")
        for col in ("src", "dst"):
            df[col] = _named(df[col], mems, "unknown")
        return _with_pid(df)

    def kernels(self) -> pd.DataFrame:
        have = self.columns("CUPTI_ACTIVITY_KIND_KERNEL")
        name = "shortName" if "shortName" in have else "demangledName"
        df = self.frame("CUPTI_ACTIVITY_KIND_KERNEL", {
            "start": "start", "end": "end", "global": "globalPid", "device": "deviceId", "stream": "streamId",
            "correlation": "correlationId", "name": name})
        ids = pd.to_numeric(df["name"], errors="coerce")
        strings = self.strings()
        known = {i: strings.get(int(i), str(int(i))) for i in ids.dropna().unique()}
        df["name"] = _named(ids, known, "kernel")
        return _with_pid(df)

    def memsets(self) -> pd.DataFrame:
        return _with_pid(self.frame("CUPTI_ACTIVITY_KIND_MEMSET", {
            "start": "start", "end": "end", "global": "globalPid", "device": "deviceId", "stream": "streamId",
            "correlation": "correlationId", "bytes": "bytes"}))

    def calls(self) -> pd.DataFrame:
        df = self.frame("CUPTI_ACTIVITY_KIND_RUNTIME", {
            "start": "start", "end": "end", "tid": "globalTid", "correlation": "correlationId", "name": "nameId"})
        ids = pd.to_numeric(df["name"], errors="coerce")
        strings = self.strings()
        df["name"] = _named(ids, {i: _api_name(strings.get(int(i), "")) for i in ids.dropna().unique()}, "")
        df["global"] = df["tid"]
        return _with_pid(df)

    def graphs(self) -> pd.DataFrame:  # none where the trace holds no graphs, or traced them node by node
        return _with_pid(self.frame("CUPTI_ACTIVITY_KIND_GRAPH_TRACE", {
            "start": "start", "end": "end", "global": "globalPid", "device": "deviceId", "stream": "streamId",
            "correlation": "correlationId"}))

    def gpu_faults(self) -> pd.DataFrame:
        return _with_pid(self.frame("CUDA_UM_GPU_PAGE_FAULT_EVENTS", {
            "start": "start", "end": "end", "global": "globalPid", "device": "deviceId",
            "faults": "numberOfPageFaults", "address": "address"}))

    def cpu_faults(self) -> pd.DataFrame:
        return _with_pid(self.frame("CUDA_UM_CPU_PAGE_FAULT_EVENTS", {"start": "start", "global": "globalPid",
                                                                      "address": "address"}))

    def ranges(self) -> pd.DataFrame:
        have = self.columns("NVTX_EVENTS")
        if not have:
            self._lacks("NVTX_EVENTS")
            return pd.DataFrame(columns=["start", "end", "pid", "tid", "name"])
        df = self.frame("NVTX_EVENTS", {"start": "start", "end": "end", "tid": "globalTid", "text": "text",
                                        "text_id": "textId", "type": "eventType"},
                        where="WHERE end IS NOT NULL AND end > start")
        ids = pd.to_numeric(df["text_id"], errors="coerce")
        strings = self.strings()
        by_id = _named(ids, {i: strings.get(int(i), "") for i in ids.dropna().unique()}, "")
        text = df["text"].fillna("").astype(str)
        df["name"] = text.where(text != "", by_id)
        df["global"] = df["tid"]
        return _with_pid(df)[["start", "end", "pid", "tid", "name"]]


def _named(codes: pd.Series, names: dict, default: str) -> pd.Series:
    """Each code's name from ``names`` (code → name), ``default`` where it has none or is empty: one look-up a
    distinct code, not one a row."""
    return pd.to_numeric(codes, errors="coerce").map(names).astype(object).fillna(default).astype(str)


def _with_pid(df: pd.DataFrame) -> pd.DataFrame:
    """The process id from Nsight's global id (bits 24..47), the global id dropped; a correlation id
    of 0 (CUPTI's 'no API call': a unified-memory migration) made empty."""
    g = pd.to_numeric(df["global"], errors="coerce").fillna(0).to_numpy("int64")
    df = df.drop(columns=["global"])
    df["pid"] = (g >> PID_SHIFT) & 0xFFFFFF
    if "correlation" in df:
        df["correlation"] = pd.to_numeric(df["correlation"], errors="coerce").astype("Int64").replace(0, pd.NA)
    for col in ("start", "end"):
        if col in df:
            df[col] = pd.to_numeric(df[col], errors="coerce").astype("int64")
    return df


def _copy_kind(text: str, default: str) -> str:
    unified = "unified" in text or "uvm" in text
    for key, ours in (("htod", "h2d"), ("host-to-device", "h2d"), ("dtoh", "d2h"), ("device-to-host", "d2h"),
                      ("dtod", "d2d"), ("device-to-device", "d2d"), ("ptop", "p2p"), ("peer-to-peer", "p2p"),
                      ("htoh", "h2h"), ("host-to-host", "h2h")):
        if key in text:
            return ("um_" + ours) if unified and ours in ("h2d", "d2h", "d2d") else ours
    return default


def _mem_kind(text: str, default: str) -> str:
    for key in ("pageable", "pinned", "managed", "device", "array"):
        if key in text:
            return key
    return default


def _api_name(name: str) -> str:
    """A CUDA call's name without its version suffix: 'cudaMemcpyAsync_v3020' → 'cudaMemcpyAsync'."""
    head, _, tail = name.rpartition("_v")
    return head if head and tail.isdigit() else name

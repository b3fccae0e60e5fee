"""A torch.profiler (Kineto) trace read into the tables an Nsight Systems trace fills
(:class:`~umprof.nsight.trace_db.TraceTables`), so that everything after reading is shared.

``torch.profiler.profile(...).export_chrome_trace(path)`` and TensorBoard's trace handler write a
Chrome-trace JSON (``.json``, or ``.json.gz``), one file per process (a rank of a distributed job;
:func:`~umprof.nsight.trace_db.folder_traces` lists a folder of them). Its ``traceEvents`` hold complete events by category:
``gpu_memcpy`` ("Memcpy HtoD (Pageable -> Device)": direction and host memory kind in the name; bytes,
stream, device and correlation in ``args``), ``gpu_memset``, ``kernel``, ``cuda_runtime`` and
``cuda_driver`` calls (joined to what they launched by ``args.correlation``, or by their ``ac2g``
flow where an event lacks it), ``cpu_op`` and ``user_annotation`` ranges (``aten::copy_``,
``ProfilerStep#3``), and ``process_name``/``thread_name`` metadata; the top level holds
``deviceProperties`` (each GPU's name and memory) and ``distributedInfo`` (rank, world size).
Older PyTorch wrote ``Kernel``, ``Runtime``, ``Memcpy``, ``Memset`` and ``Operator``: read alike.
GPU events carry the device as their pid; they belong to the trace's one process, whose pid they
are given. Times are microseconds in the file and nanoseconds here.
"""

from __future__ import annotations

import gzip
import re
import zlib
from collections import defaultdict
from pathlib import Path

import numpy as np
import pandas as pd

from umprof.core.errors import UsageError
from umprof.nsight.tables import GRAPH_COLUMNS, TraceTables

SQLITE_MAGIC = b"SQLite format 3\x00"  # an Nsight Systems export's first bytes (also a gzipped one's, decompressed)

GZIP_MAGIC = b"\x1f\x8b"
# Kineto's categories (lower-cased), today's names and PyTorch 1.8-1.9's
COPY_CATS = {"gpu_memcpy", "memcpy"}
MEMSET_CATS = {"gpu_memset", "memset"}
KERNEL_CATS = {"kernel"}
CALL_CATS = {"cuda_runtime", "cuda_driver", "runtime", "driver"}
RANGE_CATS = {"cpu_op", "user_annotation", "operator"}
FLOW_CATS = {"ac2g", "async_gpu", "async_cpu_to_gpu"}
# libkineto's names of CUPTI's copy kinds and memory kinds (ActivityType strings), as trace_db names them
COPY_KINDS = {"htod": "h2d", "dtoh": "d2h", "dtod": "d2d", "htoh": "h2h", "ptop": "p2p", "htoa": "h2a",
              "atoh": "a2h", "atoa": "a2a", "atod": "a2d", "dtoa": "d2a"}
MEM_KINDS = {"pageable": "pageable", "pinned": "pinned", "device": "device", "array": "array",
             "managed": "managed", "device static": "device", "managed static": "managed"}
COPY_NAME = re.compile(r"Memcpy\s+(\w+)\s*(?:\((.*?)\s*->\s*(.*?)\))?", re.IGNORECASE)
RECORD_CUDA = ("record it with torch.profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) "
               "(from torch.profiler import ProfilerActivity)")
THREAD_NAME = re.compile(r"^thread \d+ \((.*)\)$")  # Kineto's 'thread 1102 (python3.10)'
KINETO_SUFFIXES = (".json", ".json.gz")  # what export_chrome_trace and TensorBoard's trace handler write
# what tells a Chrome trace from other JSON in its first bytes: torch.profiler's object opens with "schemaVersion"
# and holds "traceEvents"; a bare list of events names each event's phase ("ph")
TRACE_KEYS = (b'"schemaVersion"', b'"traceEvents"')
EVENT_KEY = b'"ph"'
# read of a JSON file to tell a trace: torch.profiler writes "schemaVersion" first, before its GPUs' properties
# (about 600 bytes a GPU, pretty-printed), so that even a machine of many GPUs names a key well within it
HEAD_BYTES = 1 << 16
NOTES = ("a torch.profiler trace: unified memory's migrations and page faults are not in it",)


def read_kineto(path, require_cuda: bool = True) -> TraceTables:
    """The tables of a torch.profiler Chrome-trace JSON (``.json`` or gzipped; see the module's docstring).
    Bad input is one :class:`UsageError` naming the file; so is a trace without CUDA activity (no copies,
    kernels or memsets) unless ``require_cuda`` is False."""
    path = Path(path)
    doc = _load(path)
    events = doc.get("traceEvents") if isinstance(doc, dict) else doc
    if not isinstance(events, list):
        keys = ", ".join(list(doc)[:5]) if isinstance(doc, dict) else type(doc).__name__
        raise UsageError(f"{path}: JSON, but not a Chrome trace (expected a 'traceEvents' list; found {keys})")
    meta = doc if isinstance(doc, dict) else {}
    t = _tables(path, events, meta)
    if require_cuda and not t.has_cuda:
        ops = len(t.ranges)
        raise UsageError(f"{path}: a torch.profiler trace without CUDA activity ({ops} CPU ops, no copies, kernels or "
                         f"memsets): {RECORD_CUDA}")
    return t


def is_kineto_trace(path) -> bool:
    """Whether a ``.json`` (or gzipped) file is a Chrome trace, by its first bytes (:data:`TRACE_KEYS`, or a list
    of events): a config or results file beside the traces is not. A file that cannot be read counts as a trace,
    so that reading it says what is wrong with it."""
    try:
        with open(path, "rb") as f:
            gzipped = f.read(len(GZIP_MAGIC)) == GZIP_MAGIC
        with (gzip.open(path, "rb") if gzipped else open(path, "rb")) as f:
            head = f.read(HEAD_BYTES).lstrip()
    except (OSError, EOFError, zlib.error):
        return True
    if head[:1] == b"{":
        return any(k in head for k in TRACE_KEYS)
    return head[:1] == b"[" and EVENT_KEY in head


def _load(path: Path):
    try:
        raw = path.read_bytes()
        if raw[:2] == GZIP_MAGIC:
            raw = gzip.decompress(raw)
    except (OSError, EOFError, zlib.error) as e:
        raise UsageError(f"{path}: a gzip file that could not be read ({e}): truncated?") from None
    if raw[:len(SQLITE_MAGIC)] == SQLITE_MAGIC:
        raise UsageError(f"{path}: a gzipped SQLite file: decompress it (gunzip) and pass the .sqlite")
    import orjson  # here: reading an Nsight Systems trace, which imports this module, needs no JSON reader

    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as e:
        raise UsageError(f"{path}: not valid JSON ({e}): a torch.profiler trace cut short, or not one?") from None


def _by_category(events: list) -> tuple[dict, list, list]:
    """Complete events by category (lower-cased), metadata events, and the ends of launch flows."""
    by_raw: dict[str, list] = defaultdict(list)
    for e in events:  # a million events: one dict lookup each, the category lower-cased once per category
        if isinstance(e, dict):
            by_raw[(e.get("ph"), e.get("cat"))].append(e)
    by_cat: dict[str, list] = defaultdict(list)
    metadata, flows = [], []
    for (ph, cat), evs in by_raw.items():
        if ph == "X":
            by_cat[str(cat or "").lower()].extend(evs)
        elif ph == "M":
            metadata.extend(evs)
        elif ph == "f" and str(cat or "").lower() in FLOW_CATS:
            flows.extend(evs)
    return by_cat, metadata, flows


def _tables(path: Path, events: list, meta: dict) -> TraceTables:
    by_cat, metadata, flows = _by_category(events)
    calls = [e for c in CALL_CATS for e in by_cat.get(c, ())]
    ranges = [e for c in RANGE_CATS for e in by_cat.get(c, ())]
    pid = _host_pid(calls, ranges, metadata)
    flow_ids = _FlowIds(flows)
    dist = meta.get("distributedInfo") or {}
    notes = list(NOTES)
    copies = _sized(_copies([e for c in COPY_CATS for e in by_cat.get(c, ())], pid, flow_ids), "copies", notes)
    memsets = _sized(_gpu_ops([e for c in MEMSET_CATS for e in by_cat.get(c, ())], pid, flow_ids, "bytes"),
                     "memsets", notes)
    return TraceTables(
        path=path, gpus=_gpus(meta.get("deviceProperties") or []), processes=_processes(metadata, pid),
        copies=copies, memsets=memsets,
        kernels=_gpu_ops([e for c in KERNEL_CATS for e in by_cat.get(c, ())], pid, flow_ids, "name"),
        calls=_calls(calls, pid),
        gpu_faults=pd.DataFrame(columns=["start", "end", "pid", "device", "faults", "address"]),
        cpu_faults=pd.DataFrame(columns=["start", "pid", "address"]), ranges=_ranges(ranges, pid), notes=notes,
        graphs=pd.DataFrame(columns=GRAPH_COLUMNS), source="kineto", host=str(meta.get("host_name") or ""),
        rank=_int_or_none(dist.get("rank")), world_size=_int_or_none(dist.get("world_size")))


def _int_or_none(v) -> int | None:
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def _host_pid(calls: list, ranges: list, metadata: list) -> int:
    """The trace's process: the pid most of its CUDA calls (else its CPU ops) carry, else its CPU process's."""
    for evs in (calls, ranges):
        pids = pd.Series([e.get("pid") for e in evs[:100_000]])
        pids = pd.to_numeric(pids, errors="coerce").dropna()
        if len(pids):
            return int(pids.mode().iloc[0])
    labels = [e.get("pid") for e in metadata if e.get("name") == "process_labels"
              and (e.get("args") or {}).get("labels") == "CPU"]
    return int(labels[0]) if labels and isinstance(labels[0], int) else 0


def _times(evs: list) -> tuple[np.ndarray, np.ndarray]:
    """Start and end (ns) of complete events, from ``ts`` and ``dur`` (µs): the duration rounded on its own,
    so that an end stays exact where a start far from the clock's zero loses its nanoseconds."""
    ts = np.array([e.get("ts", 0) for e in evs], dtype=np.float64)
    dur = np.array([e.get("dur", 0) or 0 for e in evs], dtype=np.float64)
    start = np.rint(ts * 1000.0).astype(np.int64)
    return start, start + np.rint(dur * 1000.0).astype(np.int64)


class _FlowIds:
    """The correlation of a GPU event that lacks one in its ``args``: the id of the flow ending at it
    (same pid, tid and ts), as Chrome's viewer draws the arrow from its launch."""

    def __init__(self, flows: list):
        self._flows = flows
        self._by_place: dict | None = None

    def of(self, e: dict):
        if self._by_place is None:
            self._by_place = {(f.get("pid"), f.get("tid"), f.get("ts")): f.get("id") for f in self._flows}
        return self._by_place.get((e.get("pid"), e.get("tid"), e.get("ts")))


def _gpu_frame(evs: list, pid: int, flow_ids: _FlowIds) -> tuple[pd.DataFrame, list]:
    """The columns every GPU event has: start, end, pid (the trace's process), device, stream, correlation."""
    args = [e.get("args") or {} for e in evs]
    start, end = _times(evs)
    corr = [a.get("correlation") for a in args]
    if any(c is None for c in corr):
        corr = [c if c is not None else flow_ids.of(e) for c, e in zip(corr, evs)]
    df = pd.DataFrame({
        "start": start, "end": end, "pid": np.full(len(evs), pid, dtype=np.int64),
        "device": _ints([a.get("device", e.get("pid")) for a, e in zip(args, evs)]),
        "stream": _ints([a.get("stream", e.get("tid")) for a, e in zip(args, evs)]),
        "correlation": pd.array(corr, dtype="Int64")})
    df["correlation"] = df["correlation"].replace(0, pd.NA)
    return df, args


def _copies(evs: list, pid: int, flow_ids: _FlowIds) -> pd.DataFrame:
    df, args = _gpu_frame(evs, pid, flow_ids)
    parsed = {}
    for name in {e.get("name", "") for e in evs}:
        parsed[name] = _copy_name(name)
    what = [parsed[e.get("name", "")] for e in evs]
    df["bytes"] = pd.array([a.get("bytes") for a in args], dtype="Int64")
    df["kind"] = [w[0] for w in what]
    df["src"] = [w[1] for w in what]
    df["dst"] = [w[2] for w in what]
    df["cause"] = pd.NA
    df["address"] = pd.NA
    return df


def _sized(ops: pd.DataFrame, what: str, notes: list) -> pd.DataFrame:
    """``ops`` without those that carry no byte count (a tracer that records none, as ROCm's does), said in
    ``notes``: what cannot be sized cannot be priced."""
    unsized = ops["bytes"].isna().to_numpy(bool)
    if not unsized.any():
        return ops
    notes.append(f"{int(unsized.sum())} of its {len(ops)} {what} carry no byte count (its tracer recorded none): "
                 "left out of what is priced")
    return ops[~unsized].reset_index(drop=True)


def _copy_name(name: str) -> tuple[str, str, str]:
    """'Memcpy HtoD (Pageable -> Device)' → ('h2d', 'pageable', 'device')."""
    m = COPY_NAME.match(name or "")
    if not m:
        return "unknown", "unknown", "unknown"
    kind = COPY_KINDS.get(m.group(1).lower(), "unknown")
    src, dst = (MEM_KINDS.get((g or "").strip().lower(), "unknown") for g in (m.group(2), m.group(3)))
    return kind, src, dst


def _gpu_ops(evs: list, pid: int, flow_ids: _FlowIds, extra: str) -> pd.DataFrame:
    df, args = _gpu_frame(evs, pid, flow_ids)
    if extra == "name":
        df["name"] = [e.get("name", "kernel") for e in evs]
    else:
        df["bytes"] = pd.array([a.get("bytes") for a in args], dtype="Int64")
    return df


def _calls(evs: list, pid: int) -> pd.DataFrame:
    start, end = _times(evs)
    df = pd.DataFrame({
        "start": start, "end": end, "pid": np.full(len(evs), pid, dtype=np.int64),
        "tid": _tids(evs),
        "correlation": pd.array([(e.get("args") or {}).get("correlation") for e in evs], dtype="Int64"),
        "name": [e.get("name", "") for e in evs]})
    df["correlation"] = df["correlation"].replace(0, pd.NA)
    return df


def _tids(evs: list) -> pd.arrays.IntegerArray:
    """Events' thread ids."""
    return _ints([e.get("tid") for e in evs])


def _ints(values: list) -> pd.arrays.IntegerArray:
    """Integers, also where a trace writes them as text (Kineto's 2021 traces write thread ids as "25738"); a name
    where a trace gives one instead ('GPU 0', 'stream 7', Kineto's own spans) left empty."""
    return pd.array([v if type(v) is int else int(v) if isinstance(v, str) and v.isdigit() else None
                     for v in values], dtype="Int64")


def _ranges(evs: list, pid: int) -> pd.DataFrame:
    """CPU ops and user annotations as ranges (``kind``: their category), longest first where they start
    together, so that the innermost of nested ranges is the later one."""
    start, end = _times(evs)
    df = pd.DataFrame({"start": start, "end": end,
                       "pid": np.full(len(evs), pid, dtype=np.int64),
                       "tid": _tids(evs),
                       "name": [e.get("name", "") for e in evs],
                       "kind": [str(e.get("cat", "")).lower() for e in evs]})
    df = df[df["end"] > df["start"]]
    return df.sort_values(["start", "end"], ascending=[True, False], kind="stable").reset_index(drop=True)


def _gpus(props: list) -> pd.DataFrame:
    rows = [{"device": p.get("id"), "name": p.get("name"), "memory_bytes": p.get("totalGlobalMem")}
            for p in props if isinstance(p, dict)]
    df = pd.DataFrame(rows, columns=["device", "name", "memory_bytes"])
    return df.drop_duplicates("device").reset_index(drop=True)


def _processes(metadata: list, pid: int) -> pd.DataFrame:
    """The trace's process: its name (``process_name``) and, where it differs, its main thread's."""
    names = {e.get("pid"): (e.get("args") or {}).get("name", "") for e in metadata if e.get("name") == "process_name"}
    threads = {e.get("tid"): (e.get("args") or {}).get("name", "") for e in metadata
               if e.get("name") == "thread_name" and e.get("pid") == pid}
    name = str(names.get(pid) or f"pid {pid}")
    main = THREAD_NAME.sub(r"\1", str(threads.get(pid) or ""))
    return pd.DataFrame([{"pid": pid, "name": name, "program": main if main and main != name else name}])

"""Unified-memory counters in-process through CUPTI (``cupti-python``): what nvprof's
"Unified Memory profiling result" showed, per case and per phase.

CUPTI delivers one activity record per migration (bytes, host→device or device→host), per
GPU page-fault group (its value: the faults in the group), per CPU page fault, and per
thrashing, throttling or remote-map event, each with a start timestamp on CUPTI's clock.
:class:`PhaseTimer <umprof.measure.timing.PhaseTimer>` notes that clock at each phase's start and
end; :func:`attribute` then sums the records falling inside each phase. Records outside any
phase (the resets between samples, which put pages back on the host) count nowhere.

Two facts from the GPU machine shape this module: the counters must be configured after
``cuInit`` (before it CUPTI answers ERROR_NOT_READY), and only one CUPTI client can own the
activity API, so the collector stands aside when the process runs under Nsight Systems.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass

# CUPTI counter kind names → the column stem umprof writes
KINDS = {
    "BYTES_TRANSFER_HTOD": "htod",
    "BYTES_TRANSFER_DTOH": "dtoh",
    "CPU_PAGE_FAULT_COUNT": "cpu_fault",
    "GPU_PAGE_FAULT": "gpu_fault",
    "THRASHING": "thrashing",
    "THROTTLING": "throttling",
    "REMOTE_MAP": "remote_map",
}
# Counted only when several GPUs are: migrations from one GPU to another (needs peer support).
PEER_KINDS = {"BYTES_TRANSFER_DTOD": "dtod"}
# The columns every phase of every case gets while the counters run (zeros where nothing happened).
COLUMNS = (
    "um_htod_bytes", "um_htod_migrations", "um_htod_min_bytes", "um_htod_max_bytes",
    "um_dtoh_bytes", "um_dtoh_migrations", "um_dtoh_min_bytes", "um_dtoh_max_bytes",
    "um_gpu_fault_groups", "um_gpu_faults", "um_cpu_faults", "um_thrashing", "um_throttling", "um_remote_maps",
)
# Added where several GPUs are counted.
PEER_COLUMNS = ("um_dtod_bytes", "um_dtod_migrations", "um_dtod_min_bytes", "um_dtod_max_bytes")


@dataclass(frozen=True)
class Record:
    kind: str  # a value of KINDS
    start: int  # CUPTI timestamp, ns
    value: int


def under_profiler() -> str | None:
    """The name of another CUPTI client this process runs under (Nsight Systems or Compute), or None."""
    if os.environ.get("UMPROF_UNDER_NSYS") or os.environ.get("NSYS_PROFILING_SESSION_ID"):
        return "Nsight Systems"
    inj = os.environ.get("CUDA_INJECTION64_PATH", "").lower()
    if not inj:
        return None
    if "nsight-compute" in inj or "ncu" in inj:
        return "Nsight Compute"
    if "nsys" in inj or "nsight-systems" in inj or "toolsinjection" in inj:
        return "Nsight Systems"
    return "a CUDA injection library"


def summarize_records(records) -> dict:
    """nvprof's table for a list of records: migrations count/bytes/min/max, fault groups, faults."""
    out = {c: 0 for c in COLUMNS}
    if any(r.kind == "dtod" for r in records):
        out.update({c: 0 for c in PEER_COLUMNS})
    for direction in ("htod", "dtoh", "dtod"):
        sizes = [r.value for r in records if r.kind == direction]
        if sizes:
            out[f"um_{direction}_bytes"] = sum(sizes)
            out[f"um_{direction}_migrations"] = len(sizes)
            out[f"um_{direction}_min_bytes"] = min(sizes)
            out[f"um_{direction}_max_bytes"] = max(sizes)
    groups = [r.value for r in records if r.kind == "gpu_fault"]
    out["um_gpu_fault_groups"] = len(groups)
    out["um_gpu_faults"] = sum(groups)
    out["um_cpu_faults"] = sum(1 for r in records if r.kind == "cpu_fault")
    out["um_thrashing"] = sum(1 for r in records if r.kind == "thrashing")
    out["um_throttling"] = sum(1 for r in records if r.kind == "throttling")
    out["um_remote_maps"] = sum(1 for r in records if r.kind == "remote_map")
    return out


def attribute(records, windows) -> dict:
    """Per-phase counters from records and the phase windows ``[(phase, start_ns, end_ns), ...]``.

    A phase that occurs several times in a sample (rounds of a ping-pong) sums its windows.
    """
    by_phase = {name: [] for name, _, _ in windows}
    ordered = sorted(windows, key=lambda w: w[1])
    for r in records:
        for name, t0, t1 in ordered:
            if t0 <= r.start <= t1:
                by_phase[name].append(r)
                break
    return {name: summarize_records(rs) for name, rs in by_phase.items()}


class UmCounters:
    """The CUPTI collector: configured after cuInit, records kept until :meth:`drain`."""

    BUFFER_BYTES = 8 * 1024 * 1024

    def __init__(self, devices=(0,)):
        from cupti import cupti

        self._cupti = cupti
        self._lock = threading.Lock()
        self._records: list[Record] = []
        devices = [devices] if isinstance(devices, int) else list(devices)
        names = dict(KINDS)
        if len(devices) > 1:
            names.update(PEER_KINDS)
        enum = cupti.ActivityUnifiedMemoryCounterKind
        self._kind_names = {int(getattr(enum, k)): v for k, v in names.items() if hasattr(enum, k)}
        try:
            self._config = self._configure(devices, list(self._kind_names))
        except Exception:
            if len(self._kind_names) == len(KINDS):
                raise
            # a driver that counts no GPU-to-GPU migrations: count the rest
            self._kind_names = {k: v for k, v in self._kind_names.items() if v not in PEER_KINDS.values()}
            self._config = self._configure(devices, list(self._kind_names))
        self.devices = devices
        cupti.activity_register_callbacks(self._buffer_requested, self._buffer_completed)
        self.active = True
        self.counting = False
        self.enable()  # a failure here reaches start(), which reports it
        self.totals = summarize_records([])  # every record of the process, phases or not (for checks against nsys)

    def _configure(self, devices, kinds):
        """One counter per kind and GPU (CUPTI reads the array during the call only)."""
        cupti = self._cupti
        config = cupti.ActivityUnifiedMemoryCounterConfig(len(kinds) * len(devices))
        for i, (device, kind) in enumerate((d, k) for d in devices for k in kinds):
            config[i].scope = int(cupti.ActivityUnifiedMemoryCounterScope.PROCESS_SINGLE_DEVICE)
            config[i].device_id = device
            config[i].kind = kind
            config[i].enable = 1
        cupti.activity_configure_unified_memory_counter(config.ptr, len(kinds) * len(devices))
        return config

    def _buffer_requested(self):
        return self.BUFFER_BYTES, 0

    def _buffer_completed(self, activities):
        um_kind = self._cupti.ActivityKind.UNIFIED_MEMORY_COUNTER
        got = []
        for a in activities:  # copy out now: the records live in a buffer CUPTI reuses
            if a.kind == um_kind:
                kind = self._kind_names.get(int(a.counter_kind))
                if kind:
                    got.append(Record(kind, int(a.start), int(a.value)))
        with self._lock:
            self._records.extend(got)

    def now(self) -> int:
        """CUPTI's clock (ns), the one its records are stamped with."""
        return int(self._cupti.get_timestamp())

    def drain(self) -> list[Record]:
        """Every record delivered so far (flushing CUPTI's buffers first); the list is emptied."""
        self._cupti.activity_flush_all(1)
        with self._lock:
            out, self._records = self._records, []
        self._add_totals(out)
        return out

    def _add_totals(self, records) -> None:
        got = summarize_records(records)
        for k, v in got.items():
            if k.endswith("_min_bytes"):  # 0 means "none yet", not a size
                self.totals[k] = min((x for x in (self.totals.get(k, 0), v) if x), default=0)
            elif k.endswith("_max_bytes"):
                self.totals[k] = max(self.totals.get(k, 0), v)
            else:
                self.totals[k] = self.totals.get(k, 0) + v

    def enable(self) -> None:
        """Start counting. Counting slows faulting code down (on the H200, on-demand faults took
        about twice as long), so the runner counts in a separate sample after the timed ones."""
        if not self.counting:
            self._cupti.activity_enable(self._cupti.ActivityKind.UNIFIED_MEMORY_COUNTER)
            self.counting = True

    def disable(self) -> None:
        """Stop counting; what was recorded so far stays for :meth:`drain`."""
        if self.counting:
            self._cupti.activity_disable(self._cupti.ActivityKind.UNIFIED_MEMORY_COUNTER)
            self._cupti.activity_flush_all(1)
            self.counting = False

    def close(self) -> None:
        if not self.active:
            return
        self.active = False
        try:
            self.disable()
        except Exception:
            pass


def start(devices=(0,)) -> tuple[UmCounters | None, str]:
    """(collector or None, a line saying what was done) for the GPU indices ``devices`` (or one
    index). Call after cuInit, before any of those GPUs' contexts does work."""
    other = under_profiler()
    if other:
        return None, f"off: the process runs under {other}, which owns CUPTI (read its unified-memory reports instead)"
    if os.environ.get("UMPROF_NO_CUPTI"):
        return None, "off: UMPROF_NO_CUPTI is set"
    try:
        import cupti  # noqa: F401
    except ImportError:
        return None, "off: cupti-python is not installed (pip install 'umprof[gpu]' or pip install cupti-python)"
    try:
        return UmCounters(devices), "on (CUPTI)"
    except Exception as e:  # CUPTI refuses on some setups (MPS, no UM profiling on the device)
        return None, f"off: CUPTI refused the unified-memory counters ({type(e).__name__}: {e})"

"""The choices a PyTorch program's author makes about host memory, each priced from its trace.

From an :class:`~umprof.model.application.Application` (its copies with host memory, bytes, stream and call; its
kernels; its loop) and the trace's ranges (torch.profiler's CPU ops, or ``emit_nvtx``'s NVTX ranges: ``aten::
pin_memory``, ``aten::copy_``, ``enumerate(DataLoader)#...``), :func:`choices` prices what the program could do
instead:

* ``pin-once``: ``pin_memory()`` called on the same tensor every step (a host copy each time) against pinning it
  once; ``drop-pin``: against copying straight from pageable memory, where each step's data is new;
* ``dataloader-pin-thread``: ``DataLoader(pin_memory=True)`` copies every batch once more on the host (in its pin
  thread, or in the loop with num_workers=0); ``dataloader-unpinned``: ``pin_memory=False``; ``dataloader-pinned``:
  a loader of pageable batches made ``pin_memory=True``; ``dataset-pinned-once``: an in-memory dataset pinned once
  and sliced, instead of the loader;
* ``resident``: a dataset read in several epochs kept on the GPU where it fits, its batches indexed there: the
  uploads go, and the host's making of each batch (a DataLoader's and ``pin_memory()``'s time where torch.profiler
  shows them, conditional on the loader's per-sample work being done once or on the GPU; else a host copy of its
  bytes at least, the GPU's idle time in the loop at most, conditional on the batches being cut from the dataset on
  the host);
* ``offload-pinned``, ``offload-prefetched``: weights or activations moved to the GPU layer by layer, from pinned
  memory, and uploaded on a side stream while the previous layer computes;
* ``host-step-on-gpu``: tensors read back each step, worked on by torch ops on the host and sent up again (an
  optimizer offloaded to the host): the step done on the GPU, where they and their state stay; the round trip's
  copies and the host's step go, the step's work priced on the GPU at its memory's rate (conditional on the step
  being done on the GPU, which the trace cannot show);
* ``host-ops-on-gpu``: torch operators run on host tensors each step while the GPU sits idle (features computed
  from a batch before its upload, results converted after their read-back): the same operators run on GPU tensors,
  their inputs moved in their place; their host time goes, less the dispatch each still costs the host
  (:mod:`umprof.model.host_ops`), their work priced on the GPU at its memory's rate (conditional on their inputs
  crossing instead of their results, which the trace cannot show; the low end pays for up to SOURCE_BYTES times
  the bytes uploaded, and the read-backs as they are);
* ``pinned-out``: ``.cpu()`` into a fresh pageable tensor each call against a preallocated pinned one;
  ``pinned-in``: ``.to(device)`` from pageable memory against a preallocated pinned buffer;
* ``pinned-rounding``: the host memory the pinned caching allocator's power-of-two blocks cost.

Every price comes from the calibration's copy curves (pageable and pinned, each way), PyTorch's own host copy into
pinned memory (``TORCH_PIN_COPY_RATE``, on all its threads) and the trace's own times;
no saving exceeds the time the trace spent in what the change removes, and each has a band (``low_s``, ``high_s``).
Pinning data once costs a block of pinned memory and a host copy of each distinct tensor (the passes over the data,
``epochs``, where known, say how many are distinct). Data pinned where it is loaded is pinned outside the loop: that
cost is stated apart from the loop's saving, in the choice's ``why``, which is conditional on a run long enough to
repay it where the trace's own does not; ``pin-once``, whose tensors, pinned anew each step through the caching
allocator's reused blocks, would each need a block of their own, is offered only with the passes known.
A choice whose saving rests on what the trace cannot show (the same tensor pinned each step, the same data read
each epoch) is ``conditional``, with why.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from umprof.core.units import format_size, format_time
from umprof.model import host_ops
# PREDICTION_ERROR: the band of a saving priced by the curves alone; NOISE: a saving not worth a change
from umprof.model.advice.thresholds import NOISE, PREDICTION_ERROR
from umprof.model.application import Application
from umprof.model.intervals import covered, union, within
from umprof.model.frameworks import TORCH_D2H_SYNC, TORCH_OP, TORCH_SIDE_STREAM

PIN_OPS = ("aten::pin_memory", "aten::_pin_memory")  # pin_memory() as torch.profiler and emit_nvtx name it
LOADER_RANGE = "enumerate(DataLoader)"  # the range torch.profiler puts around each batch a DataLoader yields
RECURRING = 3  # calls made this many times are a habit of the loop, not a one-off
# the share of a GPU's memory a dataset may take to be kept there: the model's weights, activations and the
# caching allocator's reserve need the rest (the trace does not say how much is free)
RESIDENT_SHARE = 0.5
OFFLOAD_MIN_BYTES = 1 << 20  # a copy this large, one per layer, is a layer's weights, not a parameter
# an upload this large is a batch the host made; smaller ones are its scalars, ids and tokens, whose host-write price
# is the call's fixed cost, not a making of data
BATCH_MIN_BYTES = 1 << 20
OFFLOAD_LAYERS = 4  # this many such uploads with compute between them are layers (or batches) moved step by step
# past this share of such uploads with no compute before the next, they are sent back to back: a dataset, not layers
BACK_TO_BACK = 0.5
ROUNDING_SHARE = 0.10  # the pinned allocator's rounding is worth saying past this share of the pinned bytes
# how fast PyTorch copies a tensor into pinned memory on the host (``pin_memory()``, ``buf.copy_(x)``): on all its
# intra-op threads, from a block its caching host allocator reuses. pin_memory() of 8 MiB took a median 137-160 µs
# a step on two H100 machines and an H200's (16 cores; torch.profiler traces of 128 steps, 2026-12-06): 52-61 GB/s.
# The calibration's host write is one thread's; a program's own copy is priced at the faster of the two
TORCH_PIN_COPY_RATE = 50e9


@dataclass
class TorchChoice:
    """One alternative a PyTorch program has: its change in PyTorch's words, and what it saves."""

    code: str  # 'pin-once', 'resident', ... (the module's docstring)
    idiom: str  # the change, as PyTorch's users write it
    now_s: float  # what the trace spent in what the change touches
    predicted_s: float  # the same, after the change
    saving_s: float
    low_s: float  # the saving's band
    high_s: float
    conditional: bool = False  # the saving holds only where what ``why`` names holds
    why: str = ""
    host_bytes: int = 0  # host memory the choice costs (pinned-rounding)

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def choices(app: Application, ranges: pd.DataFrame, cal, epochs: int | None = None,
            free_bytes: int | None = None) -> list[TorchChoice]:
    """The priced alternatives of a PyTorch program (see the module's docstring) that save time or cost host memory,
    the surest saving first (the highest low end of its band, then the largest saving).
    ``ranges``: the trace's ranges (TraceTables.ranges); ``cal``: a :class:`~umprof.model.predict.Calibration`;
    ``epochs``: how many times the loop reads its data, where known (a nested loop's outer count); ``free_bytes``:
    the GPU memory free for a dataset, where known (else RESIDENT_SHARE of the GPU's)."""
    ctx = _Context(app, ranges)
    step = _host_step(ctx, cal, free_bytes)
    found = (_pin_per_call(ctx, cal, epochs) + _dataloader(ctx, cal, epochs) + _resident(ctx, cal, epochs, free_bytes)
             + _offload(ctx, cal, epochs) + step + (_host_ops_on_gpu(ctx, cal) if not step else [])
             + _pinned_out(ctx, cal) + _pinned_in(ctx, cal) + _rounding(ctx))
    return sorted([c for c in found if c.saving_s > 0 or c.host_bytes], key=lambda c: (-c.low_s, -c.saving_s))


class _Context:
    """What the prices share: the program's ranges on its thread that makes most CUDA calls (``main``) and on the
    others, and its copies."""

    def __init__(self, app: Application, ranges: pd.DataFrame):
        self.app = app
        self.own = ranges[ranges["pid"] == app.pid] if "pid" in ranges else ranges  # the process's ranges
        tids = app.copies["tid"].dropna()
        self.main = int(tids.mode().iloc[0]) if len(tids) else None

    @functools.cached_property
    def ranges(self) -> pd.DataFrame:
        """The process's ranges with their operator's name (``op``: emit_nvtx's ``aten::add, seq = 3`` as
        ``aten::add``), made once, where a price asks for it (a second to a million ranges)."""
        return self.own.assign(op=self.own["name"].astype(str).str.split(",", n=1).str[0].str.strip())

    def ops(self, names: tuple, main: bool | None = True) -> pd.DataFrame:
        """Ranges of the first of ``names`` that the trace holds, on the main thread (True), the others (False)
        or any (None), in time order."""
        for name in names:
            r = self.ranges[self.ranges["op"] == name]
            if main is not None and self.main is not None:
                r = r[(r["tid"] == self.main) == main]
            if len(r):
                return r.sort_values("start")
        return self.ranges.iloc[:0]

    def copies(self, direction: str, host_kind: str | None = None) -> pd.DataFrame:
        c = self.app.explicit_copies
        c = c[c["direction"] == direction]
        return c[c["host_kind"] == host_kind] if host_kind else c

    def waits_s(self, copies: pd.DataFrame) -> float:
        return float(self.app.copies_waits_s(copies).sum()) if len(copies) else 0.0


def _span_s(r: pd.DataFrame) -> float:
    return float((r["end"] - r["start"]).sum() / 1e9)


def _curve_s(cal, memory: str, direction: str, sizes) -> float:
    curve = cal.curve(memory, direction)
    return float(sum(curve(float(b)) for b in sizes))


def _torch_copy_s(cal, sizes) -> float:
    """PyTorch's host copies of tensors of these sizes into pinned memory: at TORCH_PIN_COPY_RATE, or the
    calibration's host write where that is faster (small tensors, whose threads' start outweighs their bytes)."""
    return min(_curve_s(cal, "pinned", "host_write", sizes), float(np.sum(sizes)) / TORCH_PIN_COPY_RATE)


def _choice(code, idiom, now, predicted, low, high, conditional=False, why="") -> TorchChoice:
    """A choice whose saving is bounded by what it touches (``now``) and never below nothing."""
    clip = lambda s: float(min(max(s, 0.0), now))  # noqa: E731
    saving = clip(now - predicted)
    return TorchChoice(code, idiom, now, now - saving, saving, clip(low), clip(high), conditional, why)


def _priced_choice(code, idiom, now, predicted, conditional=False, why="") -> TorchChoice:
    """A choice whose new time the calibration's curves alone price (``predicted``): its band the prediction's error
    either side of that price."""
    return _choice(code, idiom, now, predicted, now - predicted * (1 + PREDICTION_ERROR),
                   now - predicted * (1 - PREDICTION_ERROR), conditional, why)


PIN_ONCE = ("pin the tensor once, where it is made (`x = x.pin_memory()` before the loop), and copy it each step "
            "with `x.to(device, non_blocking=True)`: `pin_memory()` in the loop copies the whole tensor on the host "
            "every call")
DROP_PIN = ("drop the per-call `pin_memory()`: `x.to(device)` from the pageable tensor copies it once, where "
            "`x.pin_memory().to(device)` copies it twice (PyTorch's pinning guide measures the pair up to 2x slower)")


def _pin_per_call(ctx: _Context, cal, epochs: int | None) -> list[TorchChoice]:
    """``pin_memory()`` on the loop's thread every step (not a DataLoader's: ``_dataloader``): pinned once instead,
    or not at all."""
    pins = ctx.ops(PIN_OPS, main=True)
    pins = pins[~_within(pins, _loader_ranges(ctx))]
    if len(pins) < RECURRING:
        return []
    out = []
    after = _first_copy_after(ctx.copies("h2d", "pinned"), pins)
    if len(after):
        # pinning once copies each distinct tensor once into a block of its own, where pinning every step reuses the
        # caching allocator's blocks: without the passes over them known, every step's tensor is a new one
        distinct = after["bytes"].iloc[:max(1, len(after) // (epochs or 1))]
        once, copies_only = _pin_once_s(cal, distinct), _curve_s(cal, "pinned", "host_write", distinct)
        pin_s = _span_s(pins)
        out.append(_choice("pin-once", PIN_ONCE, pin_s, once, pin_s - once * (1 + PREDICTION_ERROR),
                           pin_s - copies_only, conditional=not epochs,
                           why="the same tensors pinned in each pass, which the trace cannot show"))
        now = pin_s + ctx.waits_s(after)
        out.append(_priced_choice("drop-pin", DROP_PIN, now, _curve_s(cal, "pageable", "h2d", after["bytes"])))
    return out


def _loader_ranges(ctx: _Context) -> pd.DataFrame:
    """The ranges torch.profiler puts around each batch a DataLoader yields, on the loop's thread where it has them."""
    r = ctx.own[ctx.own["name"].astype(str).str.startswith(LOADER_RANGE)]
    main = r[r["tid"] == ctx.main] if ctx.main is not None else r
    return main if len(main) else r


# the iterator a DataLoader with num_workers=0 makes: its batches are built in the loop's own thread
SINGLE_PROCESS_LOADER = "_SingleProcessDataLoaderIter"


def loader_in_loop(app: Application, ranges: pd.DataFrame | None) -> tuple[float, int]:
    """The time the loop's own thread spends building a DataLoader's batches (``num_workers=0``: the ranges
    torch.profiler names ``enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__``) within the loop, and how
    many batches."""
    if ranges is None or ranges.empty or app.loop is None:
        return 0.0, 0
    r = _loader_ranges(_Context(app, ranges))
    r = r[r["name"].astype(str).str.contains(SINGLE_PROCESS_LOADER, regex=False)]
    lo, hi = app.loop.span
    r = r[(r["start"] >= lo) & (r["start"] < hi)]
    return _span_s(r), len(r)


def _within(a: pd.DataFrame, b: pd.DataFrame) -> np.ndarray:
    """Which of ranges ``a`` lie within one of ranges ``b`` (on any thread)."""
    return within(*(r[k].to_numpy(np.int64) for r in (a, b) for k in ("start", "end")))


def _covered_ns(a: pd.DataFrame, b: pd.DataFrame) -> np.ndarray:
    """Nanoseconds of each of ranges ``a`` that fall within ranges ``b`` (on any thread)."""
    u = union(b["start"].to_numpy(np.int64), b["end"].to_numpy(np.int64))
    return covered(u, a["end"].to_numpy(np.int64)) - covered(u, a["start"].to_numpy(np.int64))


def _pin_once_s(cal, sizes) -> float:
    """Pinning tensors of these sizes once: a block of pinned memory each (cudaHostAlloc, as the calibration times
    cudaMallocHost) and the host's copy into it."""
    return _curve_s(cal, "pinned", "alloc", sizes) + _curve_s(cal, "pinned", "host_write", sizes)


def _first_copy_after(copies: pd.DataFrame, r: pd.DataFrame) -> pd.DataFrame:
    """The first of the copies whose call follows each range's end (the copy of what it pinned)."""
    if copies.empty:
        return copies
    c = copies.sort_values("call_start")
    at = np.searchsorted(c["call_start"].to_numpy(np.int64), r["end"].to_numpy(np.int64))
    return c.iloc[np.unique(at[at < len(c)])]


LOADER_PIN = ("`DataLoader(pin_memory=True)` copies every batch once more on the host (in its pin thread, or in the "
              "loop itself with num_workers=0); where the dataset is a tensor in memory, pin it once (`data = "
              "data.pin_memory()`) and slice the batches (`data[i:i + batch].to(device, non_blocking=True)`) instead")
LOADER_UNPINNED = ("`DataLoader(pin_memory=False)`: the loop no longer waits for the batches' extra host copy, and "
                   "their uploads come from pageable memory")
LOADER_PINNED = ("`DataLoader(pin_memory=True, num_workers=2)` or more: the batches are pinned in its pin thread, "
                 "beside the loop, and uploaded with `batch.to(device, non_blocking=True)`")
DATASET_PINNED = ("pin the in-memory dataset once (`data = data.pin_memory()`, before the epochs) and slice each "
                  "batch from it (`data[i:i + batch].to(device, non_blocking=True)`) instead of a DataLoader's "
                  "per-batch collation and copies")
IN_MEMORY = "a dataset held in memory as a tensor (a TensorDataset), which the trace cannot show"


def _dataloader(ctx: _Context, cal, epochs: int | None) -> list[TorchChoice]:
    """A DataLoader's batches: its pinning's extra host copy, the pinning turned off or on, and the dataset pinned
    once instead of the loader."""
    waits = _loader_ranges(ctx)
    if len(waits) < RECURRING:
        return []
    copies = _copies_within(ctx.copies("h2d"), waits, ctx.app)
    pageable = _curve_s(cal, "pageable", "h2d", copies["bytes"])
    pinned = _curve_s(cal, "pinned", "h2d", copies["bytes"])
    in_loop = ctx.ops(PIN_OPS, main=True)
    in_loop = in_loop[_within(in_loop, waits)]  # num_workers=0: the loop pins each batch itself
    beside = ctx.ops(PIN_OPS, main=False)
    out = []
    if len(in_loop) or len(beside):
        pin_s = _span_s(in_loop) + _span_s(beside)
        exposed = _span_s(in_loop) + _overlap_s(beside, waits)  # the loop waiting while a batch was pinned
        out.append(_choice("dataloader-pin-thread", LOADER_PIN, pin_s, pin_s - exposed, 0.0,
                           min(pin_s, _span_s(waits)), conditional=True, why=IN_MEMORY))
        now = exposed + ctx.waits_s(copies)
        out.append(_priced_choice("dataloader-unpinned", LOADER_UNPINNED, now, pageable))
    elif (copies["host_kind"] == "pageable").any():
        now = ctx.waits_s(copies)
        fill = _torch_copy_s(cal, copies["bytes"])  # the pin thread's copy, where the loop waits
        out.append(_choice("dataloader-pinned", LOADER_PINNED, now, pinned, now - pinned - fill,
                           now - pinned * (1 - PREDICTION_ERROR), conditional=True,
                           why="worker processes that fill the batches ahead of the loop; with num_workers=0 the loop "
                               "itself pins each batch, which the low end prices"))
    now = _span_s(waits) + ctx.waits_s(copies)
    once = _pin_once_s(cal, [int(copies["bytes"].sum()) // (epochs or 1)])  # the dataset: what an epoch copies
    repaid = _repaid(once, now - pinned)
    out.append(_choice("dataset-pinned-once", DATASET_PINNED, now, pinned, now - _span_s(waits) - pinned,
                       now - pinned * (1 - PREDICTION_ERROR), conditional=True,
                       why=IN_MEMORY + (f"; {repaid}" if repaid else "")))
    return out


def _overlap_s(a: pd.DataFrame, b: pd.DataFrame) -> float:
    """Seconds of ranges ``a`` that fall within ranges ``b``."""
    return float(_covered_ns(a, b).sum() / 1e9)


def _copies_within(copies: pd.DataFrame, r: pd.DataFrame, app: Application) -> pd.DataFrame:
    """The copies made in the loop that the ranges feed: all of the loop's where the trace has one (the batches a
    loader yields are copied after its range ends), else all."""
    if app.loop is None:
        return copies
    lo, hi = app.loop.span
    lo = min(lo, int(r["start"].min()))
    return copies[(copies["start"] >= lo) & (copies["start"] <= hi)]


RESIDENT = ("keep the dataset on the GPU: move it once, before the epochs (`data = data.to(device)`, {size}), and "
            "index the batches there (`batch = data[idx]`) instead of copying each batch every epoch (a DataLoader "
            "over it goes too)")


def _resident(ctx: _Context, cal, epochs: int | None, free_bytes: int | None) -> list[TorchChoice]:
    """A loop's uploads against the data uploaded once and kept on the GPU, where it fits (uploads made once, outside
    a loop, are already that); the batches then indexed there, without the host's making of each (``_batch_making``)."""
    loop = ctx.app.loop
    # its steps recur, not only its passes: two passes of many batches (the first pass may be read as setup) do
    if loop is None or (loop.inner or loop).iterations < RECURRING:
        return []
    copies = ctx.app.explicit_copies_within(loop.span)
    copies = copies[copies["direction"] == "h2d"]
    if len(copies) < RECURRING:
        return []
    total = int(copies["bytes"].sum())
    data = total // epochs if epochs else total  # unknown epochs: every byte read once, the least it saves
    room = free_bytes if free_bytes else int(ctx.app.memory_bytes * RESIDENT_SHARE)
    if not room or data > room:
        return []
    memory = "pinned" if (copies["host_kind"] == "pinned").all() else "pageable"  # the data as it is now
    made_low, made_high, made_why = _batch_making(ctx, cal, copies, memory)
    waits = ctx.waits_s(copies)
    now = waits + made_high
    once = cal.curve(memory, "h2d")(float(data))  # `data.to(device)`, once
    # what is left is the one upload: the batches' making priced at its high end, the GPU's idle time where it is
    # estimated, since a loop whose host makes each batch from data it holds has little else to do there (of 17
    # traces of such loops, H100 and H200, the saving measured came within 25% of that figure in 11, of the band's
    # middle in 5)
    predicted = once
    if epochs:
        return [_choice("resident", RESIDENT.format(size=format_size(data)), now, predicted,
                        waits + made_low - once * (1 + PREDICTION_ERROR),
                        waits + made_high - once * (1 - PREDICTION_ERROR), conditional=bool(made_why), why=made_why)]
    largest = cal.curve(memory, "h2d")(float(copies["bytes"].max()))
    why = ("the same data read in each epoch, which the trace cannot show: the saving is at least the uploads made "
           "once, more where the data repeats") + (f"; {made_why}" if made_why else "")
    return [_choice("resident", RESIDENT.format(size=f"at most {format_size(data)}"), now, predicted,
                    waits + made_low - once, waits + made_high - largest, conditional=True, why=why)]


# what keeping the data on the GPU asks of a DataLoader's per-batch work, whose time it removes
LOADER_WORK = ("its DataLoader's work on each sample (loading, decoding, transforms) done once, or on the GPU on "
               "each batch, which the trace cannot show")


def _batch_making(ctx: _Context, cal, copies: pd.DataFrame, memory: str) -> tuple[float, float, str]:
    """The host's making of the batches it uploads, which indexing a dataset kept on the GPU removes: (low, high,
    the condition it rests on). Where torch.profiler shows a DataLoader or ``pin_memory()`` calls, their ranges' time
    (measured: a batch indexed on the GPU is neither loaded nor pinned; a loader's, on condition that its per-sample
    work is done once or on the GPU); else, where each batch is cut from a dataset on the host (a collate, a numpy
    slice), at least a host copy of its bytes (read from its source and written, at the calibration's host rates)
    and at most the GPU's idle time in the loop (the host's own work there), both held to that idle time: the trace
    cannot say how the host makes them."""
    loader = _loader_ranges(ctx)
    pins = ctx.ops(PIN_OPS, main=None)
    pins = pins[~_within(pins, loader)]  # a loader's pinning is its own time already
    seen = [r for r in (loader, pins) if len(r) >= RECURRING]
    if seen:
        measured = sum(_span_s(r) for r in seen)
        return measured, measured, LOADER_WORK if len(loader) >= RECURRING else ""
    loop = ctx.app.loop
    idle = loop.iterations * loop.idle_s
    batches = copies[copies["bytes"] >= BATCH_MIN_BYTES]
    if idle <= 0 or len(batches) < RECURRING or loop.per_iteration["h2d_bytes"] < BATCH_MIN_BYTES:  # one a step
        return 0.0, 0.0, ""
    # a batch cut from data the host holds reads its source and writes the batch: a host copy's read and write
    sizes = batches["bytes"]
    copied = _curve_s(cal, memory, "host_read", sizes) + _curve_s(cal, memory, "host_write", sizes)
    return min(copied, idle), idle, ("each batch cut from it on the host (a DataLoader's collate, a numpy slice): "
                                     "indexing it on the GPU removes that host copy too")


# what is uploaded step by step in pinned memory: the same tensors pinned once, or each step's new one made in a
# reused pinned buffer (a batch gathered, cut or collated anew each step is no tensor to pin once: a pinned table's
# rows, indexed, come out in new pageable memory)
PIN_WHAT_IS_UPLOADED = ("where the same tensors go up again (offloaded weights, a layer at a time, or a dataset), pin "
                        "them once (`w_cpu = w_cpu.pin_memory()` when they are offloaded or loaded); where each step "
                        "makes a new one (rows gathered, a batch cut or collated), make it in a preallocated pinned "
                        "buffer (`torch.index_select(src, 0, idx, out=buf)`, `buf.copy_(batch)`), reused once its copy "
                        "is done (an event recorded after the copy)")
OFFLOAD_PINNED = ("keep what is uploaded step by step in pinned memory: " + PIN_WHAT_IS_UPLOADED
                  + "; and upload it with `.to(device, non_blocking=True)`")
OFFLOAD_PREFETCHED = ("keep what is uploaded step by step in pinned memory: " + PIN_WHAT_IS_UPLOADED + "; and "
                      + TORCH_SIDE_STREAM)


def _offload(ctx: _Context, cal, epochs: int | None) -> list[TorchChoice]:
    """Large uploads one per layer with compute between them: pinned, then prefetched a layer ahead."""
    layers = ctx.copies("h2d")
    layers = layers[layers["bytes"] >= OFFLOAD_MIN_BYTES].sort_values("start")
    if len(layers) < OFFLOAD_LAYERS:
        return []
    compute = _kernel_s_between(ctx.app.kernels, layers)
    if (compute <= 0).mean() > BACK_TO_BACK:  # a dataset, not layers
        return []
    now = ctx.waits_s(layers)
    pinned = np.array([cal.curve("pinned", "h2d")(float(b)) for b in layers["bytes"]])
    # layer i's upload runs beside layer i-1's compute
    exposed = float(pinned[0] + np.clip(pinned[1:] - compute[:-1], 0, None).sum())
    # pinning what is uploaded, once, where it is loaded: outside the loop, stated apart (``_repaid``)
    pageable = layers[layers["host_kind"] != "pinned"]
    once = _pin_once_s(cal, pageable["bytes"].iloc[:max(1, len(pageable) // (epochs or 1))]) if len(pageable) else 0.0
    why = _repaid(once, now - float(pinned.sum()))
    idiom = OFFLOAD_PREFETCHED if len(pageable) else TORCH_SIDE_STREAM  # already pinned: only the stream to add
    out = [_choice("offload-prefetched", idiom, now, exposed, now - pinned.sum(),
                   now - exposed * (1 - PREDICTION_ERROR), conditional=bool(why), why=why)]
    if len(pageable):
        out.append(_priced_choice("offload-pinned", OFFLOAD_PINNED, now, float(pinned.sum()), conditional=bool(why),
                                  why=why))
    return out


def _repaid(once: float, per_run: float) -> str:
    """What pinning the data once costs where it is loaded (outside the loop, so apart from the loop's saving) and
    how long a run repays it; '' where the trace's own run repays it or it costs nothing."""
    if once <= 0 or once <= per_run:
        return ""
    runs = once / per_run if per_run > 0 else math.inf
    return (f"pinning the data once costs {format_time(once)}, once (where it is loaded, outside the loop); a run "
            f"{runs:.1f}x as long as the trace's repays it")


def _kernel_s_between(kernels: pd.DataFrame, copies: pd.DataFrame) -> np.ndarray:
    """Kernel seconds from each copy's end to the next copy's start (after the last: to the last kernel's end)."""
    k = union(kernels["start"].to_numpy(np.int64), kernels["end"].to_numpy(np.int64))
    ends = copies["end"].to_numpy(np.int64)
    nexts = np.append(copies["start"].to_numpy(np.int64)[1:], max(int(kernels["end"].max()) if len(kernels) else 0,
                                                                  int(ends[-1])))
    return (covered(k, np.maximum(nexts, ends)) - covered(k, ends)) / 1e9


# the ops that move a tensor between host and GPU (the copies' own host time), not work on it
COPY_OPS = ("aten::to", "aten::_to_copy", "aten::copy_", "aten::_copy_from", "aten::_copy_from_and_resize")
# past this share of the GPU's idle time between the read-backs and the uploads that follow, the host spends it in
# torch ops on host tensors: a step of torch's that runs on the GPU as written (an optimizer's), not the host's own
# making of new data (numpy, decoding), which no GPU op replaces
HOST_STEP_SHARE = 0.5
HOST_STEP = ("do the host's step on the GPU: keep the tensors it reads back each step, and the step's state, on the "
             "GPU (an optimizer built over the GPU's parameters, `torch.optim.Adam(model.parameters())`, not over "
             "host copies of them), so that nothing crosses each step ({size} a step kept there)")


def _host_step(ctx: _Context, cal, free_bytes: int | None) -> list[TorchChoice]:
    """Tensors of 1 MiB or more read back each step and sent up again (the uploads of the sizes read back), with
    torch ops on the host filling most of the GPU's idle time between (``HOST_STEP_SHARE``): the step done on the GPU.
    The round trip's copies and the host's step go; the step's work is priced on the GPU at its memory's theoretical
    rate against the host's write rate. Conditional: the trace cannot show that the step can run there."""
    loop = ctx.app.loop
    if loop is None or loop.iterations < RECURRING:
        return []
    hi = loop.span[1]
    c = ctx.app.explicit_copies_within(loop.span)
    back = c[(c["direction"] == "d2h") & (c["bytes"] >= BATCH_MIN_BYTES)].sort_values("start")
    up = _uploads_of_read_back(ctx, back, host_kind=None) if len(back) else back
    up = up[up["start"] <= hi]
    per_step = int(back["bytes"].sum()) // loop.iterations
    room = free_bytes if free_bytes else int(ctx.app.memory_bytes * RESIDENT_SHARE)
    if len(back) < RECURRING or len(up) < RECURRING or not room or per_step > room:
        return []
    step_s, ops_s = _host_step_s(ctx, c, back, up)
    if step_s <= 0 or ops_s < HOST_STEP_SHARE * step_s:
        return []
    copies_s = ctx.waits_s(back) + ctx.waits_s(up)
    rate = float(cal.device.get("dram_bytes_per_s") or 0.0)
    host_rate = float(back["bytes"].sum()) / max(_curve_s(cal, "pageable", "host_write", back["bytes"]), 1e-12)
    on_gpu = step_s * host_rate / rate if rate > 0 else step_s  # memory-bound work at the GPU's memory's rate
    now = copies_s + step_s
    why = (f"the host's step ({format_time(step_s / loop.iterations)} a step with the GPU idle between reading the "
           "tensors back and sending them up, most of it in torch ops on host tensors) done on the GPU, which the "
           "trace cannot show")
    return [_choice("host-step-on-gpu", HOST_STEP.format(size=format_size(per_step)), now, on_gpu,
                    copies_s - on_gpu * (1 + PREDICTION_ERROR), now - on_gpu * (1 - PREDICTION_ERROR),
                    conditional=True, why=why)]


def _host_step_s(ctx: _Context, copies: pd.DataFrame, back: pd.DataFrame, up: pd.DataFrame) -> tuple[float, float]:
    """The GPU's idle time from each read-back's end to the next upload's start (the host's step), and the time torch's
    operators other than copies fill on the main thread in those stretches."""
    ends = back["end"].to_numpy(np.int64)
    starts = up["start"].to_numpy(np.int64)
    nxt = np.searchsorted(starts, ends, side="left")
    has = nxt < len(starts)
    us, ue, _ = union(ends[has], starts[nxt[has]])
    gaps = pd.DataFrame({"start": us, "end": ue})
    gap_s = float((ue - us).sum()) / 1e9
    idle_s = gap_s - _overlap_s(gaps, pd.concat([ctx.app.kernels[["start", "end"]], copies[["start", "end"]]]))
    # torch's own operators only (a user's annotation or a profiler step can span any host work)
    ops = ctx.ranges[ctx.ranges["op"].str.startswith(TORCH_OP) & ~ctx.ranges["op"].isin(COPY_OPS)]
    if ctx.main is not None:
        ops = ops[ops["tid"] == ctx.main]
    return max(0.0, idle_s), min(_overlap_s(gaps, ops), gap_s)


# what the operators a step runs on host tensors before an upload may read, a multiple of what they write (a log-mel
# spectrogram's waveform is 2.5 times its features, an image 1-4 times a crop of it): run on the GPU, their inputs
# cross instead of their results, and the low end of their saving pays for the loop's uploads this many times over.
# Operators on what a step reads back (a conversion to 8 bits, an argmax, a denormalisation) write no more than they
# read: run on the GPU before the read-back, it carries their results, no more than it carries now
SOURCE_BYTES = 4
HOST_OPS = ("run the torch operators that the host applies to each step's tensors ({names}) on the GPU: move their "
            "inputs there first (`x = x.to(device, non_blocking=True)`) and apply the same operators to the CUDA "
            "tensors; where they convert results read back, apply them before the read-back (`y.clamp(...).to("
            "torch.uint8).cpu()`), so that the GPU does the work and the host only issues it")


def _host_ops_on_gpu(ctx: _Context, cal) -> list[TorchChoice]:
    """Torch operators on host tensors while the GPU sat idle, each step (:mod:`umprof.model.host_ops`): run on the
    GPU. A DataLoader's own operators are left to its choices."""
    loop = ctx.app.loop
    if loop is None or loop.iterations < RECURRING:
        return []
    h = host_ops.host_ops(ctx.app, ctx.ranges, ctx.main, exclude=_loader_ranges(ctx))
    copies = ctx.app.explicit_copies_within(loop.span)
    if h.outermost < RECURRING or h.saving_s <= 0 or len(copies) < RECURRING or loop.idle_s <= 0:
        return []
    # no more than the GPU's idle time over the loop's steps: the loop runs no faster than its GPU's work
    saving = min(h.saving_s, loop.iterations * loop.idle_s)
    if saving < NOISE * (loop.span[1] - loop.span[0]) / 1e9:  # less is not worth a change
        return []
    rate = float(cal.device.get("dram_bytes_per_s") or 0.0)
    host_rate = float(copies["bytes"].sum()) / max(_curve_s(cal, "pageable", "host_write", copies["bytes"]), 1e-12)
    on_gpu = saving * host_rate / rate if rate > 0 else saving  # memory-bound work at the GPU's memory's rate
    moved = (SOURCE_BYTES - 1) * ctx.waits_s(copies[copies["direction"] == "h2d"])
    steps = loop.iterations
    why = (f"{h.count / steps:.0f} torch operators a step on host tensors ({format_time(h.idle_s / steps)} a step "
           f"while the GPU is idle; an operator run on the GPU costs the host {format_time(h.dispatch_s)} as traced) "
           "run on the GPU, their inputs crossing instead of their results, which the trace cannot show")
    idiom = HOST_OPS.format(names=", ".join(f"`{n}`" for n in h.names))
    return [_choice("host-ops-on-gpu", idiom, h.idle_s, h.idle_s - saving + on_gpu,
                    saving - on_gpu * (1 + PREDICTION_ERROR) - moved, saving - on_gpu * (1 - PREDICTION_ERROR),
                    conditional=True, why=why)]


PINNED_OUT = ("copy results back into a preallocated pinned tensor, not `.cpu()` into a fresh pageable one each "
              "call: `out = torch.empty(shape, dtype=dtype, pin_memory=True)` once, then `out.copy_(y, "
              "non_blocking=True)`; " + TORCH_D2H_SYNC)
PINNED_IN = ("copy inputs through a preallocated pinned buffer: `buf = torch.empty(shape, dtype=dtype, "
             "pin_memory=True)` once, then `buf.copy_(torch.from_numpy(frame))` and `buf.to(device, "
             "non_blocking=True)` (or build each input in `buf.numpy()` directly, which saves the host copy too)")


PINNED_BACK_UP = ("; and upload the tensors of those sizes through preallocated pinned tensors too (the ones read "
                  "back, where the same data goes up again: `out.to(device, non_blocking=True)`)")


def _pinned_out(ctx: _Context, cal) -> list[TorchChoice]:
    """Copies back to pageable memory (``.cpu()``) against a preallocated pinned tensor; with the uploads from
    pageable memory of the sizes read back (``_uploads_of_read_back``), which the same pinned tensors serve."""
    back = ctx.copies("d2h", "pageable")
    if len(back) < RECURRING:
        return []
    up = _uploads_of_read_back(ctx, back)
    now = ctx.waits_s(back) + ctx.waits_s(up)
    pinned = _curve_s(cal, "pinned", "d2h", back["bytes"]) + _curve_s(cal, "pinned", "h2d", up["bytes"])
    return [_priced_choice("pinned-out", PINNED_OUT + (PINNED_BACK_UP if len(up) else ""), now, pinned)]


def _uploads_of_read_back(ctx: _Context, back: pd.DataFrame, host_kind: str | None = "pageable") -> pd.DataFrame:
    """The uploads from ``host_kind`` memory (any, where None), after the first read-back, of the sizes read back, no
    more of each size than were read back: tensors moved out and in again (an offload of activations, a result fed
    back), or a request's input beside its output of the same shape; a pinned tensor of that size serves either."""
    up = ctx.copies("h2d", host_kind)
    up = up[(up["start"] > back["start"].min()) & up["bytes"].isin(back["bytes"].unique())].sort_values("start")
    if up.empty:
        return up
    read = back["bytes"].value_counts()
    return up[up.groupby("bytes").cumcount().to_numpy() < up["bytes"].map(read).to_numpy()]


def _pinned_in(ctx: _Context, cal) -> list[TorchChoice]:
    """Uploads from pageable memory against a preallocated pinned buffer: its host copy the low end, the input
    built in the buffer the high one."""
    up = ctx.copies("h2d", "pageable")
    if len(up) < RECURRING:
        return []
    now, pinned = ctx.waits_s(up), _curve_s(cal, "pinned", "h2d", up["bytes"])
    fill = _torch_copy_s(cal, up["bytes"])
    return [_choice("pinned-in", PINNED_IN, now, pinned + fill, now - pinned - fill,
                    now - pinned * (1 - PREDICTION_ERROR))]


ROUNDING = ("PyTorch's pinned memory comes from its caching host allocator, which rounds each block up to a power "
            "of two: pinned tensors of {sizes} take {extra} more host memory than their data (one of each size); "
            "sizes just under a power of two waste least")


def _rounding(ctx: _Context) -> list[TorchChoice]:
    """The host memory the pinned allocator's power-of-two blocks add to the program's pinned tensors."""
    pinned = ctx.app.explicit_copies
    pinned = pinned[pinned["host_kind"] == "pinned"]
    sizes = np.unique(pinned["bytes"].dropna().to_numpy(np.int64))
    sizes = sizes[sizes > 0]
    if not len(sizes):
        return []
    blocks = 2 ** np.ceil(np.log2(sizes)).astype(np.int64)
    extra = int((blocks - sizes).sum())
    if extra < ROUNDING_SHARE * sizes.sum():
        return []
    shown = ", ".join(format_size(int(s)) for s in sizes[:3]) + (", ..." if len(sizes) > 3 else "")
    text = ROUNDING.format(sizes=shown, extra=format_size(extra))
    return [TorchChoice("pinned-rounding", text, 0.0, 0.0, 0.0, 0.0, 0.0, why=f"{len(sizes)} sizes of pinned "
                        f"copies; blocks of {format_size(int(blocks.sum()))} for {format_size(int(sizes.sum()))}",
                        host_bytes=extra)]


def describe(c: TorchChoice) -> str:
    """One line: the change, its saving and band, and its condition."""
    cond = f" (if {c.why})" if c.conditional else ""
    if c.host_bytes:
        return f"{c.code}: {c.idiom}"
    return (f"{c.code}: saves {format_time(c.saving_s)} of {format_time(c.now_s)} "
            f"({format_time(c.low_s)}-{format_time(c.high_s)}){cond}: {c.idiom}")

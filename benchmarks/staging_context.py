"""The staging ring's rate by what ran on the host just before it: back to back (as the staging
scenario runs it), after the main thread wrote the whole buffer (as a loop's host write does),
and after the copy threads idled 50 ms; beside the host's parallel copy into pinned memory in the
same contexts (the ring's host-side ceiling there) and the pinned link. ``--timeline`` shows where one
H2D transfer's time goes instead, chunk by chunk (after a host write, as in the loop). ``--small`` times
small transfers in a loop (the host writes the buffer, then it goes to the GPU) on the calling thread
and on the ring's threads, beside cudaMemcpy from the same pageable memory: where INLINE_BYTES lies.
``--parts`` times parts of a 1 GiB buffer sent through the ring built for the whole buffer, beside a ring
built for the part's size and cudaMemcpy.

    python3 benchmarks/staging_context.py [--bytes 256MiB --bytes 1GiB] [--reps 9] [--json OUT]
    python3 benchmarks/staging_context.py --timeline [--bytes 256MiB] [--threads N] [--json OUT]
    python3 benchmarks/staging_context.py --small [--bytes 1MiB ...] [--reps 9] [--json OUT]
    python3 benchmarks/staging_context.py --parts [--bytes 6MiB ...] [--reps 9] [--json OUT]

Each figure is bytes / the median of ``reps`` transfers, each timed by the host's clock around
the whole transfer (the ring returns once its last DMA has landed).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from contextlib import contextmanager

import numpy as np

from umprof.core.units import parse_size

CONTEXTS = ("back-to-back", "after-host-write", "after-idle")


def _prepare(context: str, host: np.ndarray, base: np.ndarray, k: int) -> None:
    if context == "after-host-write":
        np.add(base, np.uint32(k), out=host.view(np.uint32))  # the loop's host write: one thread, every word
    elif context == "after-idle":
        time.sleep(0.05)


@contextmanager
def _rig(nbytes: int, threads: int = 0, ring: bool = True):
    """A session, the application's pageable buffer (``host``, its words ``base`` + k after the k-th host
    write), a device buffer and, with ``ring``, the ring (``threads``: 0 for the rule's), freed after."""
    from types import SimpleNamespace

    from umprof.measure.gpu import open_session
    from umprof.measure.staging_ring import StagingRing
    from umprof.measure.strategies import aligned_empty

    s = open_session()
    handles = []
    try:
        rig = SimpleNamespace(session=s, cuda=s.cuda, host=aligned_empty(nbytes),
                              base=np.arange(nbytes // 4, dtype=np.uint32))
        rig.host.view(np.uint32)[:] = rig.base
        rig.dev = s.cuda.mem_alloc(nbytes)
        handles.append(rig.dev.free)
        rig.ring = StagingRing(s, nbytes, threads=threads) if ring else None
        if rig.ring is not None:
            handles.append(rig.ring.close)
        yield rig
    finally:
        for free in reversed(handles):
            free()
        s.close()


def _about(rig, reps: int) -> dict:
    """What every row or timeline says of where and how it was measured."""
    ring = rig.ring
    return dict(threads=ring.threads, chunk=ring.chunk, slots=ring.slots, gpu=rig.session.device.name(), reps=reps,
                date=time.strftime("%Y-%m-%d", time.gmtime()))


def measure(nbytes: int, reps: int) -> list[dict]:
    """Rows of (what, direction, context, GB/s) for one size."""
    rows = []
    clock = time.perf_counter
    with _rig(nbytes) as rig:
        cuda, host, dev, ring = rig.cuda, rig.host, rig.dev, rig.ring
        pinned = cuda.pagelocked_empty(nbytes, np.uint8)
        try:
            def timed(fn, context):
                times = []
                for k in range(reps + 1):  # the first is a warm-up
                    _prepare(context, host, rig.base, k)
                    t = clock()
                    fn()
                    if k:
                        times.append(clock() - t)
                return nbytes / statistics.median(times) / 1e9

            def link_h2d():
                cuda.memcpy_htod_async(dev, pinned)
                cuda.Context.synchronize()

            for context in CONTEXTS:
                rows.append(dict(what="ring", direction="h2d", context=context,
                                 GBps=timed(lambda: ring.h2d(int(dev), host), context)))
                rows.append(dict(what="pinned", direction="h2d", context=context, GBps=timed(link_h2d, context)))
                rows.append(dict(what="ring", direction="d2h", context=context,
                                 GBps=timed(lambda: ring.d2h(host, int(dev)), context)))
                rows.append(dict(what="host-copy", direction="h2d", context=context,
                                 GBps=timed(lambda: ring.host_copy(pinned, host), context)))
                rows.append(dict(what="host-copy", direction="d2h", context=context,
                                 GBps=timed(lambda: ring.host_copy(host, pinned), context)))
            # the ring's data arrived whole: the device holds what the host last sent
            got = np.empty(nbytes, np.uint8)
            ring.h2d(int(dev), host)
            cuda.memcpy_dtoh(got, dev)
            if not np.array_equal(got, host):
                raise SystemExit(f"staging_context: the ring's H2D copy of {nbytes} bytes differs from its source")
        finally:
            pinned.base.free()
        about = _about(rig, reps)
    return [dict(r, bytes=nbytes, **about) for r in rows]


SMALL = ("1MiB", "2MiB", "4MiB", "8MiB")
SMALL_METHODS = ("ring, calling thread", "ring, its threads", "cudaMemcpy")


def _send_loop(rig, part: int, send, reps: int) -> tuple[float, float]:
    """Median ms of the host's write of the first ``part`` bytes and of ``send()`` after it, over ``reps``
    steps after one untimed; the device is then checked to hold those bytes."""
    clock, writes, sends = time.perf_counter, [], []
    host = rig.host[:part]
    for k in range(reps + 1):
        t0 = clock()
        _prepare("after-host-write", host, rig.base[:part // 4], k)
        t1 = clock()
        send()
        t2 = clock()
        if k:
            writes.append(t1 - t0)
            sends.append(t2 - t1)
    got = np.empty(part, np.uint8)
    rig.cuda.memcpy_dtoh(got, rig.dev)
    if not np.array_equal(got, host):
        raise SystemExit(f"staging_context: a loop of {part}-byte transfers left the device unlike its source")
    return statistics.median(writes) * 1e3, statistics.median(sends) * 1e3


def _row(rig, method: str, nbytes: int, threads: int, reps: int, write_ms: float, h2d_ms: float, **more) -> dict:
    return dict(method=method, bytes=nbytes, threads=threads, host_write_ms=write_ms, h2d_ms=h2d_ms, **more,
                gpu=rig.session.device.name(), reps=reps, date=time.strftime("%Y-%m-%d", time.gmtime()))


def small(nbytes: int, reps: int) -> list[dict]:
    """Rows of (method, host write ms, H2D ms) for one small size: each step the host writes the whole
    buffer (one thread, as a loop does) and it goes to the GPU, the medians of ``reps`` steps after one
    untimed. The device is checked to hold the last step's bytes."""
    from umprof.measure.staging_ring import StagingRing

    rows = []
    with _rig(nbytes, ring=False) as rig:  # its rings are its own, one a method
        cuda, host, dev = rig.cuda, rig.host, rig.dev
        for method in SMALL_METHODS:
            ring = None if method == "cudaMemcpy" else \
                StagingRing(rig.session, nbytes, inline_bytes=nbytes if method.endswith("calling thread") else 0)
            try:
                send = (lambda: cuda.memcpy_htod(dev, host)) if ring is None else (lambda: ring.h2d(int(dev), host))
                times = _send_loop(rig, nbytes, send, reps)
                threads = 0 if ring is None else ring.threads
            finally:
                if ring is not None:
                    ring.close()
            rows.append(_row(rig, method, nbytes, threads, reps, *times))
    return rows


PARTS = ("1536KiB", "2MiB", "4MiB", "6MiB", "8MiB", "16MiB")
PARTS_METHODS = ("the whole buffer's ring", "a ring of the part's size", "cudaMemcpy")


def parts(ring_bytes: int, sizes: list[int], reps: int) -> list[dict]:
    """Rows of (method, host write ms, H2D ms) for parts of a buffer that a ring was built for
    (``ring_bytes``), as a loop that sends part of its buffer does: each step the host writes the part and
    it goes to the GPU. Methods: the whole buffer's ring (what the staged plan does), a ring built for
    the part (as many threads as its 1 MiB chunks, up to the rule's), and cudaMemcpy from the same
    pageable memory."""
    from umprof.measure.staging_ring import StagingRing

    rows = []
    with _rig(ring_bytes) as rig:
        big, dev = rig.ring, rig.dev
        for part in sizes:
            host = rig.host[:part]
            for method in PARTS_METHODS:
                if method == "cudaMemcpy":
                    times = _send_loop(rig, part, lambda: rig.cuda.memcpy_htod(dev, host), reps)
                    rows.append(_row(rig, method, part, 0, reps, *times, ring_bytes=0, chunk=0, on_caller=False))
                    continue
                ring = StagingRing(rig.session, part) if method == "a ring of the part's size" else big
                try:
                    times = _send_loop(rig, part, lambda: ring.h2d(int(dev), host), reps)
                finally:
                    if ring is not big:
                        ring.close()
                chunk, on_caller = ring.shape.transfer(part)
                rows.append(_row(rig, method, part, ring.threads, reps, *times, ring_bytes=ring.shape.pinned_bytes,
                                 chunk=chunk, on_caller=on_caller))
    return rows


def small_table(rows: list[dict]) -> str:
    """The small transfers as markdown: a row per size and method."""
    lines = ["| bytes | method | threads | host write ms | H2D ms | both ms |", "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['bytes'] / 2**20:g} MiB | {r['method']} | {r['threads']} | {r['host_write_ms']:.3f} | "
                     f"{r['h2d_ms']:.3f} | {r['host_write_ms'] + r['h2d_ms']:.3f} |")
    return "\n".join(lines)


def timeline(nbytes: int, reps: int, threads: int = 0) -> list[dict]:
    """Where one ring H2D transfer's time goes (the median transfer of ``reps``, after a host
    write): per chunk its bytes, when its host copy began and ended on which thread and when its DMA
    was issued (host clock, from the transfer's start), as the engine logs them; the transfer ends
    when its last DMA has landed. Logging costs the engine two clock reads a chunk."""
    clock = time.perf_counter
    runs = []
    with _rig(nbytes, threads) as rig:
        host, dev, ring = rig.host, rig.dev, rig.ring
        for k in range(reps + 1):
            _prepare("after-host-write", host, rig.base, k)
            t0 = clock()
            log = ring.h2d(int(dev), host, log=True)
            total = clock() - t0
            if k:
                runs.append((total, log))
        runs.sort(key=lambda r: r[0])
        total, log = runs[len(runs) // 2]
        out = []
        for i, (start, end, issued, thread) in enumerate(log):
            out.append({"offset": i * ring.chunk, "bytes": min(ring.chunk, nbytes - i * ring.chunk),
                        "copy_start": float(start), "copy_end": float(end), "dma_issued": float(issued),
                        "thread": int(thread)})
        return [dict(_about(rig, reps), total_s=total, bytes=nbytes, chunks=out)]


def timeline_summary(t: dict) -> str:
    """One transfer's timeline in a sentence: its rate, how busy the copy threads were, when the first
    copies began, when the last copy ended and when the transfer did (its last DMA landed)."""
    ch, ms = t["chunks"], 1e3
    busy = sum(c["copy_end"] - c["copy_start"] for c in ch)
    return (f"one {t['bytes'] // 2**20} MiB H2D after a host write, {t['threads']} threads: {t['total_s'] * ms:.2f} ms, "
            f"{len(ch)} chunks, {t['bytes'] / t['total_s'] / 1e9:.1f} GB/s; the first copy began "
            f"{min(c['copy_start'] for c in ch) * ms:.2f} ms in and the {t['threads']}th "
            f"{sorted(c['copy_start'] for c in ch)[min(len(ch), t['threads']) - 1] * ms:.2f} ms in; copy threads busy "
            f"{busy / (t['threads'] * t['total_s']):.0%}; last copy done {max(c['copy_end'] for c in ch) * ms:.2f} ms, "
            f"the last DMA landed by {t['total_s'] * ms:.2f} ms")


def timeline_table(t: dict) -> str:
    """Chunk by chunk, as markdown."""
    ms = 1e3
    lines = ["| chunk | KiB | thread | copy start | copy end | DMA issued |", "|---|---|---|---|---|---|"]
    for i, c in enumerate(t["chunks"]):
        lines.append(f"| {i} | {c['bytes'] // 1024} | {c['thread']} | {c['copy_start'] * ms:.3f} | {c['copy_end'] * ms:.3f} | "
                     f"{c['dma_issued'] * ms:.3f} |")
    return "\n".join(lines)


def markdown(rows: list[dict]) -> str:
    """The rates as a table: a row per (size, what, direction), a column per context (GB/s)."""
    lines = ["| bytes | what | direction | " + " | ".join(CONTEXTS) + " |", "|---|---|---|" + "---|" * len(CONTEXTS)]
    for b, what, d in sorted({(r["bytes"], r["what"], r["direction"]) for r in rows}):
        got = {r["context"]: r["GBps"] for r in rows if (r["bytes"], r["what"], r["direction"]) == (b, what, d)}
        lines.append(f"| {b // 2**20} MiB | {what} | {d} | " + " | ".join(f"{got[c]:.1f}" if c in got else "" for c in CONTEXTS)
                     + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bytes", action="append", help="transfer size (repeatable; default 256MiB and 1GiB, with "
                                                      "--small 1, 2, 4 and 8 MiB, with --parts 1.5, 2, 4, 6, 8 and 16 MiB)")
    ap.add_argument("--reps", type=int, default=9, help="transfers a figure, after one untimed (default 9)")
    ap.add_argument("--json", help="write the rows here")
    ap.add_argument("--threads", type=int, default=0, help="the timeline's ring threads (0: the rule's)")
    mode = ap.add_mutually_exclusive_group()  # one measurement a run
    mode.add_argument("--timeline", action="store_true",
                      help="only where one H2D transfer's time goes, chunk by chunk")
    mode.add_argument("--small", action="store_true", help="only small transfers in a loop, on the calling thread "
                                                         "and on the ring's threads (default sizes 1-8 MiB)")
    mode.add_argument("--parts", action="store_true", help="only parts of a 1 GiB buffer sent in a loop through a ring "
                                                         "built for it (default parts 1.5-16 MiB)")
    a = ap.parse_args(argv)
    if a.small or a.parts:
        sizes = [parse_size(size) for size in a.bytes or (SMALL if a.small else PARTS)]
        got = [r for n in sizes for r in small(n, a.reps)] if a.small else parts(2**30, sizes, a.reps)
        if a.json:
            with open(a.json, "w") as f:
                json.dump(got, f, indent=1)
        print(small_table(got))
        return 0
    if a.timeline:
        got = [t for size in a.bytes or ["256MiB"] for t in timeline(parse_size(size), a.reps, a.threads)]
        if a.json:  # before printing: a reader that stops early (| head) leaves the file whole
            with open(a.json, "w") as f:
                json.dump(got, f, indent=1)
        for t in got:
            print(timeline_summary(t))
            print(timeline_table(t))
        return 0
    rows = []
    for size in a.bytes or ["256MiB", "1GiB"]:
        rows += measure(parse_size(size), a.reps)
    print(markdown(rows))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

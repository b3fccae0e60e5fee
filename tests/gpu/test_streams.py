"""The streams family on the GPU (seed 003, nvbandwidth's copies): every case checked, and
what physics guarantees: no overlap on one stream, overlap on several, both directions at
once beat either alone, a staging ring beats cudaMemcpy from pageable memory."""

import statistics

from tests.gpu.helpers import assert_faster, assert_higher, by, run_cases

MiB = 1024**2


def _ok(rows):
    bad = [(r["case"], r["reason"]) for r in rows if r["status"] != "ok"]
    assert not bad, bad


def _one(rows, phase, **axes):
    got = by(rows, phase=phase, **{f"axis.{k}": v for k, v in axes.items()})
    assert len(got) == 1, (phase, axes, [r["case"] for r in rows])
    return got[0]


def test_overlap_under_every_strategy_is_checked(ctx_factory):
    rows = run_cases(ctx_factory, "overlap-strategies", bytes="64MiB", streams="1,4", compute="1.0")
    _ok(rows)
    assert len(by(rows, phase="total")) == 8
    for r in by(rows, phase="pipelined"):
        assert 0 < r["overlap_efficiency"] <= 1.05 and r["kernel_busy_s"] > 0


def test_one_stream_runs_serially_and_several_overlap(ctx_factory):
    """Copy and kernel times equal (compute = 1): one stream does one thing at a time; four
    streams keep the three engines busy together."""
    rows = run_cases(ctx_factory, "overlap", chunk="4MiB", streams="1,4", compute="1.0")
    _ok(rows)
    one, four = _one(rows, "pipelined", streams=1), _one(rows, "pipelined", streams=4)
    busy = one["h2d_busy_s"] + one["kernel_busy_s"] + one["d2h_busy_s"]
    assert one["time_median_s"] >= 0.9 * busy  # no overlap: the engines took turns
    assert one["speedup"] < 1.2
    assert_faster("overlap balanced: 4 streams vs 1 (wall)", four["time_median_s"], one["time_median_s"], 1.5)


def test_copy_bound_pipeline_runs_at_the_copy_engines_pace(ctx_factory):
    rows = run_cases(ctx_factory, "overlap", chunk="4MiB", streams="4", compute="0.1")
    _ok(rows)
    r = _one(rows, "pipelined", streams=4)
    copies = max(r["h2d_busy_s"], r["d2h_busy_s"])
    assert_faster("overlap copy-bound at 4 streams: wall vs 1.1 x max(h2d, d2h) busy", r["time_median_s"], 1.1 * copies)


def test_both_directions_at_once_beat_either_alone(ctx_factory):
    rows = run_cases(ctx_factory, "bidirectional", bytes="256MiB")
    _ok(rows)
    both = _one(rows, "both")
    for alone in ("h2d", "d2h"):
        assert_higher(f"bidirectional 256MiB: sum vs {alone} alone (rate)", both["both_bytes_per_s"],
                      _one(rows, alone)["bytes_per_s"])


def test_a_staging_ring_beats_cudamemcpy_from_pageable(ctx_factory):
    """Each method's figure is the median over three rounds, the two methods in turn (the second
    round in reverse order). The ring's H2D beats cudaMemcpy's (1.5-3.3x in every run); its D2H ends
    in host threads copying into pageable memory, whose rate moves from one allocation and one second
    to the next on the H100 and H200 machines of 16 cores, and only matches cudaMemcpy's: 0.93-1.86x over the runs of
    2026-11 (0.96x a single round on an H200, 0.93x the median of three on an H100), so it is held to
    no worse than 1.25x cudaMemcpy's time, not to an order the noise does not keep."""
    rounds = []
    for methods in ("pageable,pageable-staged,pinned,host-copy", "pageable-staged,pageable", "pageable,pageable-staged"):
        rows = run_cases(ctx_factory, "staging", method=methods, direction="h2d,d2h", bytes="256MiB")
        _ok(rows)
        rounds.append(rows)
    for d, factor in (("h2d", 1.0), ("d2h", 0.8)):
        plain = statistics.median(_one(r, d, method="pageable")["time_median_s"] for r in rounds)
        staged = statistics.median(_one(r, d, method="pageable-staged")["time_median_s"] for r in rounds)
        assert_faster(f"staging 256MiB {d}: ring vs cudaMemcpy from pageable (median of 3 rounds)", staged, plain,
                      factor)


def test_the_staging_ring_moves_every_byte_of_any_size_each_way(ctx_factory):
    """The ring's engine on sizes that are not whole slots: one moved inline (under 1 MiB), one of
    a few slots, one of more chunks than slots, with the rule's shape and with one thread and two
    slots; every destination byte is checked against the source (the op's verify)."""
    for ring in ({}, {"threads": "1", "slots": "2", "chunk": "1MiB"}):
        rows = run_cases(ctx_factory, "staging", method="pageable-staged", direction="h2d,d2h",
                         bytes="12KiB,3148KiB,97MiB", **ring)
        _ok(rows)
        assert len(by(rows, phase="total")) == 6


def test_latency_methods_are_checked_and_a_host_load_is_slower_than_a_device_one(ctx_factory):
    rows = run_cases(ctx_factory, "latency", bytes="4B,64KiB")
    _ok(rows)
    for r in by(rows, phase="latency"):
        assert 0 < r["time_median_s"] <= r["time_p99_s"]
    host = _one(rows, "latency", method="pointer-chase-host")
    device = _one(rows, "latency", method="pointer-chase-device")
    assert_faster("pointer chase: device vs host memory load", device["time_median_s"], host["time_median_s"], 1.2)

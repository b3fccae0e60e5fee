"""The application loop on the GPU (op `loop`): every strategy on a workload with every key set,
outputs checked exactly; read-only inputs under READ_MOSTLY; and what physics guarantees of
the steady state."""

import pytest

from tests.gpu.helpers import assert_faster, by, run_cases

EVERY = ("pageable,pinned,write-combined,zero-copy,mapped,managed,managed-prefetch,managed-advise-prefer-gpu,"
         "managed-advise-prefer-host,managed-advise-accessed-by-gpu,pageable-staged,pageable-registered,pinned-pipelined")


@pytest.mark.parametrize("pattern", ["streaming", "strided", "random", "warp-pages"])
def test_every_strategy_runs_a_partial_loop_checked(ctx_factory, pattern):
    rows = run_cases(ctx_factory, "calibration-loop-sizes", strategy=EVERY, bytes="2MiB", reuse="2", touched="0.5",
                     pattern=pattern, host_writes="0.3", gpu_writes="0.5", host_reads="0.7", iterations="4")
    totals = by(rows, phase="total")
    assert len(totals) == len(EVERY.split(","))
    chunked = by(totals, **{"axis.strategy": "pinned-pipelined"})
    if pattern == "random":  # a random pass reaches the whole buffer: no chunks to pipeline
        assert chunked[0]["status"] == "skipped" and "cannot be split into chunks" in chunked[0]["reason"]
        totals = [r for r in totals if r not in chunked]
    bad = [(r["case"], r["reason"]) for r in totals if r["status"] != "ok"]
    assert not bad
    for r in totals:  # by the host's clock, a run holds its first iteration and three steady ones
        assert r["wall_steady_s"] > 0 and r["wall_first_s"] > 0 and r["wall_steady_median_s"] > 0
        # whole = setup + 4 × the mean steady iteration: the wall readings are one sample's, so exactly
        assert r["wall_s"] == pytest.approx(r["wall_setup_s"] + 4 * r["wall_steady_s"], rel=1e-9)
        assert r["wall_s"] > 0.9 * (r["wall_first_s"] + 3 * r["wall_steady_s"])
    pinned = by(rows, **{"axis.strategy": "pinned"})
    assert {r["phase"] for r in pinned} >= {"alloc", "host_init", "first", "host_write", "h2d", "kernel", "d2h",
                                            "host_read", "free"}


def test_read_mostly_serves_a_read_only_input_and_refuses_writes(ctx_factory):
    rows = run_cases(ctx_factory, "calibration-loop-sizes", strategy="managed-advise-read-mostly", bytes="4MiB",
                     host_writes="0.1", gpu_writes="0.0,1.0", host_reads="1.0", iterations="3")
    st = {r["axis.gpu_writes"]: r for r in by(rows, phase="total")}
    assert st[0.0]["status"] == "ok", st[0.0]["reason"]
    assert st[1.0]["status"] == "skipped" and "READ_MOSTLY" in st[1.0]["reason"]


def test_managed_read_only_input_migrates_once_then_stays(ctx_factory):
    """On-demand pages migrate in the first iteration; a resident read-only input costs only passes after."""
    rows = run_cases(ctx_factory, "calibration-loop-sizes", strategy="managed", bytes="64MiB", host_writes="0",
                     gpu_writes="0", host_reads="0", iterations="4")
    (t,) = by(rows, phase="total")
    assert t["status"] == "ok", t["reason"]
    assert_faster("loop managed read-only: steady vs first iteration", t["wall_steady_s"], t["wall_first_s"], 3)


def test_pinned_steady_iteration_pays_the_copies_of_new_data(ctx_factory):
    rows = run_cases(ctx_factory, "calibration-loop-sizes", strategy="pinned", bytes="64MiB", host_writes="0,1",
                     gpu_writes="0", host_reads="0", iterations="4")
    steady = {r["axis.host_writes"]: r["wall_steady_s"] for r in by(rows, phase="total")}
    # 64 MiB over PCIe (~1.2 ms) and the host's write against a few passes
    assert_faster("loop pinned steady: no new data vs all new", steady[0.0], steady[1.0], 2)


def test_staged_and_registered_loops_copy_pageable_data_faster_than_cudamemcpy(ctx_factory):
    """pageable-staged (the loop's copies through umprof's staging ring) and pageable-registered
    (the same malloc'd buffer page-locked in place), checked like every loop; at 256 MiB of new data
    per iteration each one's H2D beats cudaMemcpy from pageable memory (the driver's own staging:
    8 GB/s against a ring near the host's parallel copy and a pinned link of 50+ GB/s on the H100
    and H200 machines of 16 cores, 2026-11). Their D2H is checked, not ordered: cudaMemcpy's own pageable D2H can come close."""
    rows = run_cases(ctx_factory, "calibration-loop-sizes", strategy="pageable,pageable-staged,pageable-registered",
                     bytes="256MiB", host_writes="1", gpu_writes="1", host_reads="1", iterations="3")
    totals = {r["axis.strategy"]: r for r in by(rows, phase="total")}
    assert all(r["status"] == "ok" for r in totals.values()), [(k, r["reason"]) for k, r in totals.items()]
    (plain,) = by(rows, phase="h2d", **{"axis.strategy": "pageable"})
    for strategy in ("pageable-staged", "pageable-registered"):
        (other,) = by(rows, phase="h2d", **{"axis.strategy": strategy})
        assert_faster(f"loop 256MiB h2d: {strategy} vs cudaMemcpy from pageable", other["time_median_s"],
                      plain["time_median_s"])


def test_copies_in_parts_are_checked_and_pay_each_call_s_latency(ctx_factory):
    """calibration-loop-copies: an iteration's copies made as 512 synchronous cudaMemcpy calls of 16 KiB,
    checked like every loop; the strategies that make no copies of their own run the same loop without
    parts. 512 calls cost several times one copy of all their bytes (each call waits for the GPU: a few
    microseconds, where 16 KiB cross the link in under one)."""
    rows = run_cases(ctx_factory, "calibration-loop-copies", strategy="pageable,pinned,mapped", copies="1,512",
                     iterations="3")
    totals = by(rows, phase="total")
    assert all(r["status"] == "ok" for r in totals), [(r["case"], r["reason"]) for r in totals]
    assert [r["axis.copies"] for r in by(totals, **{"axis.strategy": "mapped"})] == [1]  # one case: no parts
    for strategy in ("pageable", "pinned"):
        (one,) = by(rows, phase="h2d", **{"axis.strategy": strategy, "axis.copies": 1})
        (parts,) = by(rows, phase="h2d", **{"axis.strategy": strategy, "axis.copies": 512})
        assert_faster(f"loop 8MiB h2d {strategy}: one copy vs 512 of 16 KiB", one["time_median_s"],
                      parts["time_median_s"], 3)


@pytest.mark.parametrize("pattern", ["streaming", "strided", "warp-pages"])
def test_a_pipelined_loop_over_more_chunks_than_streams_is_checked(ctx_factory, pattern):
    """pinned-pipelined at 8 MiB: 8 chunks of 1 MiB over 4 streams, a partial workload (host
    writes and reads and GPU writes cut inside chunks, sparse pages); the final buffer and the
    last iteration's result are checked exactly, as every loop's."""
    rows = run_cases(ctx_factory, "calibration-loop-sizes", strategy="pinned-pipelined", bytes="8MiB", reuse="3",
                     touched="0.3", pattern=pattern, host_writes="0.45", gpu_writes="0.6", host_reads="0.7",
                     iterations="4")
    (t,) = by(rows, phase="total")
    assert t["status"] == "ok", t["reason"]
    assert t["chunks"] == 8 and t["streams"] == 4 and t["chunk_bytes"] == 1024**2
    assert {r["phase"] for r in rows} >= {"alloc", "host_init", "first", "pipelined", "free"}
    assert not {r["phase"] for r in rows} & {"h2d", "kernel", "d2h"}  # they overlap: no times of their own


def test_a_pipelined_loop_runs_the_gpu_s_steps_while_the_host_works(ctx_factory):
    """256 MiB, all new data each iteration, 32 in-place passes, a small result. pinned runs the
    host's write (about 50 ms), then the copy and the kernel (about 10 ms) while the host waits; in
    16 chunks over 4 streams each chunk's copy and passes run while the host writes the next, so
    the host waits for under half of what pinned's copy and kernel take (H200: a tenth). (The
    whole iteration gains less than that: the host's issuing of 16 chunks' work costs too.)"""
    rows = run_cases(ctx_factory, "calibration-loop-sizes", strategy="pinned,pinned-pipelined", bytes="256MiB",
                     reuse="32", host_writes="1", gpu_writes="1", host_reads="0", iterations="3")
    totals = {r["axis.strategy"]: r for r in by(rows, phase="total")}
    assert all(r["status"] == "ok" for r in totals.values()), [(k, r["reason"]) for k, r in totals.items()]
    gpu_steps = sum(r["time_median_s"] for r in by(rows, **{"axis.strategy": "pinned"}) if r["phase"] in ("h2d", "kernel"))
    (pipe,) = by(rows, phase="pipelined")
    assert pipe["host_write_s"] > 0 and pipe["issue_s"] > 0
    assert_faster("loop 256MiB reuse 32: pipelined host wait vs pinned h2d+kernel", pipe["wait_s"], gpu_steps, 2)


def test_the_setup_loop_runs_one_size_s_strategies_together(session, tmp_path):
    """calibration-loop-setup as `umprof calibrate` measures it: every case once, one size's strategies
    one after another (the smaller size first), every loop checked; pinning 16 MiB costs more than
    mapping pageable memory (H200: 14x in calibration-5)."""
    import umprof

    axes = {"strategy": "pageable,pinned,managed", "bytes": "1MiB,16MiB"}
    rs = umprof.run("calibration-loop-setup", axes, tmp_path / "setup.parquet", um_counters="off")
    totals = rs.frame[rs.frame["phase"] == "total"]
    assert (totals["status"] == "ok").all(), totals[["case", "reason"]].values.tolist()
    order = [(r["scenario"], r["axis.strategy"], int(r["axis.bytes"])) for _, r in totals.iterrows()]
    assert [o[0] for o in order] == ["calibration-loop-setup"] * 6
    assert [o[1:] for o in order[:3]] == [("pageable", 1024**2), ("pinned", 1024**2), ("managed", 1024**2)]
    assert {o[2] for o in order[3:]} == {16 * 1024**2}
    alloc = rs.frame[(rs.frame["phase"] == "alloc") & (rs.frame["axis.bytes"] == 16 * 1024**2)]
    per = alloc.groupby("axis.strategy")["time_median_s"].median()
    assert_faster("setup loop 16MiB alloc: pageable vs pinned", per["pageable"], per["pinned"], 3)


def test_the_malloc_setup_loop_backs_pageable_memory_as_a_c_program_does(session, tmp_path):
    """calibration-loop-setup-malloc as `umprof calibrate` measures it: every strategy whose buffer is
    pageable memory, its pages a fresh mapping with no huge-page advice (as glibc's malloc maps a large
    buffer), every loop checked. Where the host gives transparent huge pages only where advised, numpy's
    arrays (advised) fault in 2 MiB at a time and the malloc'd mapping 4 KiB at a time: its first write of
    256 MiB costs more (2.9x on an H100 machine's host of 16 cores, 2026-11, results/first-touch/)."""
    from pathlib import Path

    import umprof

    sizes = {"bytes": "256MiB"}
    malloc = umprof.run("calibration-loop-setup-malloc", sizes, tmp_path / "malloc.parquet", um_counters="off")
    totals = malloc.frame[malloc.frame["phase"] == "total"]
    ok = totals[totals["status"] == "ok"]
    assert set(ok["axis.strategy"]) >= {"pageable", "mapped", "pageable-staged", "pageable-registered"}, \
        totals[["case", "reason"]].values.tolist()
    assert set(ok["axis.host_pages"]) == {"malloc"}
    thp = Path("/sys/kernel/mm/transparent_hugepage/enabled")
    if not thp.exists() or "[madvise]" not in thp.read_text():
        pytest.skip(f"transparent huge pages here: {thp.read_text().strip() if thp.exists() else 'unknown'} "
                    "(the ordering holds where they are given only where advised)")
    numpy = umprof.run("calibration-loop-setup", dict(sizes, strategy="pageable"), tmp_path / "numpy.parquet",
                       um_counters="off")

    def first_write(rs):
        f = rs.frame
        return float(f[(f["phase"] == "host_init") & (f["axis.strategy"] == "pageable")]["time_median_s"].median())

    assert_faster("setup loop 256MiB pageable first write: numpy's huge pages vs malloc's 4 KiB pages",
                  first_write(numpy), first_write(malloc), 1.3)


def test_the_stores_setup_loop_writes_each_buffer_word_by_word(ctx_factory):
    """calibration-loop-setup-stores: every strategy's first write stored word by word and copied in, on
    numpy's and malloc's pages, every loop's result checked against the reference (the stores wrote the data
    the copy would have). Page-locked memory not in the caches reads each line for ownership before an ordinary
    store, where memcpy's copies of 256 MiB store around the caches: pinned memory's first write by stores
    takes longer than by memcpy."""
    rows = run_cases(ctx_factory, "calibration-loop-setup-stores", strategy="pageable,pinned,mapped,managed",
                     bytes="256MiB", host_pages="numpy,malloc")
    copied = by(rows, **{"axis.first_write": "copy"})
    rows = by(rows, **{"axis.first_write": "stores"})
    totals = by(rows, phase="total")
    bad = [(r["case"], r["reason"]) for r in totals if r["status"] != "ok"]
    assert not bad
    assert {(r["axis.strategy"], r["axis.host_pages"]) for r in totals} == {
        ("pageable", "numpy"), ("pageable", "malloc"), ("pinned", "numpy"), ("mapped", "numpy"), ("mapped", "malloc"),
        ("managed", "numpy")}
    assert {(r["axis.strategy"], r["axis.host_pages"]) for r in by(copied, phase="total") if r["status"] == "ok"} \
        == {(r["axis.strategy"], r["axis.host_pages"]) for r in totals}

    def first_write(rs):
        return min(r["time_median_s"] for r in by(rs, phase="host_init", **{"axis.strategy": "pinned"}))

    assert_faster("setup loop 256MiB pinned first write: memcpy's copy vs stores word by word",
                  first_write(copied), first_write(rows), 1.2)


def test_the_read_words_loop_reads_back_word_by_word_and_managed_pages_fault_back_slower(ctx_factory):
    """calibration-loop-read-words: pinned and managed memory's whole-buffer loop, the host reading the buffer back
    with numpy and, as a compiled program does, word by word (every loop's result checked against the reference).
    Read word by word, managed pages the kernel left on the GPU fault back, which pinned memory's do not (on an H200,
    2026-12-04: 29 ms against 23.5-25.7 ms at 64 MiB over two steady iterations)."""
    rows = run_cases(ctx_factory, "calibration-loop-read-words", strategy="pinned,managed", bytes="64MiB")
    totals = by(rows, phase="total")
    bad = [(r["case"], r["reason"]) for r in totals if r["status"] != "ok"]
    assert not bad and len(totals) == 4
    assert {r["axis.host_reader"] for r in totals} == {"numpy", "words"}

    def read(strategy, reader):
        (r,) = by(rows, phase="host_read", **{"axis.strategy": strategy, "axis.host_reader": reader})
        return r["time_median_s"]

    assert_faster("read-words loop 64MiB read back word by word: pinned vs managed pages faulting back",
                  read("pinned", "words"), read("managed", "words"), 1.05)

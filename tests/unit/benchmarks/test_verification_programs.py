"""benchmarks/verification/: the judge, the timings merge and the trace shortening without a GPU; every program run
judged by modes it has; the C programs compile (where nvcc is), the Python ones parse."""

import gzip
import json
import py_compile
import shutil
import sqlite3
import subprocess

import pytest

from tests.unit.data import ROOT, TRACES, load_script, readable, unpacked

HERE = ROOT / "benchmarks" / "verification"
FIXTURES = readable(TRACES / "torch")


def _timings(modes: dict, program="infer_service") -> dict:
    return {"program": program, "gpu": "NVIDIA H100 80GB HBM3", "driver": "580.159.04", "cpu_count": 16,
            "date": "2026-12-06T13:05:26Z",
            "modes": {m: {"wall_s": [t + 3] * 3, "loop_s": [t] * 3, "checksums": [1.5], "failed": []}
                      for m, t in modes.items()}}


def _advice(strategy: str, change: str, saving=1.0, now="pageable") -> dict:
    return {"strategy_now": now, "advice": [{"flow": "loop", "strategy": strategy, "change": change,
                                             "saving_s": saving}]}


def test_an_advised_strategy_is_judged_by_the_mode_that_applies_it():
    judge = load_script("benchmarks/verification/judge.py")
    t = _timings({"as_written": 1.3, "pinned_prealloc": 0.43, "two_streams": 0.40})
    row = judge.judge_one("infer_service", "nsys", t, _advice("pinned", "use pycuda.driver.pagelocked_empty"),
                          "loop_s")
    assert (row["mode"], row["verdict"], row["best_mode"]) == ("pinned_prealloc", "faster", "two_streams")
    assert row["captured"] == pytest.approx((1.3 - 0.43) / (1.3 - 0.40), abs=1e-3)
    assert row["idiom"] == "foreign: pycuda"


def test_an_idiom_code_wins_over_the_strategy_and_keep_maps_to_as_written():
    judge = load_script("benchmarks/verification/judge.py")
    t = _timings({"as_written": 1.3, "pinned_prealloc": 0.43, "two_streams": 0.40})
    advice = _advice("pinned", "upload the next frame on a side torch.cuda.Stream")
    advice["advice"][0]["idiom"] = "side-stream"
    row = judge.judge_one("infer_service", "kineto", t, advice, "loop_s")
    assert (row["mode"], row["idiom"], row["captured"]) == ("two_streams", "own", 1.0)
    kept = judge.judge_one("infer_service", "nsys", t, _advice("pageable", "", now="pageable"), "loop_s")
    assert (kept["advised"], kept["mode"], kept["verdict"], kept["captured"]) == ("keep", "as_written",
                                                                                  "within 5%", 0.0)


def test_a_predicted_saving_is_compared_with_the_measured_one_on_a_whole_trace_only():
    judge = load_script("benchmarks/verification/judge.py")
    t = _timings({"as_written": 1.3, "pinned_prealloc": 0.43, "two_streams": 0.40})
    row = judge.judge_one("infer_service", "nsys", t, _advice("pinned", "pin it", saving=0.75), "loop_s")
    assert (row["predicted_saving_s"], row["measured_saving_s"]) == (0.75, pytest.approx(0.87))
    assert row["saving_error"] == pytest.approx(0.75 / 0.87 - 1, abs=1e-3)
    part = judge.judge_one("infer_service", "nsys", t, _advice("pinned", "pin it", saving=0.1), "loop_s", whole=False)
    assert part["predicted_saving_s"] == 0.1 and part["saving_error"] is None  # a shortened trace: its part's saving
    kept = judge.judge_one("infer_service", "nsys", t, _advice("pageable", "", saving=0.0), "loop_s")
    assert kept["predicted_saving_s"] is None and kept["saving_error"] is None


def test_a_slower_advice_an_unmeasured_one_and_no_advice_are_told_apart():
    judge = load_script("benchmarks/verification/judge.py")
    t = _timings({"as_written": 0.33, "prefetch": 0.21, "registered": 0.73}, "managed_loop")
    slower = judge.judge_one("managed_loop", "nsys", t, _advice("pageable-registered", "cudaHostRegister"), "loop_s")
    assert (slower["mode"], slower["verdict"], slower["idiom"]) == ("registered", "slower", "own")
    assert slower["captured"] < 0
    assert judge.judge_one("managed_loop", "nsys", t, _advice("zero-copy", "x"), "loop_s")["verdict"] == "unmeasured"
    t["modes"]["registered_window"] = t["modes"]["prefetch"]
    part = judge.judge_one("managed_loop", "nsys", t, _advice("pageable-registered", "copy back only what the host "
                                                              "reads"), "loop_s")
    assert (part["mode"], part["verdict"]) == ("registered_window", "faster")
    assert judge.judge_one("managed_loop", "nsys", t, None, "loop_s")["verdict"] == "no advice"


def test_the_judge_reads_a_folder_of_advice_and_counts_an_error_line_as_no_advice(tmp_path):
    judge = load_script("benchmarks/verification/judge.py")
    (tmp_path / "t").mkdir()
    (tmp_path / "a").mkdir()
    (tmp_path / "t" / "ddp_train.json").write_text(json.dumps(_timings({"as_written": 0.87, "pinned_once": 0.88},
                                                                      "ddp_train")))
    (tmp_path / "a" / "ddp_train-rank0.nsys.json").write_text(json.dumps(_advice("pinned", "x.pin_memory()")))
    (tmp_path / "a" / "ddp_train.kineto.json").write_text("umprof: x.json: expected an nsys trace\n")
    rows = judge.judge(tmp_path / "t", tmp_path / "a")
    assert sorted((r["tracer"], r["verdict"]) for r in rows) == [("kineto", "no advice"), ("rank0.nsys", "within 5%")]
    assert "ddp_train" in judge.table(rows)


def test_timings_of_two_calls_merge_and_a_different_gpu_is_refused():
    merge = load_script("benchmarks/verification/merge_timings.py")
    a, b = _timings({"as_written": 1.0}), _timings({"as_written": 2.0})
    b["date"] = "2026-12-06T13:12:53Z"
    doc = merge.merge([a, b])
    assert doc["modes"]["as_written"]["loop_s"] == [1.0] * 3 + [2.0] * 3
    assert doc["dates"] == ["2026-12-06T13:05:26Z", "2026-12-06T13:12:53Z"] and doc["checksums_agree"]
    assert doc["command"] == "python3 infer_service.py"
    b["gpu"] = "NVIDIA H200"
    with pytest.raises(ValueError, match="gpu"):
        merge.merge([a, b])


def test_a_shortened_sqlite_keeps_its_tables_and_the_early_events(tmp_path):
    shorten = load_script("benchmarks/verification/shorten_trace.py")
    src = unpacked(FIXTURES / "h100-readback.sqlite", tmp_path)
    shorten.shorten_sqlite(src, tmp_path / "out.sqlite", 0.5)

    def counts(p):
        con = sqlite3.connect(p)
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        n = {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables}
        con.close()
        return n

    before, after = counts(src), counts(tmp_path / "out.sqlite")
    assert before.keys() == after.keys()
    assert 0 < after["CUPTI_ACTIVITY_KIND_MEMCPY"] < before["CUPTI_ACTIVITY_KIND_MEMCPY"]
    assert after["StringIds"] == before["StringIds"]


def test_a_shortened_kineto_trace_keeps_its_metadata(tmp_path):
    shorten = load_script("benchmarks/verification/shorten_trace.py")
    shorten.shorten_kineto(FIXTURES / "h100-readback.json.gz", tmp_path / "out.json.gz", 0.5)
    before = json.loads(gzip.decompress((FIXTURES / "h100-readback.json.gz").read_bytes()))
    after = json.loads(gzip.decompress((tmp_path / "out.json.gz").read_bytes()))
    copies = [sum(e.get("cat") == "gpu_memcpy" for e in d["traceEvents"]) for d in (before, after)]
    assert 0 < copies[1] < copies[0]
    assert after["deviceProperties"] == before["deviceProperties"]
    assert sum(e.get("ph") == "M" for e in after["traceEvents"]) == sum(e.get("ph") == "M" for e in before["traceEvents"])


def test_the_python_programs_parse():
    for p in sorted(HERE.glob("*.py")):
        py_compile.compile(str(p), doraise=True)


def test_every_program_run_is_judged_by_modes_it_has():
    programs = load_script("benchmarks/verification/run_gpu.py").PROGRAMS
    judge = load_script("benchmarks/verification/judge.py")
    assert set(programs) == set(judge.MODES)
    for name, table in judge.MODES.items():
        assert set(table.values()) <= set(programs[name][3]), name


@pytest.mark.nvcc
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
@pytest.mark.parametrize("name", sorted(p.stem for p in HERE.glob("*.cu")))
def test_the_c_programs_compile(tmp_path, name):
    cmd = ["nvcc", "-O2", "-arch=sm_90", "-o", str(tmp_path / name), str(HERE / f"{name}.cu")]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]

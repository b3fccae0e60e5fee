import math

import pandas as pd
import pytest

from umprof.core.errors import UsageError
from umprof.core.results import ResultSet, ResultWriter
from umprof.measure.device import dram_bytes_per_s, pcie_bytes_per_s
from umprof.measure.runner import case_rows, status_row
from umprof.measure.scenario import resolve
from umprof.measure.timing import PhaseTime, Sample

INFO = {"pcie_bytes_per_s": 63e9, "dram_bytes_per_s": 4.8e12, "d2d_bytes_per_s": 4.1e12}


def test_ceilings():
    assert pcie_bytes_per_s(5, 16) == pytest.approx(63.015e9, rel=1e-3)
    assert pcie_bytes_per_s(4, 16) == pytest.approx(31.5e9, rel=1e-3)
    assert pcie_bytes_per_s(3, 16) == pytest.approx(15.75e9, rel=1e-3)
    assert pcie_bytes_per_s(None, 16) is None
    # seed 000: 8800 GTX, 900 MHz × 384 bit × 2 = 86.4 GB/s; seed 001: one of the K80's two GPUs,
    # 2505 MHz × 384 bit × 2 = 240.48 GB/s (the seed's 480.96 counts both); H200: 3201 MHz × 6016 bit × 2
    assert dram_bytes_per_s(900_000, 384) == pytest.approx(86.4e9)
    assert dram_bytes_per_s(2_505_000, 384) == pytest.approx(240.48e9)
    assert dram_bytes_per_s(3_201_000, 6016) == pytest.approx(4.814e12, rel=1e-3)


def _samples():
    out = []
    for gpu in (4.8e-3, 5.0e-3, 5.2e-3):
        s = Sample([PhaseTime("alloc", math.nan, 1e-3), PhaseTime("h2d", gpu, gpu + 1e-5, 256 * 2**20, "pcie"),
                    PhaseTime("kernel", 1e-4, 1.1e-4, 2**29, "dram")])
        out.append(s)
    return out


def _case(name="transfers"):
    s = resolve([name])[0]
    return s, s.cases()[0]


def test_case_rows_phase_and_total():
    s, c = _case()
    rows = case_rows(s, c, _samples(), None, INFO, {"registers": 14})
    assert [r["phase"] for r in rows] == ["alloc", "h2d", "kernel", "total"]
    h2d = rows[1]
    assert h2d["status"] == "ok" and h2d["samples"] == 3
    assert h2d["gpu_time_median_s"] == 5.0e-3 and h2d["time_median_s"] == 5.0e-3
    assert h2d["bytes_per_s"] == pytest.approx(256 * 2**20 / 5e-3)
    assert h2d["util"] == pytest.approx(h2d["bytes_per_s"] / 63e9)
    assert h2d["axis.strategy"] == c.params["strategy"] and h2d["registers"] == 14
    kernel = rows[2]
    assert kernel["d2d_util"] == pytest.approx(kernel["bytes_per_s"] / 4.1e12)
    alloc = rows[0]
    assert math.isnan(alloc["gpu_time_median_s"]) and alloc["time_median_s"] == 1e-3
    total = rows[-1]
    assert total["time_median_s"] == pytest.approx(1e-3 + 5.0e-3 + 1e-4)


def test_a_loops_wall_readings_come_from_one_sample_and_add_up():
    """A loop's whole run = setup + iterations × steady holds within a sample; medians taken column
    by column would break it (on an H100, 2 MiB loops of 4 iterations: 10% apart), so the wall
    readings are the median-wall sample's, the other counters their own medians."""
    samples = _samples()
    walls = [(9.0, 1.0, 2.0), (7.0, 3.0, 1.0), (8.0, 0.5, 1.875)]  # (wall_s, wall_setup_s, wall_steady_s), 4 its
    for smp, (whole, setup, steady), faults in zip(samples, walls, (5, 1, 3)):
        smp.extra["total"] = {"wall_s": whole, "wall_setup_s": setup, "wall_steady_s": steady, "um_faults": faults}
    s, c = _case()
    total = case_rows(s, c, samples, None, INFO, {})[-1]
    assert (total["wall_s"], total["wall_setup_s"], total["wall_steady_s"]) == (8.0, 0.5, 1.875)
    assert total["wall_s"] == total["wall_setup_s"] + 4 * total["wall_steady_s"]
    assert total["um_faults"] == 3
    even = case_rows(s, c, samples[:2], None, INFO, {})[-1]  # the lower of two: the 7.0 s sample
    assert (even["wall_s"], even["wall_steady_s"], even["um_faults"]) == (7.0, 1.0, 3.0)


def test_unstable_flag():
    s, c = _case()
    noisy = [Sample([PhaseTime("h2d", t, t)]) for t in (1e-3, 2e-3, 1e-3, 2e-3)]
    rows = case_rows(s, c, noisy, "timeout after 1 s", INFO, {})
    assert rows[0]["unstable"] and rows[0]["stop_reason"].startswith("timeout")


def _rs(tmp_path):
    s, c = _case()
    rows = case_rows(s, c, _samples(), None, INFO, {}) + [status_row(s, s.cases()[1], "skipped", "no HMM")]
    w = ResultWriter(tmp_path / "r.parquet", {"umprof": "test"})
    w.devices = [{"name": "Fake GPU", **INFO}]
    w.add(rows)
    return w


@pytest.mark.parametrize("suffix", [".parquet", ".csv", ".json"])
def test_round_trip(tmp_path, suffix):
    rs = _rs(tmp_path).result()
    path = tmp_path / f"out{suffix}"
    rs.save(path)
    back = ResultSet.load(path)
    assert back.meta == {"umprof": "test"} and back.devices[0]["name"] == "Fake GPU"
    assert list(back.frame["phase"]) == list(rs.frame["phase"])
    assert back.frame["bytes_per_s"].iloc[1] == pytest.approx(rs.frame["bytes_per_s"].iloc[1])
    assert list(back.frame.columns[:4]) == ["scenario", "op", "case", "axis.strategy"]
    assert back.frame["status"].tolist()[-1] == "skipped"


def test_writer_saves_as_cases_finish(tmp_path):
    _rs(tmp_path)
    assert ResultSet.load(tmp_path / "r.parquet").frame.shape[0] == 5


@pytest.mark.parametrize("suffix", [".parquet", ".csv", ".json"])
def test_a_file_being_rewritten_always_reads_whole(tmp_path, suffix):
    # A user watches a run's file while the run rewrites it after every case (seen on the H200:
    # pyarrow given a path sized the old file and read the new one).
    import threading

    path = tmp_path / f"r{suffix}"
    sets = [ResultSet(frame=pd.DataFrame({"case": range(n), "x": [1.5] * n}), meta={"n": n}) for n in (3, 300)]
    sets[0].save(path)
    stop, errors = threading.Event(), []

    def rewrite():
        i = 0
        while not stop.is_set():
            sets[i % 2].save(path)
            i += 1

    writer = threading.Thread(target=rewrite)
    writer.start()
    try:
        for _ in range(300):
            try:
                assert ResultSet.load(path).frame.shape[0] in (3, 300)
            except UsageError as e:
                errors.append(str(e))
    finally:
        stop.set()
        writer.join()
    assert not errors, errors[:3]


def test_writer_refuses_to_overwrite(tmp_path):
    _rs(tmp_path)
    with pytest.raises(UsageError, match="already exists; pass --force"):
        ResultWriter(tmp_path / "r.parquet", {})
    ResultWriter(tmp_path / "r.parquet", {}, force=True)


@pytest.mark.parametrize("name,content,match", [
    ("x.txt", "", "expected a file ending in .parquet, .csv or .json"),
    ("x.csv", "a,b\n1,2\n", "not one umprof wrote"),
    ("x.json", "[1]", "not an umprof result"),
    ("x.json", "{not json", "could not read it as json"),
    ("x.parquet", "garbage", "could not read it as parquet"),
])
def test_load_errors(tmp_path, name, content, match):
    p = tmp_path / name
    p.write_text(content)
    with pytest.raises(UsageError, match=match):
        ResultSet.load(p)


def test_load_refuses_a_newer_schema_by_name(tmp_path):
    p = tmp_path / "x.json"
    p.write_text('{"schema_version": 99, "cases": []}')
    with pytest.raises(UsageError, match="schema version 99 was written by a newer umprof.*upgrade umprof"):
        ResultSet.load(p)
    p.write_text('{"schema_version": "one", "cases": []}')
    with pytest.raises(UsageError, match="schema_version 'one' is not a result layout umprof knows"):
        ResultSet.load(p)


def test_version_1_files_are_read_and_upgraded(tmp_path):
    """The committed results of earlier versions stay readable: case_wall_s appears, empty."""
    from tests.unit.data import RESULTS

    old = ResultSet.load(RESULTS / "nvidia-h200-um.parquet")
    assert "case_wall_s" in old.frame.columns and old.frame["case_wall_s"].isna().all()
    p = tmp_path / "v1.json"
    p.write_text('{"schema_version": 1, "meta": {}, "devices": [], "cases": [{"scenario": "s", "case": "c"}]}')
    assert ResultSet.load(p).frame["case_wall_s"].isna().all()


def _loop_total(its, walls, t_init=0.003, t_first=0.010, t_free=0.002, median=True):
    """A loop's total row as a layout-3 (steady = the median iteration) or layout-4 (the mean) file wrote it."""
    import statistics

    steady = statistics.median(walls) if median else statistics.fmean(walls)
    return {"scenario": "loop", "case": f"its={its}", "phase": "total", "status": "ok", "axis.iterations": its,
            "wall_s": t_init + t_first + sum(walls) + t_free, "wall_first_s": t_first, "wall_steady_s": steady,
            "wall_setup_s": t_init + t_free + t_first - steady}


def test_layout_3_loops_read_with_the_mean_steady_iteration(tmp_path):
    """Before layout 4 a loop's steady iteration was the median of its iterations, which hides a
    heavy-tailed loop's stalls (and breaks whole = setup + iterations × steady): on load it becomes
    the mean, the median kept beside it; a loop of one iteration (no steady one) stays as it was."""
    import json

    walls = [1e-4] * 8 + [3e-3]  # nine steady iterations, one stalled: mean 4.2x the median
    rows = [_loop_total(10, walls), {**_loop_total(1, [1e-4]), "wall_steady_s": math.nan, "wall_setup_s": 0.015}]
    p = tmp_path / "v3.json"
    p.write_text(json.dumps({"schema_version": 3, "meta": {}, "devices": [], "cases": rows}))
    f = ResultSet.load(p).frame.set_index("case")
    ten = f.loc["its=10"]
    assert ten["wall_steady_median_s"] == pytest.approx(1e-4)
    assert ten["wall_steady_s"] == pytest.approx(sum(walls) / 9)
    assert ten["wall_s"] == pytest.approx(ten["wall_setup_s"] + 10 * ten["wall_steady_s"])
    assert ten["wall_setup_s"] == pytest.approx(0.003 + 0.010 + 0.002 - sum(walls) / 9)
    one = f.loc["its=1"]
    assert math.isnan(one["wall_steady_s"]) and one["wall_setup_s"] == 0.015
    # a layout-4 file is read as written
    p4 = tmp_path / "v4.json"
    ResultSet(pd.DataFrame([_loop_total(10, walls, median=False)]), {}, []).save(p4)
    again = ResultSet.load(p4).frame.iloc[0]
    assert again["wall_steady_s"] == pytest.approx(sum(walls) / 9) and "wall_steady_median_s" not in again


def test_committed_loops_add_up_whole_run_setup_and_iterations():
    """The committed verification runs (layout 3), read today: whole = setup + iterations × steady."""
    from tests.unit.data import holdout

    f = ResultSet.load(holdout("h200", 14)[0]).frame
    t = f[(f["phase"] == "total") & (f["status"] == "ok") & (f["axis.iterations"].astype(int) >= 2)]
    assert len(t) > 500
    whole = t["wall_setup_s"] + t["axis.iterations"].astype(int) * t["wall_steady_s"]
    assert (whole - t["wall_s"]).abs().max() < 1e-9
    assert (t["wall_steady_median_s"] > 0).all()


@pytest.mark.parametrize("suffix", [".parquet", ".csv", ".json"])
def test_truncated_files_are_one_line_naming_the_file(tmp_path, suffix):
    from click.testing import CliRunner

    from umprof.cli import cli

    good = tmp_path / f"good{suffix}"
    s, c = _case()
    ResultSet(pd.DataFrame(case_rows(s, c, _samples(), None, INFO, {})), {"argv": []}, []).save(good)
    data = good.read_bytes()
    cut = tmp_path / f"cut{suffix}"
    cut.write_bytes(data[: len(data) // 2] if suffix != ".csv" else data[:40])
    for command in (["show", str(cut)], ["compare", str(good), str(cut)],
                    ["report", str(cut), "-o", str(tmp_path / "r.html")]):
        res = CliRunner().invoke(cli, command)
        assert res.exit_code == 2, (command, res.output)
        lines = res.output.strip().splitlines()
        assert len(lines) == 1 and str(cut) in lines[0] and "Traceback" not in res.output, res.output


def test_parquet_keeps_a_column_of_mixed_types(tmp_path):
    """One op's int beside another op's text in the same column must not lose the file."""

    from umprof.core.results import ResultSet

    rs = ResultSet(pd.DataFrame({"case": ["a", "b"], "grid": [1056, "512x512"]}), meta={}, devices=[])
    rs.save(tmp_path / "r.parquet")
    back = ResultSet.load(tmp_path / "r.parquet")
    assert list(back.frame["grid"]) == ["1056", "512x512"]


def test_a_resumed_writer_keeps_the_earlier_cases_and_adds_to_them(tmp_path):
    """How a run goes on in a fresh process after its CUDA context was lost."""
    s, c = _case()
    out = tmp_path / "r.parquet"
    first = ResultWriter(out, {"argv": ["first"]})
    first.devices = [{"name": "GPU"}]
    first.add(case_rows(s, c, _samples(), None, INFO, {}))
    with pytest.raises(UsageError, match="already exists"):
        ResultWriter(out, {})
    again = ResultWriter(out, {"argv": ["child"], "extra": 1}, resume=True)
    assert again.done == {(s.name, c.label, 0)} and again.devices == [{"name": "GPU"}]
    assert again.meta["argv"] == ["first"] and again.meta["extra"] == 1
    other = s.cases()[1]
    again.add([status_row(s, other, "failed", "boom")])
    f = ResultSet.load(out).frame
    assert set(f["case"]) == {c.label, other.label} and len(f[f["case"] == c.label]) == 4


def test_scenarios_travel_to_a_fresh_process_as_data():
    from umprof.measure.scenario import resolve, scenario_from_data

    for s in resolve(["host-strategies", "calibration", "access", "um-advice"]):
        if "bytes" in s.axes:
            s.override("bytes", "1MiB,3MiB")  # an override travels with it
        back = scenario_from_data(s.to_data(), s.path)
        assert [c.key() for c in back.cases()] == [c.key() for c in s.cases()]
        assert (back.kernel, back.compile_options, back.timing) == (s.kernel, s.compile_options, s.timing)


def test_a_writer_rewrites_its_file_at_most_once_a_second_and_when_told(tmp_path):
    s, c = _case()
    out = tmp_path / "r.parquet"
    w = ResultWriter(out, {})
    w.add(case_rows(s, c, _samples(), None, INFO, {}))  # the first case is written at once
    assert not w.pending and len(ResultSet.load(out).frame) == 4
    other = s.cases()[1]
    w.add([status_row(s, other, "failed", "boom")])  # within the second: kept, not yet written
    assert w.pending and len(ResultSet.load(out).frame) == 4
    w.flush()
    assert not w.pending and len(ResultSet.load(out).frame) == 5

"""Nsight Systems: finding and driving nsys, and umprof's phase breakdown read with SQL from real traces
captured on the GPU machine (tests/fixtures/nsys), held to nsys' own reports of the same traces."""

import math
import stat

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from tests.unit.data import ROOT, unpacked
from umprof.cli import cli
from umprof.core.errors import ToolUnavailable, UsageError
from umprof.core.results import ResultSet
from umprof.nsight import nsys as nsysmod
from umprof.nsight.nsys_import import (
    agreement,
    breakdown,
    copy_summary,
    phase_of,
    ranges,
    um_summary,
)
from umprof.nsight.trace_db import TraceTables, open_trace

FIX = ROOT / "tests" / "fixtures" / "nsys"


@pytest.fixture(scope="module")
def trace_file(tmp_path_factory):
    """The path of a committed trace ('run', 'um', 'app'), unpacked."""
    where = tmp_path_factory.mktemp("nsys")

    def unpack(name):
        out = where / f"{name}.sqlite"
        return out if out.is_file() else unpacked(FIX / f"{name}.sqlite", where)

    return unpack


@pytest.fixture(scope="module")
def tables(trace_file):
    cache = {}
    return lambda name: cache.setdefault(name, open_trace(trace_file(name)))


def nsys_report(name, report):
    return pd.read_csv(FIX / f"{name}_{report}.csv")


@pytest.mark.parametrize("name", ["run", "um", "app"])
def test_ranges_nest_and_project_onto_the_gpu_as_nsys_does(tables, name):
    """Every range's parent, and every projection (first GPU operation launched inside the range to the end
    of the last, and their count), exactly as nsys' own nvtx_pushpop_trace and nvtx_gpu_proj_trace say."""
    ours = ranges(tables(name))
    pushpop = nsys_report(name, "nvtx_pushpop_trace")
    assert len(ours) == len(pushpop)
    assert list(ours["name"]) == [n.removeprefix("umprof:") for n in pushpop["Name"]]
    start_of = dict(zip(pushpop["RangeId"], pushpop["Start (ns)"]))
    ours_parent_start = [ours["cpu_start"].iloc[int(p)] if not math.isnan(p) else None for p in ours["parentid"]]
    theirs_parent_start = [start_of[p] if not math.isnan(p) else None for p in pushpop["ParentId"]]
    assert ours_parent_start == theirs_parent_start
    proj = nsys_report(name, "nvtx_gpu_proj_trace")
    on_gpu = ours[ours["gpu_ops"] > 0].set_index("cpu_start")
    assert len(on_gpu) == len(proj)
    mine = on_gpu.loc[proj["Orig Start (ns)"]]
    assert (mine["gpu_start"].to_numpy() == proj["Projected Start (ns)"].to_numpy()).all()
    assert np.allclose(mine["gpu_s"].to_numpy() * 1e9, proj["Projected Duration (ns)"].to_numpy(), rtol=0, atol=0.5)
    assert (mine["gpu_ops"].to_numpy() == proj["NumGPUOps"].to_numpy()).all()


def test_breakdown_of_umprof_transfers(tables):
    f = breakdown(tables("run"), "run")
    h2d = f[(f["case"] == "strategy=pinned direction=h2d bytes=64MiB") & (f["phase"] == "h2d")].iloc[0]
    assert h2d["scenario"] == "transfers"  # from the enclosing 'scenario transfers' range
    assert h2d["samples"] >= 3
    assert h2d["bytes"] == 64 * 2**20  # one 64 MiB copy per instance, to the byte
    assert 50e9 < h2d["bytes_per_s"] < 63e9  # pinned over PCIe 5 x16
    pageable = f[(f["case"] == "strategy=pageable direction=h2d bytes=64MiB") & (f["phase"] == "h2d")].iloc[0]
    assert pageable["bytes_per_s"] < h2d["bytes_per_s"]
    assert set(f["phase"]) == {"h2d", "d2h", "d2d", "total"}


def test_breakdown_of_annotated_app_merges_iterations(tables):
    f = breakdown(tables("app"), "app")
    it = f[f["case"] == "iteration"]
    assert list(it["phase"]) == ["host_init", "h2d", "kernel", "d2h", "host_read", "total"]
    row = it.set_index("phase")
    assert row.loc["h2d", "samples"] == 3
    assert row.loc["h2d", "bytes"] == 2 * 16 * 2**20  # x and y copied in each iteration
    assert row.loc["d2h", "bytes"] == 16 * 2**20
    assert row.loc["kernel", "detail"] == "saxpy"
    assert row.loc["kernel", "gpu_time_median_s"] > 0
    assert math.isnan(row.loc["host_init", "gpu_time_median_s"])  # host-only: CPU time only
    top = f[f["case"] == "(top level)"]
    assert set(top["phase"]) == {"alloc", "free", "total"}
    kept = breakdown(tables("app"), "app", merge_numbered=False)
    assert {"iteration 0", "iteration 1", "iteration 2"} <= set(kept["case"])


def test_um_summary_is_nsys_totals(tables):
    um = um_summary(tables("um"))
    total = nsys_report("um", "um_total_sum").iloc[0]
    assert um["htod_bytes"] == pytest.approx(total["Total HtoD Migration Size (MB)"] * 1e6, abs=1e3)
    assert um["dtoh_bytes"] == pytest.approx(total["Total DtoH Migration Size (MB)"] * 1e6, abs=1e3)
    assert um["cpu_page_faults"] == total["Total CPU Page Faults"]
    assert um["gpu_page_faults"] == total["Total GPU PageFaults"]
    sizes = nsys_report("um", "cuda_gpu_mem_size_sum").set_index("Operation")
    assert um["htod_migrations"] == sizes.loc["[CUDA memcpy Unified Host-to-Device]", "Count"]
    assert um["dtoh_migrations"] == sizes.loc["[CUDA memcpy Unified Device-to-Host]", "Count"]
    assert um["htod_migration_max_bytes"] == pytest.approx(sizes.loc["[CUDA memcpy Unified Host-to-Device]", "Max (MB)"] * 1e6,
                                                           abs=1e3)
    assert um_summary(tables("run")) == {}  # no managed memory, no fault tables: nothing to say


@pytest.mark.parametrize("name", ["run", "um", "app"])
def test_copy_summary_is_nsys_memory_operations(tables, name):
    ours = copy_summary(tables(name)).set_index("operation")
    times = nsys_report(name, "cuda_gpu_mem_time_sum")
    sizes = nsys_report(name, "cuda_gpu_mem_size_sum").set_index("Operation")
    assert len(ours) == len(times)
    for _, r in times.iterrows():
        mine = ours.loc[r["Operation"].strip("[]").removeprefix("CUDA ")]
        assert mine["count"] == r["Count"]
        assert mine["total_s"] * 1e9 == pytest.approx(r["Total Time (ns)"], abs=1)
        assert mine["bytes"] == pytest.approx(sizes.loc[r["Operation"], "Total (MB)"] * 1e6, abs=1e3)


def test_trace_without_fault_tables_says_so(tables):
    assert any("GPU page faults" in n for n in tables("run").notes)
    assert not any("GPU page faults" in n for n in tables("um").notes)


def test_find_nsys_order(tmp_path, monkeypatch):
    fake = tmp_path / "nsys"
    fake.write_text("#!/bin/sh\necho fake\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    assert nsysmod.find_nsys(str(fake)) == str(fake)
    monkeypatch.setenv(nsysmod.ENV_NSYS, str(fake))
    assert nsysmod.find_nsys() == str(fake)
    monkeypatch.setenv(nsysmod.ENV_NSYS, str(tmp_path / "missing"))
    with pytest.raises(UsageError, match="UMPROF_NSYS"):
        nsysmod.find_nsys()
    monkeypatch.delenv(nsysmod.ENV_NSYS)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setattr(nsysmod, "_INSTALL_GLOBS", ())
    with pytest.raises(ToolUnavailable, match="nsys was not found"):
        nsysmod.find_nsys()


def test_profile_command_traces_cuda_nvtx_and_um():
    cmd = nsysmod.profile_command("nsys", "out/x", ["python3", "-m", "umprof", "run"])
    # a graph's copies and kernels, each in the trace; the output last before the command
    assert cmd == ["nsys", "profile", "-t", "cuda,nvtx", "--cuda-graph-trace=node", "--cuda-um-cpu-page-faults=true",
                   "--cuda-um-gpu-page-faults=true", "--force-overwrite", "true", "-o", "out/x",
                   "python3", "-m", "umprof", "run"]
    assert nsysmod.profile_command("nsys", "x", ["a"], um_faults=False) == [
        "nsys", "profile", "-t", "cuda,nvtx", "--cuda-graph-trace=node", "--force-overwrite", "true", "-o", "x", "a"]


def test_the_os_runtime_is_traced_where_asked():
    assert nsysmod.profile_options(um_faults=False, os_runtime=True) == ["-t", "cuda,nvtx,osrt", "--cuda-graph-trace=node"]
    cmd = nsysmod.profile_command("nsys", "x", ["a"], um_faults=True, os_runtime=True)
    assert cmd[2:7] == nsysmod.profile_options(um_faults=True, os_runtime=True)


def test_phase_names():
    assert phase_of("umprof:h2d") == ("h2d", "")
    assert phase_of("umprof:kernel: saxpy") == ("kernel", "saxpy")
    assert phase_of("umprof:case strategy=pinned") == (None, "case strategy=pinned")
    assert phase_of("d2h") == ("d2h", "")
    assert phase_of("my own range") == (None, "my own range")


def _measured(rows):
    base = dict(op="transfer", status="ok")
    return pd.DataFrame([dict(base, **r) for r in rows])


def test_agreement_divides_by_reps_and_flags(tables):
    imported = breakdown(tables("run"), "run")
    nsys_h2d = imported[(imported["case"] == "strategy=pinned direction=h2d bytes=64MiB") & (imported["phase"] == "h2d")]
    t = float(nsys_h2d["gpu_time_median_s"].iloc[0])
    measured = _measured([
        dict(scenario="transfers", case="strategy=pinned direction=h2d bytes=64MiB", phase="h2d",
             gpu_time_median_s=t / 2 * 1.01, reps_per_sample=2, bytes=2**26),
        dict(scenario="transfers", case="strategy=pinned direction=d2h bytes=64MiB", phase="d2h",
             gpu_time_median_s=0.5, reps_per_sample=1, bytes=2**26),
        dict(scenario="transfers", case="not traced", phase="h2d", gpu_time_median_s=1.0, reps_per_sample=1, bytes=1),
    ])
    a = agreement(imported, measured).set_index("phase")
    assert len(a) == 2
    assert a.loc["h2d", "agrees"] and a.loc["h2d", "diff_rel"] == pytest.approx(1 / 1.01 - 1)
    assert not a.loc["d2h", "agrees"]


def test_import_nsys_api_sets_umprofs_times_beside_the_traces(trace_file, tables):
    from umprof import api

    f = breakdown(tables("run"), "run")
    h2d = f[(f["case"] == "strategy=pinned direction=h2d bytes=64MiB") & (f["phase"] == "h2d")].iloc[0]
    measured = ResultSet(_measured([dict(scenario="transfers", case="strategy=pinned direction=h2d bytes=64MiB",
                                         phase="h2d", gpu_time_median_s=h2d["gpu_time_median_s"] * 1.02,
                                         reps_per_sample=1, bytes=2**26)]), {}, [])
    rs = api.import_nsys(trace_file("run"), against=measured)
    assert [a["phase"] for a in rs.meta["agreement"]] == ["h2d"] and rs.meta["agreement"][0]["agrees"]
    row = rs.frame[rs.frame["case"] == "strategy=pinned direction=h2d bytes=64MiB"]
    assert row.loc[row["phase"] == "h2d", "agrees"].iloc[0]
    ops = {o["operation"]: o for o in rs.meta["memory_operations"]}
    assert ops["memcpy Host-to-Device"]["bytes"] % 2**26 == 0
    with pytest.raises(UsageError, match="umprof advise"):
        api.import_nsys(ROOT / "tests" / "fixtures" / "traces" / "h100-vectorAdd.sqlite")


def test_import_nsys_cli_reads_sqlite_without_nsys(trace_file, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no nsys anywhere: an .sqlite export needs none
    monkeypatch.delenv(nsysmod.ENV_NSYS, raising=False)
    monkeypatch.setattr(nsysmod, "_INSTALL_GLOBS", ())
    out = tmp_path / "app.json"
    res = CliRunner().invoke(cli, ["import-nsys", str(trace_file("app")), "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert "iteration" in res.output and "h2d" in res.output and "memcpy Host-to-Device" in res.output
    rs = ResultSet.load(out)
    assert rs.meta["source"] == "nsys"
    assert set(rs.frame["scenario"]) == {"app"}
    assert any("page faults" in n for n in rs.meta["trace_notes"])
    res = CliRunner().invoke(cli, ["show", str(out)])
    assert res.exit_code == 0 and "iteration" in res.output


def test_import_nsys_cli_against_umprofs_results(trace_file, tables, tmp_path):
    f = breakdown(tables("run"), "run")
    t = f[(f["case"] == "strategy=pinned direction=h2d bytes=64MiB") & (f["phase"] == "h2d")]["gpu_time_median_s"].iloc[0]
    results = tmp_path / "run.json"
    ResultSet(_measured([dict(scenario="transfers", case="strategy=pinned direction=h2d bytes=64MiB", phase="h2d",
                              gpu_time_median_s=t * 1.5, reps_per_sample=1, bytes=2**26)]), {}, []).save(results)
    res = CliRunner().invoke(cli, ["import-nsys", str(trace_file("run")), "--against", str(results)])
    assert res.exit_code == 0, res.output
    assert "Nsight Systems vs umprof" in res.output and "0 of 1 phases agree within 5%" in res.output


def test_trace_cli_without_the_nvtx_package_says_so_before_it_runs(tmp_path, monkeypatch):
    from umprof.nsight import nvtx

    fake = tmp_path / "nsys"
    fake.write_text("#!/bin/sh\nexit 1\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setattr(nvtx, "available", lambda: False)
    res = CliRunner().invoke(cli, ["trace", "transfers", "--nsys", str(fake), "-o", str(tmp_path / "t.parquet")])
    assert res.exit_code == 3 and "nvtx package is not installed" in res.output and "Traceback" not in res.output
    assert not (tmp_path / "t.parquet").exists()


def test_import_nsys_cli_errors(tmp_path):
    res = CliRunner().invoke(cli, ["import-nsys", str(tmp_path / "nothing")])
    assert res.exit_code == 2 and "no such trace file" in res.output
    (tmp_path / "x.csv").write_text("a,b\n1,2\n")
    res = CliRunner().invoke(cli, ["import-nsys", str(tmp_path / "x.csv")])
    assert res.exit_code == 2 and "not a trace; expected an Nsight Systems" in res.output
    (tmp_path / "x.nsys-rep").write_bytes(b"")
    res = CliRunner(env={"PATH": str(tmp_path), nsysmod.ENV_NSYS: ""}).invoke(
        cli, ["import-nsys", str(tmp_path / "x.nsys-rep")])
    assert res.exit_code in (2, 3)  # 3 where no nsys is installed; never a traceback
    assert "Traceback" not in res.output


def test_import_nsys_of_an_unannotated_application_points_to_advise():
    res = CliRunner().invoke(cli, ["import-nsys", str(ROOT / "tests" / "fixtures" / "traces" / "h100-vectorAdd.sqlite")])
    assert res.exit_code == 2 and "no phase ranges found" in res.output and "umprof advise" in res.output


def test_trace_cli_without_nsys_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv(nsysmod.ENV_NSYS, raising=False)
    monkeypatch.setattr(nsysmod, "_INSTALL_GLOBS", ())
    res = CliRunner().invoke(cli, ["trace", "transfers", "-o", str(tmp_path / "t.parquet")])
    assert res.exit_code == 3
    assert "nsys was not found" in res.output and "Traceback" not in res.output
    res = CliRunner().invoke(cli, ["trace", "no-such-scenario"])
    assert res.exit_code == 2


def _tables(spans):
    """A trace of push/pop ranges on one thread, each range with the GPU time of the one copy launched inside
    it, if any: (name, start ms, end ms, GPU ms or None)."""
    empty = lambda cols: pd.DataFrame({c: pd.Series(dtype="int64") for c in cols})  # noqa: E731
    ms = 1_000_000
    rng = pd.DataFrame({"start": [s[1] * ms for s in spans], "end": [s[2] * ms for s in spans], "pid": 1, "tid": 1,
                        "name": [f"umprof:{s[0]}" for s in spans]})
    gpu = [(i + 1, s) for i, s in enumerate(spans) if s[3] is not None]
    calls = pd.DataFrame({"start": [s[1] * ms + 1 for _, s in gpu], "end": [s[1] * ms + 2 for _, s in gpu], "pid": 1,
                          "tid": 1, "correlation": [c for c, _ in gpu], "name": "cudaMemcpy"})
    copies = pd.DataFrame({"start": [s[1] * ms + 10 for _, s in gpu], "end": [int(s[1] * ms + 10 + s[3] * ms) for _, s in gpu],
                           "pid": 1, "device": 0, "stream": 7, "correlation": [c for c, _ in gpu], "bytes": 1024,
                           "kind": "h2d", "src": "pinned", "dst": "device", "cause": 0, "address": 0})
    return TraceTables(path="synthetic", gpus=empty(["device", "name", "memory_bytes"]), processes=empty(["pid", "name"]),
                       copies=copies, kernels=empty(["start", "end", "pid", "device", "stream", "correlation", "name"]),
                       memsets=empty(["start", "end", "pid", "device", "stream", "correlation", "bytes"]), calls=calls,
                       gpu_faults=empty(["start", "end", "pid", "device", "faults"]), cpu_faults=empty(["start", "pid"]),
                       ranges=rng)


def test_breakdown_leaves_out_phases_inside_an_untimed_range():
    """A warm-up and a counted sample (in umprof's ``untimed`` ranges) are not samples: the trace's
    instances of a case's phase are the ones umprof timed, so the two medians are of the same copies."""
    f = breakdown(_tables([
        ("case strategy=pinned", 0, 100, None),
        ("untimed: warm-up", 1, 20, None), ("h2d", 2, 19, 9.0),
        ("h2d", 21, 30, 1.0), ("h2d", 31, 40, 1.2), ("h2d", 41, 50, 1.1),
        ("untimed: counted sample", 51, 70, None), ("h2d", 52, 69, 7.0),
    ]), "run")
    assert list(f["case"].unique()) == ["strategy=pinned"]
    h2d = f[f["phase"] == "h2d"].iloc[0]
    assert h2d["samples"] == 3
    assert h2d["gpu_time_median_s"] == pytest.approx(1.1e-3)
    assert h2d["bytes"] == 1024


def test_overlapping_ranges_that_do_not_nest_are_siblings():
    """Start/end ranges may overlap without nesting: one that outlives the range open before it is not its child."""
    r = ranges(_tables([("case a", 0, 10, None), ("case b", 5, 20, None), ("h2d", 12, 15, 1.0)]))
    parent = {n: (r["name"].iloc[int(p)] if not math.isnan(p) else None) for n, p in zip(r["name"], r["parentid"])}
    assert parent == {"umprof:case a": None, "umprof:case b": None, "umprof:h2d": "umprof:case b"}


def test_a_trace_of_kernels_alone_reads(tmp_path):
    """No copy table at all (nsys leaves out a table it has no rows for): the kernel's phase is read, no bytes,
    and the trace says what it lacked."""
    import sqlite3

    path = tmp_path / "kernels.sqlite"
    con = sqlite3.connect(path)
    con.executescript("""
        CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);
        CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER, streamId INTEGER,
            correlationId INTEGER, globalPid INTEGER, shortName INTEGER);
        CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER, end INTEGER, globalTid INTEGER, correlationId INTEGER,
            nameId INTEGER);
        CREATE TABLE NVTX_EVENTS (start INTEGER, end INTEGER, eventType INTEGER, text TEXT, globalTid INTEGER,
            textId INTEGER);
        INSERT INTO StringIds VALUES (1, 'saxpy'), (2, 'cudaLaunchKernel_v7000');
        INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (100, 250, 0, 7, 5, 16777216, 1);
        INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (50, 60, 16777217, 5, 2);
        INSERT INTO NVTX_EVENTS VALUES (40, 300, 59, 'kernel: saxpy', 16777217, NULL);
    """)
    con.commit()
    con.close()
    t = open_trace(path)
    f = breakdown(t, "k").set_index("phase")
    assert f.loc["kernel", "gpu_time_median_s"] == pytest.approx(150e-9) and f.loc["kernel", "bytes"] == 0
    assert um_summary(t) == {} and copy_summary(t) is None
    assert "no memory copies" in t.notes


def test_ranges_of_a_trace_with_no_gpu_operation_read_their_cpu_times(tmp_path):
    """A trace of NVTX ranges and no GPU operation (traced with `-t nvtx` alone, or before any CUDA work): the
    phases read with their CPU time and none on the GPU, and import-nsys prints them, not a traceback."""
    import sqlite3

    path = tmp_path / "nvtx-only.sqlite"
    con = sqlite3.connect(path)
    con.executescript("""
        CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);
        CREATE TABLE NVTX_EVENTS (start INTEGER, end INTEGER, eventType INTEGER, text TEXT, globalTid INTEGER,
            textId INTEGER);
        INSERT INTO NVTX_EVENTS VALUES (100, 2100, 59, 'h2d', 16777217, NULL);
    """)
    con.commit()
    con.close()
    r = ranges(open_trace(path))
    assert r["gpu_ops"].tolist() == [0] and math.isnan(r["gpu_s"].iloc[0])
    f = breakdown(open_trace(path), "n").set_index("phase")
    assert f.loc["h2d", "cpu_time_median_s"] == pytest.approx(2e-6)
    result = CliRunner().invoke(cli, ["import-nsys", str(path)])
    assert result.exit_code == 0, result.output
    assert "no kernels" in result.output and "no memory copies" in result.output

"""Nsight Systems readers on real reports captured on the GPU machine (tests/fixtures/nsys)."""

import math
import os
import stat

import pandas as pd
import pytest
from click.testing import CliRunner

from tests.unit.data import ROOT
from umprof.cli import cli
from umprof.core.errors import ToolUnavailable, UsageError
from umprof.core.results import ResultSet
from umprof.nsight import nsys as nsysmod
from umprof.nsight.nsys_import import (
    agreement,
    breakdown,
    copy_summary,
    phase_of,
    um_summary,
)

FIX = str(ROOT / "tests" / "fixtures" / "nsys")


def reports(name):
    return nsysmod.load_reports(os.path.join(FIX, name))


def test_columns_normalised_across_versions():
    new = nsysmod.read_csv_report(os.path.join(FIX, "run_cuda_gpu_mem_time_sum.csv"))
    old = nsysmod.read_csv_report(os.path.join(FIX, "renamed_gpumemtimesum.csv"))
    for col in ("time_pct", "total_time_ns", "count", "avg_ns", "min_ns", "max_ns", "operation"):
        assert col in new.columns and col in old.columns, col
    assert list(new["total_time_ns"]) == list(old["total_time_ns"])


def test_renamed_report_found_under_its_old_name():
    r = nsysmod.load_reports(os.path.join(FIX, "renamed"), ["cuda_gpu_mem_time_sum"])
    frame = r.get("cuda_gpu_mem_time_sum")
    assert frame is not None and frame["count"].sum() == 52 + 20 + 133 + 1


def test_empty_report_is_said_not_dropped():
    r = reports("run")
    assert r.get("cuda_gpu_kern_sum") is None  # the real report nsys left empty (no kernels ran)
    assert "empty" in r.notes["cuda_gpu_kern_sum"] and "skipped" in r.notes["cuda_gpu_kern_sum"]
    assert r.get("nvtx_sum") is not None
    assert any(line.startswith("um_sum:") for line in r.note_lines())


def test_missing_prefix_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="no exported reports"):
        nsysmod.load_reports(tmp_path / "nothing")


def test_help_reports_parsing_and_name_resolution():
    text = "\n".join([
        "The following built-in reports are available:",
        "",
        "  cuda_api_gpu_sum[:nvtx-name][:base|:mangled] -- CUDA Summary (API/Kernels/MemOps)",
        "  cuda_gpu_mem_time_sum -- CUDA GPU MemOps Summary (by Time)",
        "  gpukernsum[:base] -- CUDA GPU Kernel Summary",
        "  nvtx_sum -- NVTX Range Summary",
    ])
    names = nsysmod.parse_help_reports(text)
    assert {"cuda_api_gpu_sum", "cuda_gpu_mem_time_sum", "gpukernsum", "nvtx_sum"} <= names
    got = nsysmod.resolve_names(["cuda_gpu_kern_sum", "cuda_gpu_mem_time_sum", "nvtx_gpu_proj_trace"], names)
    assert got == {"cuda_gpu_kern_sum": "gpukernsum", "cuda_gpu_mem_time_sum": "cuda_gpu_mem_time_sum",
                   "nvtx_gpu_proj_trace": None}
    assert nsysmod.resolve_names(["nvtx_sum"], set()) == {"nvtx_sum": "nvtx_sum"}


def test_help_reports_of_the_real_nsys_has_every_report_umprof_reads():
    with open(os.path.join(FIX, "help-reports.txt")) as f:
        names = nsysmod.parse_help_reports(f.read())
    assert len(names) >= 30
    assert all(v is not None for v in nsysmod.resolve_names(nsysmod.IMPORT_REPORTS, names).values())


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
    assert cmd[:4] == ["nsys", "profile", "-t", "cuda,nvtx"]
    assert "--cuda-um-gpu-page-faults=true" in cmd and "--cuda-um-cpu-page-faults=true" in cmd
    assert cmd[-4:] == ["python3", "-m", "umprof", "run"]
    assert "--cuda-um-gpu-page-faults=true" not in nsysmod.profile_command("nsys", "x", ["a"], um_faults=False)


def test_phase_names():
    assert phase_of("umprof:h2d") == ("h2d", "")
    assert phase_of("umprof:kernel: saxpy") == ("kernel", "saxpy")
    assert phase_of("umprof:case strategy=pinned") == (None, "case strategy=pinned")
    assert phase_of("d2h") == ("d2h", "")
    assert phase_of("my own range") == (None, "my own range")


def test_breakdown_of_umprof_transfers():
    f = breakdown(reports("run"), "run")
    h2d = f[(f["case"] == "strategy=pinned direction=h2d bytes=64MiB") & (f["phase"] == "h2d")].iloc[0]
    assert h2d["scenario"] == "transfers"  # from the enclosing 'scenario transfers' range
    assert h2d["samples"] == 10
    assert h2d["bytes"] == 67_109_000  # one 64 MiB copy per instance (nsys rounds to 1 kB)
    assert 50e9 < h2d["bytes_per_s"] < 63e9  # pinned over PCIe 5 x16
    pageable = f[(f["case"] == "strategy=pageable direction=h2d bytes=64MiB") & (f["phase"] == "h2d")].iloc[0]
    assert pageable["bytes_per_s"] < h2d["bytes_per_s"]
    assert set(f["phase"]) == {"h2d", "d2h", "d2d", "total"}


def test_breakdown_of_annotated_app_merges_iterations():
    f = breakdown(reports("app"), "app")
    it = f[f["case"] == "iteration"]
    assert list(it["phase"]) == ["host_init", "h2d", "kernel", "d2h", "host_read", "total"]
    row = it.set_index("phase")
    assert row.loc["h2d", "samples"] == 3
    assert row.loc["h2d", "bytes"] == 2 * 16_777_000  # x and y copied in each iteration
    assert row.loc["d2h", "bytes"] == 16_777_000
    assert row.loc["kernel", "detail"] == "saxpy"
    assert row.loc["kernel", "gpu_time_median_s"] > 0
    assert math.isnan(row.loc["host_init", "gpu_time_median_s"])  # host-only: CPU time only
    top = f[f["case"] == "(top level)"]
    assert set(top["phase"]) == {"alloc", "free", "total"}
    kept = breakdown(reports("app"), "app", merge_numbered=False)
    assert {"iteration 0", "iteration 1", "iteration 2"} <= set(kept["case"])


def test_um_summary_and_copies():
    um = um_summary(reports("um"))
    assert um["htod_bytes"] == pytest.approx(553.648e6)
    assert um["gpu_page_faults"] == 95 and um["cpu_page_faults"] == 1728
    assert um["htod_migrations"] == 2264 and um["dtoh_migrations"] == 528
    copies = copy_summary(reports("run"))
    h2d = copies[copies["operation"] == "[CUDA memcpy Host-to-Device]"].iloc[0]
    assert h2d["count"] == 20 and h2d["bytes"] == pytest.approx(1342.177e6)


def _measured(rows):
    base = dict(op="transfer", status="ok")
    return pd.DataFrame([dict(base, **r) for r in rows])


def test_agreement_divides_by_reps_and_flags():
    imported = breakdown(reports("run"), "run")
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


def test_import_nsys_cli_on_csv_prefix(tmp_path):
    out = tmp_path / "app.json"
    res = CliRunner().invoke(cli, ["import-nsys", os.path.join(FIX, "app"), "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert "iteration" in res.output and "h2d" in res.output
    rs = ResultSet.load(out)
    assert rs.meta["source"] == "nsys"
    assert set(rs.frame["scenario"]) == {"app"}
    assert "um_sum" in rs.meta["report_notes"]
    res = CliRunner().invoke(cli, ["show", str(out)])
    assert res.exit_code == 0 and "iteration" in res.output


def test_import_nsys_cli_errors(tmp_path):
    res = CliRunner().invoke(cli, ["import-nsys", str(tmp_path / "nothing")])
    assert res.exit_code == 2 and "expected a .nsys-rep or .sqlite trace" in res.output
    res = CliRunner().invoke(cli, ["import-nsys", str(tmp_path / "x.nsys-rep")])
    assert res.exit_code == 2 and "no such trace file" in res.output
    (tmp_path / "x.nsys-rep").write_bytes(b"")
    res = CliRunner(env={"PATH": str(tmp_path), nsysmod.ENV_NSYS: ""}).invoke(
        cli, ["import-nsys", str(tmp_path / "x.nsys-rep")])
    assert res.exit_code in (0, 3)  # 3 where no nsys is installed; never a traceback
    assert "Traceback" not in res.output


def test_trace_cli_without_nsys_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv(nsysmod.ENV_NSYS, raising=False)
    monkeypatch.setattr(nsysmod, "_INSTALL_GLOBS", ())
    res = CliRunner().invoke(cli, ["trace", "transfers", "-o", str(tmp_path / "t.parquet")])
    assert res.exit_code == 3
    assert "nsys was not found" in res.output and "Traceback" not in res.output
    res = CliRunner().invoke(cli, ["trace", "no-such-scenario"])
    assert res.exit_code == 2


def test_a_failed_nsys_stats_is_a_clear_tool_error(tmp_path, monkeypatch):
    """nsys stats exiting non-zero with nothing exported: ToolUnavailable naming the trace, not a NameError."""
    import subprocess

    from umprof.nsight import nsys

    class Done:
        returncode, stdout, stderr = 1, "", "fatal: the trace is corrupt\n"

    monkeypatch.setattr(subprocess, "run", lambda *a, **k: Done())
    trace = tmp_path / "t.nsys-rep"
    trace.write_bytes(b"")
    with pytest.raises(ToolUnavailable, match="nsys stats failed on .*t.nsys-rep.*the trace is corrupt"):
        nsys.export_reports("nsys", trace, tmp_path / "out" / "r")


def _trace(ranges):
    """Reports of a trace made of push/pop ranges: (id, parent, name, GPU ms or None)."""
    pp = pd.DataFrame({"pid": 1, "rangeid": [r[0] for r in ranges], "parentid": [r[1] for r in ranges],
                       "name": [f"umprof:{r[2]}" for r in ranges], "start_ns": 0, "duration_ns": 1_000_000})
    gpu = [r for r in ranges if r[3] is not None]
    proj = pd.DataFrame({"pid": 1, "rangeid": [r[0] for r in gpu], "projected_start_ns": 0,
                         "projected_duration_ns": [r[3] * 1e6 for r in gpu], "numgpuops": 1})
    return {"nvtx_pushpop_trace": pp, "nvtx_gpu_proj_trace": proj}


def test_breakdown_leaves_out_phases_inside_an_untimed_range():
    """A warm-up and a counted sample (in umprof's ``untimed`` ranges) are not samples: the trace's
    instances of a case's phase are the ones umprof timed, so the two medians are of the same copies."""
    f = breakdown(_trace([
        (1, None, "case strategy=pinned", None),
        (2, 1, "untimed: warm-up", None), (3, 2, "h2d", 9.0),
        (4, 1, "h2d", 1.0), (5, 1, "h2d", 1.2), (6, 1, "h2d", 1.1),
        (7, 1, "untimed: counted sample", None), (8, 7, "h2d", 7.0),
    ]), "run")
    assert list(f["case"].unique()) == ["strategy=pinned"]
    h2d = f[f["phase"] == "h2d"].iloc[0]
    assert h2d["samples"] == 3
    assert h2d["gpu_time_median_s"] == pytest.approx(1.1e-3)

"""The CLI through click's CliRunner: no GPU needed."""


import pytest
from click.testing import CliRunner

from tests.unit.data import RESULTS
from umprof.cli import cli

REAL = RESULTS / "nvidia-h200-default.parquet"


@pytest.fixture
def runner():
    return CliRunner()


def test_list(runner):
    r = runner.invoke(cli, ["list"])
    assert r.exit_code == 0, r.output
    assert "transfers" in r.output and "host-strategies" in r.output and "lifecycle" in r.output
    from umprof.core.resources import scenarios_dir

    table = r.output.split("* = run by")[0]
    for path in scenarios_dir().glob("*.toml"):  # every user scenario in the table
        assert path.stem in table, path.stem
    assert "calibration-loop-sizes" not in table  # the calibration's scenarios as a group, not among the user's
    for group in ("access", "streams", "multi-gpu", "calibration", "crossovers"):
        assert f"group {group}:" in r.output


def test_list_cases_with_override(runner):
    r = runner.invoke(cli, ["list", "--cases", "transfers", "-a", "bytes=1MiB", "-a", "strategy=pinned"])
    assert r.exit_code == 0
    assert r.output.split("\n")[:3] == ["strategy=pinned direction=h2d bytes=1MiB",
                                        "strategy=pinned direction=d2h bytes=1MiB",
                                        "strategy=device direction=d2d bytes=1MiB"]


def test_run_dry_run_touches_no_gpu(runner, monkeypatch):
    monkeypatch.setenv("UMPROF_NO_GPU", "1")
    r = runner.invoke(cli, ["run", "--dry-run", "host-strategies", "-a", "bytes=pow2:20..22:2", "-a", "reuse=1"])
    assert r.exit_code == 0, r.output
    assert "host-strategies (lifecycle, 28 cases, ~" in r.output
    assert "28 cases: about" in r.output and "(no budget)" in r.output


def test_dry_run_of_the_default_suite_shows_its_estimate_and_budget(runner, monkeypatch):
    monkeypatch.setenv("UMPROF_NO_GPU", "1")
    r = runner.invoke(cli, ["run", "--dry-run"])
    assert r.exit_code == 0, r.output
    assert "(budget 1 min 40 s)" in r.output.splitlines()[-1]
    r = runner.invoke(cli, ["run", "--dry-run", "--budget", "30", "transfers"])
    assert "(budget 30 s)" in r.output.splitlines()[-1]
    r = runner.invoke(cli, ["run", "--dry-run", "--budget", "-1"])
    assert r.exit_code == 2 and "--budget" in r.output


@pytest.mark.parametrize("args,match", [
    (["run", "-a", "nope=1"], "no selected scenario has an axis 'nope'"),
    (["run", "-a", "bytes=pow2:20"], "expected pow2:START..STOP"),
    (["run", "transfers", "-a", "strategy=zerocopy"], "expected one of pageable, pinned, write-combined"),
    (["run", "no-such-scenario"], "unknown scenario 'no-such-scenario'"),
    (["run", "-a", "bytes"], "expected NAME=VALUES"),
    (["run", "-o", "out.txt", "transfers"], "expected a file ending in .parquet, .csv or .json"),
    (["show", "missing.parquet"], "no such result file"),
])
def test_usage_errors_exit_2_without_traceback(runner, args, match, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("UMPROF_NO_GPU", "1")
    r = runner.invoke(cli, args)
    assert r.exit_code == 2, r.output
    assert match in r.output and "Traceback" not in r.output
    assert r.output.startswith("umprof: error: ")


def test_click_usage_errors_exit_2(runner):
    r = runner.invoke(cli, ["run", "--min-samples", "0"])
    assert r.exit_code == 2 and "--min-samples" in r.output


@pytest.mark.parametrize("args,match", [
    (["run", "--min-samples", "0"], "'--min-samples'"),
    (["advise", "--runs", "abc", "--", "true"], "'--runs': 'abc' is not a valid integer"),
    (["run", "--no-such-option"], "No such option '--no-such-option'"),
    (["no-such-command"], "No such command 'no-such-command'"),
])
def test_click_usage_errors_are_one_line(runner, args, match):
    r = runner.invoke(cli, args)
    assert r.exit_code == 2 and match in r.output
    assert r.output.startswith("umprof: error: ") and r.output.count("\n") == 1 and "Usage:" not in r.output


@pytest.mark.parametrize("args, match", [
    (["run", "--device", "0,x"], "expected a GPU index, 'all' or a list such as 0,1"),
    (["run", "--device", "1,1"], "GPU 1 is listed twice"),
    (["devices", "--device", "gpu0"], "expected a GPU index"),
    (["recommend", "--device", "-2"], "expected a GPU index"),
])
def test_bad_device_lists_exit_2(runner, args, match):
    r = runner.invoke(cli, args)
    assert r.exit_code == 2 and "--device" in r.output and match in r.output and "Traceback" not in r.output


@pytest.mark.parametrize("args", [["trace", "transfers", "--device", "all"], ["run", "transfers", "--ncu", "--device", "0,1"]])
def test_one_gpu_commands_refuse_several(runner, args, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    r = runner.invoke(cli, args)
    assert r.exit_code == 2 and "uses one GPU" in r.output and r.output.count("\n") == 1


def test_a_bad_pair_is_a_usage_error(runner, monkeypatch):
    monkeypatch.setenv("UMPROF_NO_GPU", "1")
    r = runner.invoke(cli, ["run", "p2p", "-a", "pair=0>0"])
    assert r.exit_code == 2 and "option '-a pair=...' (scenario 'p2p'): a pair needs two different GPUs" in r.output


def test_mpi_without_mpi4py_is_one_line_exit_3(runner, monkeypatch, tmp_path):
    import sys

    monkeypatch.setitem(sys.modules, "mpi4py", None)
    monkeypatch.setenv("OMPI_COMM_WORLD_RANK", "0")
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "2")
    r = runner.invoke(cli, ["run", "transfers", "-o", str(tmp_path / "r.parquet")])
    assert r.exit_code == 3 and r.output.count("\n") == 1
    assert "started by Open MPI as rank 0 of 2, but mpi4py cannot be imported" in r.output
    r = runner.invoke(cli, ["run", "transfers", "--mpi", "off", "-o", str(tmp_path / "r.parquet")], env={"UMPROF_NO_GPU": "1"})
    assert r.exit_code == 3 and "no GPU" in r.output  # --mpi off: a lone process, which then finds no GPU


def test_no_gpu_is_one_line_exit_3(runner, monkeypatch, tmp_path):
    monkeypatch.setenv("UMPROF_NO_GPU", "1")
    out = tmp_path / "r.parquet"
    r = runner.invoke(cli, ["run", "transfers", "-o", str(out)])
    assert r.exit_code == 3
    assert r.output.count("\n") == 1 and "no GPU" in r.output and "umprof[gpu]" in r.output
    assert not out.exists()


def test_no_pycuda_says_what_to_install(runner, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def fake_import(name, *a, **k):
        if name.startswith("pycuda"):
            raise ModuleNotFoundError("No module named 'pycuda'", name="pycuda")
        return real_import(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    r = runner.invoke(cli, ["devices"])
    assert r.exit_code == 3 and "pycuda is not installed: pip install 'umprof[gpu]'" in r.output


def test_existing_output_is_refused_before_the_gpu(runner, tmp_path, monkeypatch):
    out = tmp_path / "r.json"
    out.write_text("{}")
    r = runner.invoke(cli, ["run", "transfers", "-o", str(out)])
    assert r.exit_code == 2 and "already exists; pass --force" in r.output


def test_show_real_result(runner):
    r = runner.invoke(cli, ["show", str(REAL)])
    assert r.exit_code == 0, r.output
    for text in ("NVIDIA H200", "PCIe 5.0 x16", "transfers (transfer)", "host-strategies (lifecycle)",
                 "pinned", "managed-prefetch", "skipped:"):
        assert text in r.output


def test_show_one_scenario_and_unknown_one(runner):
    r = runner.invoke(cli, ["show", str(REAL), "-s", "transfers"])
    assert r.exit_code == 0 and "host-strategies (lifecycle)" not in r.output
    r = runner.invoke(cli, ["show", str(REAL), "-s", "nope"])
    assert r.exit_code == 2 and "has no scenario 'nope'" in r.output


def test_version(runner):
    r = runner.invoke(cli, ["--version"])
    assert r.exit_code == 0 and "umprof" in r.output

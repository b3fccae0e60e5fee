"""`umprof advise -- CMD`: the program run under a fake nsys (a script on PATH that runs it and writes a committed
trace as its export) and untraced, through click's CliRunner; and what bad input to `advise` gets."""

import json
import os
import stat
import sys

import pytest
from click.testing import CliRunner

from tests.unit.nsight.test_trace_db import fixture
from umprof.cli import cli
from umprof.core.errors import UsageError
from tests.unit.data import TRACES, unpacked
from umprof.nsight.nsys import profile_command, traces_torch_ops
from umprof.api import _torch_without_ops
from umprof.nsight.program import ProgramFailed, run_program, uses_managed_memory

SLEEP = [sys.executable, "-c", "import time; time.sleep(0.05)"]
FAKE_NSYS = """#!{python}
import os, shutil, subprocess, sys
args = sys.argv[1:]
with open(os.environ["FAKE_NSYS_LOG"], "a") as log:
    log.write(" ".join(args) + "\\n")
if args[:2] == ["profile", "--help"]:
    print(os.environ.get("FAKE_NSYS_HELP", "usage: nsys profile [<args>] [application]"))
    sys.exit(0)
if args[0] == "profile":
    i = args.index("-o")
    code = subprocess.call(args[i + 2:])
    with open(args[i + 1] + ".nsys-rep", "wb") as f:
        f.write(b"\\x00\\x01fake report\\xff")
    sys.exit(code)
if args[0] == "export":
    shutil.copy(os.environ["FAKE_NSYS_TRACE"], args[args.index("--output") + 1])
"""


@pytest.fixture
def fake_nsys(tmp_path, monkeypatch):
    """A fake nsys on PATH: it runs the program, writes a report, and exports the committed vectorAdd trace; the
    command lines it got are in FAKE_NSYS_LOG."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    exe = bin_dir / "nsys"
    exe.write_text(FAKE_NSYS.format(python=sys.executable))
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("UMPROF_NSYS", raising=False)
    monkeypatch.setenv("FAKE_NSYS_LOG", str(tmp_path / "nsys.log"))
    monkeypatch.setenv("FAKE_NSYS_TRACE", str(fixture("vectorAdd")))
    return tmp_path / "nsys.log"


def test_a_program_is_traced_once_and_timed_untraced(fake_nsys, tmp_path):
    r = CliRunner().invoke(cli, ["advise", "--runs", "3", "-o", str(tmp_path / "kept"), "--json", "--", *SLEEP])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    runs = doc["runs"]
    assert len(runs["untraced_s"]) == 3 and all(0.05 <= s < 5 for s in runs["untraced_s"])
    assert runs["wall_s"] == sorted(runs["untraced_s"])[1] and runs["um_faults"] is False
    assert doc["trace"] == str(tmp_path / "kept.sqlite") and (tmp_path / "kept.sqlite").is_file()
    calls = fake_nsys.read_text().splitlines()
    profile = next(c for c in calls if c.startswith("profile"))
    # the command nsys.profile_command builds, the OS runtime's calls traced and no unified-memory faults
    assert profile == " ".join(profile_command("nsys", tmp_path / "kept", SLEEP, um_faults=False, os_runtime=True)[1:])
    assert "-t cuda,nvtx,osrt --cuda-graph-trace=node" in profile and "page-faults" not in profile
    assert len([c for c in calls if c.startswith("profile")]) == 1  # vectorAdd uses no managed memory
    # progress on stderr, each run with its time
    assert "untraced run 3 of 3:" in r.stderr and "traced run:" in r.stderr


def test_the_advice_says_both_times(fake_nsys):
    r = CliRunner().invoke(cli, ["advise", "--runs", "1", "--", *SLEEP])
    assert r.exit_code == 0, r.output
    line = r.stdout.splitlines()[0]
    assert line.startswith("traced ") and "(first CUDA call to last GPU work), untraced " in line
    assert line.endswith("(start to exit, one run)")


def test_a_program_on_managed_memory_is_traced_again_with_faults(fake_nsys, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_NSYS_TRACE", str(fixture("managed_loop", tmp_path)))
    said = []
    ran = run_program(SLEEP, runs=2, prefix=tmp_path / "m", say=said.append)
    assert ran.um_faults and ran.managed_why == "cudaMallocManaged calls"
    profiles = _profiles(fake_nsys)
    assert len(profiles) == 2 and "page-faults" not in profiles[0]
    assert profiles[1] == " ".join(profile_command("nsys", tmp_path / "m", SLEEP, um_faults=True, os_runtime=True)[1:])
    assert "--cuda-um-cpu-page-faults=true --cuda-um-gpu-page-faults=true" in profiles[1]
    assert any("managed memory (cudaMallocManaged calls): tracing it again" in s for s in said)
    assert len(ran.untraced_s) == 2


def _profiles(log) -> list:
    return [c for c in log.read_text().splitlines() if c.startswith("profile") and "--help" not in c]


@pytest.mark.parametrize("help_text, again", [("  --pytorch=  Enable PyTorch annotations", True),
                                              ("usage: nsys profile [<args>]", False)])
def test_a_pytorch_program_is_traced_again_with_its_operators(fake_nsys, tmp_path, monkeypatch, help_text, again):
    """train_loader's nsys trace (a PyTorch program, none of torch's operators recorded): traced again with
    --pytorch=autograd-nvtx where nsys takes it, else said that its host work is not priced on the GPU."""
    traces_torch_ops.cache_clear()
    monkeypatch.setenv("FAKE_NSYS_TRACE", str(unpacked(TRACES / "torch" / "h100-train_loader.sqlite", tmp_path)))
    monkeypatch.setenv("FAKE_NSYS_HELP", help_text)
    said = []
    ran = run_program(SLEEP, runs=1, prefix=tmp_path / "t", say=said.append, torch_without_ops=_torch_without_ops)
    profiles = _profiles(fake_nsys)
    assert ran.torch_ops is again and not ran.um_faults and bool(ran.torch_why) is again
    assert len(profiles) == 1 + again and "--pytorch" not in profiles[0]
    if again:
        assert profiles[1] == " ".join(profile_command("nsys", tmp_path / "t", SLEEP, um_faults=False,
                                                       os_runtime=True, torch_ops=True)[1:])
        assert "--pytorch=autograd-nvtx" in profiles[1] and ran.to_dict()["torch_ops"] is True
        assert any("without its operators: tracing it again with torch's operators as NVTX ranges" in s for s in said)
    else:
        assert any("cannot annotate them (no --pytorch)" in s for s in said)
    traces_torch_ops.cache_clear()


def test_torch_without_ops_is_a_pytorch_trace_that_records_none_of_its_operators(tmp_path):
    assert "PyTorch's" in _torch_without_ops(unpacked(TRACES / "torch" / "h100-train_loader.sqlite", tmp_path))
    assert _torch_without_ops(unpacked(TRACES / "torch" / "h100-cupy_batches.sqlite", tmp_path)) == ""
    assert _torch_without_ops(fixture("vectorAdd")) == ""


def test_advise_run_asks_whether_a_trace_is_a_pytorch_program_without_its_operators(fake_nsys, tmp_path,
                                                                                    monkeypatch):
    """The CLI's run of a PyTorch program traces it again with its operators (api.advise_run passes the question)."""
    traces_torch_ops.cache_clear()
    monkeypatch.setenv("FAKE_NSYS_TRACE", str(unpacked(TRACES / "torch" / "h100-train_loader.sqlite", tmp_path)))
    monkeypatch.setenv("FAKE_NSYS_HELP", "  --pytorch=  Enable PyTorch annotations")
    r = CliRunner().invoke(cli, ["advise", "--runs", "1", "--", *SLEEP])
    traces_torch_ops.cache_clear()
    assert r.exit_code == 0, r.output
    assert "--pytorch=autograd-nvtx" in _profiles(fake_nsys)[1]
    assert r.stdout.splitlines()[0].endswith("(start to exit, one run); traced with torch's operators")


def test_managed_memory_is_known_by_its_calls_or_migrations(tmp_path):
    assert uses_managed_memory(fixture("vectorAdd")) == ""
    assert uses_managed_memory(fixture("UnifiedMemoryStreams", tmp_path)) != ""


def test_a_failing_program_is_one_line_with_its_exit_code(fake_nsys):
    failing = [sys.executable, "-c", "import sys; print('warming up', file=sys.stderr); "
                                     "sys.exit('out of memory: 3 GiB wanted')"]
    r = CliRunner().invoke(cli, ["advise", "--", *failing])
    assert r.exit_code == 1 and "Traceback" not in r.output
    (line,) = r.stderr.strip().splitlines()[-1:]
    assert "exited with code 1: out of memory: 3 GiB wanted" in line and line.startswith("umprof: error:")
    with pytest.raises(ProgramFailed, match="its traced run exited with code 1"):
        run_program(failing, runs=1, prefix=fake_nsys.parent / "f")


@pytest.mark.parametrize("args, says", [
    (["advise"], "expected a TRACE"),
    (["advise", "x.sqlite", "--", "./app"], "give one"),
    (["advise", "--wall", "1", "--", "./app"], "option '--wall'"),
    (["advise", "x.sqlite", "-o", "kept"], "option '-o'"),
    (["advise", "--runs", "0", "--", "./app"], "option '--runs': expected 1 or more"),
    (["advise", "x.sqlite", "--wall", "-1"], "option '--wall': expected the program's untraced wall time"),
    (["advise", "x.sqlite", "y.sqlite", "--wall", "1"], "option '--wall': gives one program's untraced wall time"),
    (["advise", "x.sqlite", "--workers", "2"], "option '--workers': applies to a job's several traces"),
    (["advise", "--links", "x.parquet", "--", "./app"], "option '--links': applies to a job's several traces"),
    (["advise", "x.sqlite", "--runs", "5"], "option '--runs': times a program run after --"),
])
def test_the_runners_options_are_checked(args, says):
    r = CliRunner().invoke(cli, args)
    assert r.exit_code == 2 and says in r.output and "Traceback" not in r.output


def test_wall_is_the_untraced_time_of_a_trace():
    r = CliRunner().invoke(cli, ["advise", str(fixture("vectorAdd")), "--wall", "0.5"])
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines()[0].endswith("untraced 500 ms (given by --wall)")
    with pytest.raises(UsageError, match="wall_s: expected the program's untraced wall time"):
        from umprof import api

        api.advise(fixture("vectorAdd"), wall_s=-1.0)


def test_a_folder_is_a_job_that_takes_no_wall_time(tmp_path):
    r = CliRunner().invoke(cli, ["advise", str(tmp_path), "--wall", "1"])
    assert r.exit_code == 2 and "option '--wall': gives one program's untraced wall time; a job's traces take none" \
        in r.output

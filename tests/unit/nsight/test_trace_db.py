"""Reading Nsight Systems SQLite exports: real traces of the applications in benchmarks/apps and of
NVIDIA's cuda-samples (H100, 2026-11-25, Nsight Systems 2025.3.1, trimmed to the tables umprof reads),
and what bad input gets."""

import gzip
import os
import random
import re
import stat

import pytest
from click.testing import CliRunner

from tests.unit.data import ROOT, unpacked
from tests.unit.model import traced
from umprof.cli import cli
from umprof.core.errors import ToolUnavailable, UsageError
from umprof.nsight import trace_db
from umprof.nsight.trace_db import export_sqlite, open_trace

TRACES = ROOT / "tests" / "fixtures" / "traces"


def fixture(name, tmp_path=None, gpu="h100"):
    """A committed trace as a .sqlite file (most are committed xz-compressed: decompressed into ``tmp_path``, or once
    a session where none is given)."""
    if tmp_path is None:
        return traced.path(name, gpu)
    return unpacked(TRACES / f"{gpu}-{name}.sqlite", tmp_path)


def test_a_process_names_the_program_its_main_thread_runs():
    """batches (benchmarks/apps/verification) ran as a shell wrapper that execs python3: the trace names the process by the
    command it was started as, its main thread by the interpreter (ThreadNames); a trace without thread names (a
    trimmed fixture) has the process's name for both."""
    t = open_trace(fixture("batches", gpu="h200"))
    (row,) = t.processes[t.processes["name"].str.endswith("/batches")].itertuples()
    assert row.program == "python3"
    t = open_trace(fixture("stream_loop"))
    assert (t.processes["program"] == t.processes["name"]).all()


def test_a_real_trace_reads_as_tables():
    t = open_trace(fixture("stream_loop"))
    assert list(t.gpus["name"]) == ["NVIDIA H100 80GB HBM3"] and t.gpus["memory_bytes"].iloc[0] > 80e9
    c = t.copies
    assert len(c) == 80 and set(c["kind"]) == {"h2d", "d2h"}
    assert set(c.loc[c["kind"] == "h2d", "src"]) == {"pageable"} and set(c.loc[c["kind"] == "d2h", "dst"]) == {"pageable"}
    assert len(t.kernels) == 40 and (t.kernels["end"] > t.kernels["start"]).all()
    assert "cudaMemcpy" in set(t.calls["name"]) and "cudaLaunchKernel" in set(t.calls["name"])
    assert t.kernels["pid"].nunique() == 1 and t.kernels["pid"].iloc[0] == t.calls["pid"].mode()[0]


def test_unified_memory_migrations_are_their_own_kind(tmp_path):
    t = open_trace(fixture("managed_loop", tmp_path))
    kinds = t.copies["kind"].value_counts()
    assert kinds["um_h2d"] > 1000 and kinds["um_d2h"] > 100 and "h2d" not in kinds
    assert len(t.gpu_faults) > 0 and t.copies["address"].notna().all()


EXPECTED = ("expected an Nsight Systems .nsys-rep report or the .sqlite that `nsys export --type sqlite` makes of it, "
            "or torch.profiler's JSON trace (.json or .json.gz)")


def test_what_is_expected_is_said_once_naming_every_kind_read():
    assert trace_db.EXPECTED == EXPECTED  # every message's words, torch.profiler's JSON among them
    assert trace_db.NSYS_SUFFIXES == (".nsys-rep", ".sqlite")


@pytest.mark.parametrize("name, content, says", [
    ("app.sqlite", b"", "an empty file, not a trace"),
    ("app.sqlite", b"hello, I am text\n", "a text file, not a trace"),
    ("x.sqlite", random.Random(0).randbytes(1 << 20), "not an SQLite file (its first bytes are not SQLite's header)"),
    # binary that happens to open with a brace is not JSON: said by its suffix, not read as a torch.profiler trace
    ("x.sqlite", b"{" + random.Random(0).randbytes(4000), "not an SQLite file (its first bytes are not SQLite's header)"),
    ("x.nsys-rep", b"a report, I promise\n" * 100, "a text file, not a trace"),
    ("x.nsys-rep", b'{"a": 1}', "JSON, but not a Chrome trace"),
    ("x.zip", b"PK\x03\x04" + bytes(64), "a zip archive, not a trace"),
    # a gzip file goes to the torch.profiler reader, which says what it holds: never to content_of
    ("x.sqlite.gz", gzip.compress(b"hello, I am text\n", mtime=0), "not valid JSON"),
])
def test_what_is_not_a_trace_is_one_line_naming_the_file(tmp_path, name, content, says):
    bad = tmp_path / name
    bad.write_bytes(content)
    with pytest.raises(UsageError) as e:
        open_trace(bad)
    assert str(e.value).startswith(f"{bad}: {says}")
    assert str(e.value).endswith(EXPECTED) or "JSON" in says
    assert "\n" not in str(e.value)
    r = CliRunner().invoke(cli, ["advise", str(bad)])
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert r.output.strip() == f"umprof: error: {e.value}"


def test_a_directory_or_a_missing_file_is_one_line_naming_it(tmp_path):
    # the command reads a folder as a job's traces: an empty one is said so; the API's open_trace takes one file
    r = CliRunner().invoke(cli, ["advise", str(tmp_path)])
    assert r.exit_code == 2 and r.output.strip().startswith(f"umprof: error: {tmp_path}: a folder with no traces in it")
    assert "\n" not in r.output.strip()
    for path, says in ((tmp_path, "a directory, not a trace file"), (tmp_path / "gone.sqlite", "no such trace file")):
        if path != tmp_path:
            r = CliRunner().invoke(cli, ["advise", str(path)])
            assert r.exit_code == 2 and r.output.strip() == f"umprof: error: {path}: {says}; {EXPECTED}"
        from umprof import api

        with pytest.raises(UsageError, match=re.escape(f"{path}: {says}")):
            api.advise(path)


def test_a_text_file_named_a_report_is_refused_before_nsys_is_looked_for(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no nsys anywhere: the file's own bytes decide
    monkeypatch.delenv("UMPROF_NSYS", raising=False)
    rep = tmp_path / "x.nsys-rep"
    rep.write_text("not a report\n")
    with pytest.raises(UsageError, match=re.escape(f"{rep}: a text file, not a trace")):
        open_trace(rep)


def test_a_truncated_trace_and_a_foreign_database_are_refused(tmp_path):
    cut = tmp_path / "cut.sqlite"
    cut.write_bytes(fixture("stream_loop").read_bytes()[:20000])
    r = CliRunner().invoke(cli, ["advise", str(cut)])
    assert r.exit_code == 2 and str(cut) in r.output and "Traceback" not in r.output
    import sqlite3

    other = tmp_path / "other.sqlite"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.commit()
    with pytest.raises(UsageError, match="not an Nsight Systems export"):
        open_trace(other)
    r = CliRunner().invoke(cli, ["advise", str(tmp_path / "missing.sqlite")])
    assert r.exit_code == 2 and "no such trace file" in r.output


def _fake_nsys(tmp_path, body: str):
    exe = tmp_path / "nsys"
    exe.write_text("#!/bin/sh\n" + body)
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return str(exe)


def test_a_report_is_exported_once_beside_it_and_nothing_half_is_left(tmp_path, monkeypatch):
    rep = tmp_path / "app.nsys-rep"
    rep.write_bytes(b"\x00\x01NSYS report\xff")
    failing = _fake_nsys(tmp_path, 'echo partial > "$7"\necho "broken report" >&2\nexit 1\n')  # $7: --output's
    with pytest.raises(UsageError, match="could not export"):
        export_sqlite(rep, failing)
    assert not (tmp_path / "app.sqlite").exists() and not list(tmp_path.glob(".app*"))
    src = fixture("vectorAdd")
    working = _fake_nsys(tmp_path, f'cp "{src}" "$7"\n')
    out = export_sqlite(rep, working)
    assert out == tmp_path / "app.sqlite" and open_trace(rep, working).copies.shape[0] == 3
    os.remove(working)  # a second read takes the export kept beside the report
    assert open_trace(rep, working).kernels.shape[0] == 1


def test_a_report_without_nsys_says_what_to_install(tmp_path, monkeypatch):
    rep = tmp_path / "app.nsys-rep"
    rep.write_bytes(b"\x00\x01NSYS report\xff")
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("UMPROF_NSYS", raising=False)
    import umprof.nsight.nsys as nsysmod

    monkeypatch.setattr(nsysmod, "_INSTALL_GLOBS", ())
    with pytest.raises(ToolUnavailable, match=re.escape(f"{rep}: an Nsight Systems report, read through its SQLite "
                                                        "export, which needs nsys: Nsight Systems' nsys was not found")):
        open_trace(rep)
    r = CliRunner().invoke(cli, ["advise", str(rep)])
    assert r.exit_code == 3 and "nsys" in r.output and "Traceback" not in r.output


@pytest.mark.parametrize("name, content, says", [
    ("x.nsys-rep", b'{"traceEvents": []}', "a torch.profiler trace without CUDA activity"),
    # mtime=0: gzip stamps the current second, and pytest-xdist's workers must collect identical parameters.
    ("x.sqlite", gzip.compress(b"SQLite format 3\x00" + bytes(100), mtime=0), "a gzipped SQLite file: decompress it"),
], ids=["json-named-nsys-rep", "gzip-named-sqlite"])
def test_json_and_gzip_go_to_the_torch_profiler_reader(tmp_path, name, content, says):
    """JSON or gzip content is read as torch.profiler's trace, whose reader names what it found instead."""
    bad = tmp_path / name
    bad.write_bytes(content)
    with pytest.raises(UsageError) as e:
        open_trace(bad)
    assert str(e.value).startswith(f"{bad}: {says}") and "\n" not in str(e.value)

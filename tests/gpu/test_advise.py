"""`umprof advise` on applications traced here: a pageable loop and a managed one, each seen for
what it is, and advised from the shipped calibration of this GPU's model."""

import json
import os
import subprocess
import sys
from pathlib import Path


from umprof.model.advice import thresholds as th
from umprof import api
from umprof.model import advise
from umprof.nsight import nsys as nsysmod

ROOT = Path(__file__).resolve().parents[2]
APPS = ROOT / "benchmarks" / "apps"


def _trace(nsys, tmp_path, app, *args):
    exe = tmp_path / Path(app).name  # app: a program of benchmarks/apps ('stream_loop', 'verification/refine')
    subprocess.run(["nvcc", "-O2", "-arch=sm_90", "-std=c++17", "-o", str(exe), str(APPS / f"{app}.cu")], check=True)
    rep = exe
    subprocess.run(nsysmod.profile_command(nsys, rep, [str(exe), *args]), check=True, capture_output=True)
    return Path(f"{rep}.nsys-rep")


def test_a_pageable_loop_is_seen_and_advised_away_from_pageable(nsys, tmp_path):
    rep = _trace(nsys, tmp_path, "stream_loop", "--iters", "12", "--in", "32", "--out", "32")
    (adv,) = api.advise(rep)
    app = adv.app
    assert app.strategy == "pageable" and app.loop is not None and app.loop.iterations in (12, 13)
    p = app.loop.per_iteration
    assert p["h2d_bytes"] == p["d2h_bytes"] == 32 * 2**20
    f = app.flows.iloc[0]
    assert f["host_kind"] == "pageable" and f["bytes"] == 32 * 2**20 and f["sync"]
    assert Path(str(rep).replace(".nsys-rep", ".sqlite")).is_file()  # exported once, kept beside it
    loop = adv.loop_advice
    assert loop.strategy != "pageable" and loop.saving_s > 0
    doc = json.loads(subprocess.run([sys.executable, "-m", "umprof", "advise", str(rep), "--json"], capture_output=True,
                                    text=True, check=True, cwd=ROOT).stdout)
    assert doc["totals"]["h2d_bytes"] >= 12 * 32 * 2**20 and doc["advice"][0]["strategy"] == loop.strategy


def test_a_managed_loop_without_prefetch_is_seen_with_its_migrations(nsys, tmp_path):
    rep = _trace(nsys, tmp_path, "managed_loop", "--iters", "8", "--in", "64")
    (adv,) = api.advise(rep)
    app = adv.app
    assert app.strategy == "managed" and app.um["managed"] and not app.um["prefetch"]
    assert app.um["h2d_bytes"] >= 64 * 2**20 and app.um["gpu_faults"] > 0
    # its buffers (64 MiB in, 1 MiB out) read whole though the trace may not hold every migration of them
    # (application.managed_footprint), and the host rewriting a tenth of the input each step
    assert adv.workload is not None and 64 * 2**20 <= adv.workload.bytes <= 68 * 2**20, adv.mapping
    assert 0.07 < adv.workload.host_writes < 0.14, adv.workload


def test_a_trace_without_cuda_is_refused_in_one_line(nsys, tmp_path):
    rep = tmp_path / "true"
    subprocess.run(nsysmod.profile_command(nsys, rep, ["/bin/true"], um_faults=False), check=True, capture_output=True)
    r = subprocess.run([sys.executable, "-m", "umprof", "advise", f"{rep}.nsys-rep"], capture_output=True, text=True,
                       cwd=ROOT, env=dict(os.environ))
    assert r.returncode == 2 and "no CUDA activity" in r.stderr and "Traceback" not in r.stderr


def test_a_loop_of_many_launches_over_its_frame_is_priced_as_as_many_passes(nsys, tmp_path):
    # refine (benchmarks/apps/verification): each frame copied in from malloc'd memory, 16 launches over it, copied back.
    # Read as one pass, the ways that leave the frame in host memory had ranked among the first, in the tie; each
    # launch reads it again from host memory
    rep = _trace(nsys, tmp_path, "verification/refine", "--frames", "6", "--passes", "16")
    (adv,) = api.advise(rep)
    assert adv.app.strategy == "pageable" and adv.app.loop.per_iteration["kernels"] == 16
    assert 12 <= adv.workload.reuse <= 16, adv.mapping
    predicted = {r["strategy"]: r["predicted_s"] for r in adv.ranking}
    for way in ("mapped", "zero-copy", "managed-advise-accessed-by-gpu"):
        assert predicted[way] > predicted["pinned"], way
    assert adv.loop_advice.strategy not in ("mapped", "zero-copy", "managed-advise-accessed-by-gpu")


def test_a_managed_program_whose_host_samples_its_pages_is_priced_its_stalls(nsys, tmp_path):
    # particles (benchmarks/apps/verification): a managed array the GPU updates each step while the host reads every
    # 4096th record between kernels, each touch waiting for its page to come back from the GPU. The trace measures
    # those stalls where the GPU idles; priced, the ways that copy save them and the managed ways that leave the pages
    # on the GPU keep them
    rep = _trace(nsys, tmp_path, "verification/particles", "--mib", "128", "--steps", "8")
    (adv,) = api.advise(rep)
    assert adv.app.strategy == "managed" and adv.app.um["cpu_faults"] > 0
    assert adv.workload.bytes == 128 * 2**20, adv.mapping  # its one array
    h = adv.app.host_faults
    assert h.stretches >= adv.app.loop.iterations - 1 and h.seconds > 0.3 * adv.app.wall_s, h
    assert any("faulting back from the GPU" in x for x in adv.limits), adv.limits
    by = {r["strategy"]: r["saving_s"] for r in adv.ranking}
    assert not adv.loop_advice.strategy.startswith("managed-advise-prefer-gpu")
    assert by["pinned"] > by["managed-advise-prefer-gpu"] + 0.5 * h.seconds * th.TRACED_FAULT_SHARE


def test_a_program_run_by_advise_is_traced_once_and_timed_untraced(nsys, tmp_path):
    """`umprof advise -- CMD`: the program traced under nsys, run untraced, advised against the untraced median; a
    managed program is traced again with page faults, a pageable one is not."""
    for app, args, managed in (("stream_loop", ["--iters", "12", "--in", "32", "--out", "32"], False),
                               ("managed_loop", ["--iters", "8", "--in", "64"], True)):
        exe = tmp_path / app
        subprocess.run(["nvcc", "-O2", "-arch=sm_90", "-std=c++17", "-o", str(exe), str(APPS / f"{app}.cu")],
                       check=True)
        r = subprocess.run([sys.executable, "-m", "umprof", "advise", "--runs", "2", "--json", "-o",
                            str(tmp_path / f"{app}-trace"), "--", str(exe), *args],
                           capture_output=True, text=True, cwd=ROOT)
        assert r.returncode == 0, r.stderr[-2000:]
        doc = json.loads(r.stdout)
        runs = doc["runs"]
        assert len(runs["untraced_s"]) == 2 and all(t > 0 for t in runs["untraced_s"]), runs
        assert runs["um_faults"] is managed, runs
        assert (tmp_path / f"{app}-trace.sqlite").is_file() and doc["advice"], doc.keys()
        assert "Traceback" not in r.stderr


TORCH_LOOP = """
import torch
x = torch.randn(256, 1024)
w = torch.randn(1024, 1024, device="cuda")
for _ in range(40):
    b = (x * 2 + 1).to("cuda")  # host work on a host tensor, then its upload
    y = torch.relu(b @ w)
    torch.cuda.synchronize()
"""


def test_a_pytorch_program_run_by_advise_is_traced_again_with_its_operators(nsys, tmp_path):
    """`umprof advise -- python3 prog.py` on a PyTorch loop: its first trace shows PyTorch's kernels but none of
    torch's operators, so it is traced again with nsys's --pytorch=autograd-nvtx, whose trace records them (the
    host's `aten::mul` and `aten::add` among them) and says so."""
    import pytest

    from umprof.nsight.trace_db import open_trace

    if not nsysmod.traces_torch_ops(nsys):
        pytest.skip(f"{nsys} takes no --pytorch: nothing to trace torch's operators with")
    pytest.importorskip("torch")
    prog = tmp_path / "prog.py"
    prog.write_text(TORCH_LOOP)
    r = subprocess.run([sys.executable, "-m", "umprof", "advise", "--runs", "1", "--json", "-o",
                        str(tmp_path / "torch-trace"), "--nsys", nsys, "--", sys.executable, str(prog)],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-2000:]
    doc = json.loads(r.stdout)
    assert doc["runs"]["torch_ops"] is True and doc["runs"]["um_faults"] is False, doc["runs"]
    said = " ".join(r.stderr.split())  # the progress lines, as the terminal's width wrapped them
    assert "tracing it again with torch's operators as NVTX ranges" in said, r.stderr[-2000:]
    names = open_trace(tmp_path / "torch-trace.sqlite").ranges["name"].astype(str)
    ops = set(names[names.str.startswith("aten::")].str.split(",").str[0])
    assert {"aten::mul", "aten::add"} <= ops, sorted(ops)[:20]
    assert doc["framework"]["name"] == "pytorch" and "aten" in doc["framework"]["evidence"], doc["framework"]
    assert doc["advice"] and doc["time_now"]

"""benchmarks/apps/run_apps.py without a GPU: a mode whose run fails is recorded and left out, and the
other modes' runs go on (one failing mode once cost a whole run's timings)."""

import json

import pytest

from tests.unit.data import load_script


def _run_apps():
    return load_script("benchmarks/apps/run_apps.py")


def test_a_failing_mode_is_recorded_and_the_others_go_on(tmp_path):
    mod = _run_apps()
    modes = ["pageable", "pinned", "pageable-registered"]
    doc = {"apps": {"pycuda_loop": {"own_mode": "pageable",
                                    "modes": {m: {"wall_s": [], "loop_s": [], "checksum": None} for m in modes}}}}
    calls = []

    def run(cmd):
        calls.append(cmd[-1])
        if cmd[-1] == "pageable-registered":
            raise mod.RunFailed("app --mem pageable-registered failed (1): SystemError")
        return {"wall_s": 1.0, "loop_s": 0.5, "checksum": 42.0}

    progress = tmp_path / "apps.json"
    mod.time_modes(doc, {"pycuda_loop": ["app"]}, 3, progress, run=run)
    rec = doc["apps"]["pycuda_loop"]["modes"]
    assert rec["pageable"]["wall_s"] == [1.0] * 3 and rec["pinned"]["checksum"] == 42.0
    assert rec["pageable-registered"]["wall_s"] == [] and "SystemError" in rec["pageable-registered"]["error"]
    assert calls.count("pageable-registered") == 1  # not tried again in later rounds
    assert calls[:3] == modes and calls[3:5] == ["pinned", "pageable"]  # the second round in reverse order
    assert json.loads(progress.read_text()) == doc  # the rounds so far are on disk


@pytest.mark.nvcc
def test_only_builds_the_applications_it_names(tmp_path):
    # nvcc compiles them here (CI has it): the two applications named, and no other
    mod = _run_apps()
    cmds = mod.build(tmp_path, None, ["upload_once", "table_loop"])
    assert list(cmds) == ["upload_once", "table_loop"]
    assert all((tmp_path / "bin" / name).is_file() for name in cmds)
    assert not (tmp_path / "bin" / "stream_loop").exists()


def test_the_new_applications_are_timed_in_modes_they_can_run():
    mod = _run_apps()
    for name in ("upload_once", "table_loop", "readback_loop"):
        assert mod.APPS[name][0] == "pageable"  # as written
        assert "pinned-pipelined" not in mod.APPS[name]  # its input and output differ in size
    assert "managed-advise-read-mostly" in mod.APPS["table_loop"]  # its kernel only reads the table
    assert mod.APPS["compute_loop"] == mod.ALL  # input and output of one size: every mode, pipelined too


def test_the_parts_a_program_times_are_kept_and_checksums_compared(tmp_path):
    mod = _run_apps()
    doc = {"apps": {"upload_once": {"own_mode": "pageable", "modes": {
        m: {"wall_s": [], "loop_s": [], "checksum": None} for m in ("pageable", "pinned", "mapped")}}}}
    marks = {"alloc": 0.2, "write": 0.5, "loop": 0.6, "free": 0.65}
    sums = {"pageable": 42.0, "pinned": 42.0 * (1 + 1e-12), "mapped": 41.0}

    def run(cmd):
        return {"wall_s": 1.0, "loop_s": 0.7, "checksum": sums[cmd[-1]], "marks_s": marks}

    mod.time_modes(doc, {"upload_once": ["app"]}, 2, tmp_path / "modes.json", run=run)
    assert doc["apps"]["upload_once"]["modes"]["pinned"]["marks_s"] == [marks, marks]
    bad = mod.checksums_disagree(doc)
    assert doc["apps"]["upload_once"]["checksums_agree"] is False
    assert len(bad) == 1 and "mapped" in bad[0] and "pinned" not in bad[0]  # a few parts in 1e12 agree


@pytest.mark.nvcc
def test_the_idioms_are_one_binary_an_application_each(tmp_path):
    # nvcc compiles idioms.cu once (thrust's headers come with it); each idiom is an application of its own,
    # run as `idioms IDIOM`, in the modes it can allocate (the graph's own: pinned, which capture needs)
    mod = _run_apps()
    cmds = mod.build(tmp_path, None, ["thrust", "graph"])
    assert cmds == {"thrust": [str(tmp_path / "bin" / "idioms"), "thrust"],
                    "graph": [str(tmp_path / "bin" / "idioms"), "graph"]}
    assert (tmp_path / "bin" / "idioms").is_file()
    assert mod.APPS["graph"][0] == "pinned" and "pageable" not in mod.APPS["graph"]
    assert all(mod.APPS[n][0] == "pageable" for n in ("thrust", "pitched", "pool", "threads"))


@pytest.mark.nvcc
def test_the_held_out_shapes_are_the_frame_loop_with_other_settings(tmp_path):
    mod = _run_apps()
    cmds = mod.build(tmp_path, None, ["small_frames", "heavy_host"])
    exe = str(tmp_path / "bin" / "stream_loop")  # built once for both
    assert cmds["small_frames"] == [exe, "--in", "1", "--out", "1", "--iters", "600"]
    assert cmds["heavy_host"][0] == exe and "--host-work" in cmds["heavy_host"]
    for name, (_, args, modes) in mod.VARIANTS.items():
        assert mod.APPS[name] == modes and len(set(modes)) == len(modes)
        own = args[args.index("--mem") + 1] if "--mem" in args else "pageable"
        assert modes[0] == own  # its trace, the command as it is, runs its own mode
        sizes = {args[i + 1] for i, a in enumerate(args) if a in ("--in", "--out")}
        if len(sizes) > 1:  # a chunk's kernel reads its own chunk: pipelined needs in and out of one size
            assert "pinned-pipelined" not in modes

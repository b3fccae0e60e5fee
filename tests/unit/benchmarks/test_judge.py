"""benchmarks/apps/judge.py: an advice judged by timing every mode, without a GPU."""

import json

import pytest

from tests.unit.data import load_script


def _judge():
    return load_script("benchmarks/apps/judge.py")


def test_the_advice_printed_on_the_gpu_machine_is_judged_where_the_trace_did_not_come_back(tmp_path):
    apps = {"gpu": "NVIDIA H100 80GB HBM3", "date": "2026-11-27T23:44:39+00:00", "rounds": 3,
            "apps": {"app": {"own_mode": "bounce", "modes": {
                "bounce": {"wall_s": [2.4, 2.3, 2.5]}, "pageable-registered": {"wall_s": [2.0, 2.1, 1.9]},
                "mapped": {"wall_s": [1.95, 1.9, 2.0]}}}}}
    (tmp_path / "apps.json").write_text(json.dumps(apps))
    printed = {"strategy_now": "pinned", "verdict": "Use pageable-registered.",
               "advice": [{"flow": "loop", "strategy": "pageable-registered", "tie": True, "now_s": 2.1,
                           "saving_s": 0.45}]}
    (tmp_path / "advise-app.json").write_text(json.dumps(printed))
    (row,) = _judge().judge(tmp_path / "apps.json", tmp_path)
    assert row["detected"] == "pinned" and row["advised"] == "pageable-registered" and row["tie"]
    assert row["fastest"] == "mapped" and row["advised_vs_fastest"] == pytest.approx(2.0 / 1.95 - 1)
    assert row["held"]  # 2.6% behind the fastest
    assert row["measured_saving_s"] == pytest.approx(0.4) and row["saving_held"]


def _part_back_lease(tmp_path, modes: dict) -> dict:
    apps = {"gpu": "NVIDIA H200, 580.159.04", "date": "2026-12-02", "rounds": 3,
            "apps": {"app": {"own_mode": "managed", "modes": {m: {"wall_s": w} for m, w in modes.items()}}}}
    (tmp_path / "apps.json").write_text(json.dumps(apps))
    from umprof.model.advise import PART_BACK
    printed = {"strategy_now": "managed", "verdict": "Use pageable-registered.",
               "advice": [{"flow": "loop", "strategy": "pageable-registered", "tie": True, "now_s": 3.0, "saving_s": 2.4,
                           "change": f"replace the cudaMallocManaged buffers with ...; {PART_BACK} (0.02% of the "
                                     "buffer an iteration, 64KiB; ...)"}]}
    (tmp_path / "advise-app.json").write_text(json.dumps(printed))
    (row,) = _judge().judge(tmp_path / "apps.json", tmp_path)
    return row


def test_an_advice_that_copies_back_only_what_the_host_reads_is_judged_by_the_variant_that_does(tmp_path):
    # the advised memory copying back the whole buffer is not the advice applied: its variant copying back the part
    # the host reads is (particles' registered-sampled)
    row = _part_back_lease(tmp_path, {"managed": [3.0, 3.0], "pageable-registered": [0.78, 0.78],
                                      "pinned-sampled": [0.62, 0.62], "pageable-registered-sampled": [0.63, 0.63]})
    assert row["advised"] == "pageable-registered" and row["applied"] == "pageable-registered-sampled"
    assert row["fastest"] == "pinned-sampled" and row["held"]  # 1.6% behind, where the whole copy back was 26%
    assert row["measured_saving_s"] == pytest.approx(2.37)


def test_without_that_variant_timed_the_advised_mode_is_judged(tmp_path):
    row = _part_back_lease(tmp_path, {"managed": [3.0, 3.0], "pageable-registered": [0.78, 0.78],
                                      "pinned-sampled": [0.62, 0.62]})
    assert row["applied"] == "pageable-registered" and not row["held"]
    assert _judge().applied_mode("pinned", "keep the copies", {"pinned-sampled": 1.0}) == "pinned"

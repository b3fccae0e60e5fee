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

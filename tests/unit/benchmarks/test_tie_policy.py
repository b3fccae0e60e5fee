"""benchmarks/apps/tie_policy.py without a GPU: the two picks compared where both were measured."""

import json
import shutil

import numpy as np
import pytest

from tests.unit.data import load_script
from tests.unit.nsight.test_trace_db import fixture


def _tie_policy():
    return load_script("benchmarks/apps/tie_policy.py")


def test_each_pick_is_held_and_behind_the_fastest_where_both_were_measured():
    walls = {"pinned": 1.0, "mapped": 1.2, "pageable": 2.0}
    rows = [
        {"gpu": "h100", "advised": "pinned", "fastest_predicted": "mapped", "walls": walls},
        {"gpu": "h100", "advised": "mapped", "fastest_predicted": "mapped", "walls": walls},
        {"gpu": "h200", "advised": "pinned", "fastest_predicted": "pinned-pipelined", "walls": walls},  # not measured
    ]
    out = _tie_policy().compare(rows)
    assert out["run_apps"] == 3 and out["both_measured"] == 2 and out["differ"] == 1
    assert out["advised"]["held"] == 1 and out["fastest_predicted"]["held"] == 0
    assert out["advised"]["mean_behind"] == pytest.approx(0.1)
    assert out["fastest_predicted"]["median_behind"] == pytest.approx(0.2)


def test_an_advice_that_copies_back_only_what_the_host_reads_is_judged_as_applied():
    """As judge.py judges it: the advised way's variant that copies back only what the host reads, where the change
    says so and the application was timed in it (particles' registered-sampled)."""
    walls = {"pageable-registered": 1.3, "pageable-registered-sampled": 1.0, "pinned-sampled": 0.98, "pageable": 2.0}
    rows = [{"gpu": "h200", "advised": "pageable-registered", "applied": "pageable-registered-sampled",
             "fastest_predicted": "pageable-registered", "walls": walls},
            {"gpu": "h200", "advised": "pageable-registered", "applied": "pageable-registered-sampled",
             "fastest_predicted": "pinned", "walls": {**walls, "pinned": 1.25}}]
    tp = _tie_policy()
    assert tp.measured_mode(rows[1]) == "pageable-registered-sampled"
    assert tp.measured_mode(rows[0], "fastest_predicted") == "pageable-registered-sampled"  # the same way, applied
    assert tp.measured_mode(rows[1], "fastest_predicted") == "pinned"
    out = tp.compare(rows)
    assert out["advised"]["held"] == 2 and out["fastest_predicted"]["held"] == 1


def test_the_predicted_ratio_of_two_ways_is_measured_against_their_measured_ratio():
    rows = [{"walls": {"pinned": 1.0, "mapped": 1.1, "pageable": 2.0},
             "predicted_s": {"pinned": 1.0, "mapped": 1.0, "pageable": 2.2, "pinned-pipelined": 0.9}}]
    out = _tie_policy().pair_errors(rows, 0.10)
    assert out["every"]["pairs"] == 3 and out["close"]["pairs"] == 1  # pinned and mapped, predicted level
    assert out["close"]["median"] == pytest.approx(0.1)
    assert out["every"]["median"] == pytest.approx(0.1)  # 1.1, 2.2 / 2.0 and 2.2 / 2.0 * 1.1 / 1.1: 10% each


def test_a_judged_lease_whose_trace_is_not_there_is_left_out_and_named(tmp_path, capsys):
    run = tmp_path / "h200" / "traces" / "zzg"  # the archive's layout, holding tiles' second run alone
    run.mkdir(parents=True)
    shutil.copyfile(fixture("tiles", tmp_path, gpu="h200"), run / "tiles.sqlite")
    rows = _tie_policy().run_apps(tmp_path)
    assert [(r["gpu"], r["run"], r["app"]) for r in rows] == [("h200", "zzg", "tiles")]
    err = capsys.readouterr().err
    assert "left out" in err and "h200/zzf/tiles" in err and "h200/zzg/tiles" not in err


def test_the_ceilings_set_each_lease_against_what_the_leases_of_its_application_agree_on():
    def row(run, own_s, advised_s, predicted_saving, gpu="h200", app="loop", fastest="pinned"):
        walls = {"pageable": own_s, "registered": advised_s, "pinned": 0.1 if fastest == "pinned" else 9.0}
        return {"gpu": gpu, "run": run, "app": app, "own": "pageable", "advised": "registered", "walls": walls,
                "predicted_s": {"pageable": 2.0, "registered": 2.0 - predicted_saving}}

    # measured savings 1.0, 1.1 and 2.0 (median 1.1); predicted 1.0 each time
    rows = [row("a", 2.0, 1.0, 1.0), row("b", 2.1, 1.0, 1.0), row("c", 3.0, 1.0, 1.0, fastest="registered"),
            row("a", 2.0, 1.0, 1.0, app="two runs only"), row("b", 2.0, 1.0, 1.0, app="two runs only")]
    for r in rows:  # as run_apps gives them: the predictions numpy's floats
        r["predicted_s"] = {k: np.float64(v) for k, v in r["predicted_s"].items()}
    out = _tie_policy().ceilings(rows)
    json.dumps(out)
    assert out["savings"] == {"run_apps": 3, "median_of_runs": 2, "predicted": 2}
    # pinned held in two of the three runs (the best mode afterwards), registered in one
    assert out["picks"] == {"run_apps": 3, "best_mode_afterwards": 2, "advised": 1}


def test_the_predicted_saving_is_set_against_the_measured_one_for_each_advice_that_is_a_change():
    def row(own_s, applied_s, predicted_saving, advised="registered", applied=None):
        return {"own": "pageable", "advised": advised, "applied": applied or advised,
                "walls": {"pageable": own_s, applied or advised: applied_s},
                "predicted_s": {"pageable": np.float64(2.0), advised: np.float64(2.0 - predicted_saving)}}

    rows = [row(2.0, 1.0, 1.1),  # 1.0 measured, 1.1 predicted: within 20%
            row(2.0, 1.5, 1.0),  # 0.5 measured, 1.0 predicted: 100% off
            row(2.0, 1.0, 0.9, applied="registered-sampled"),  # judged as applied: within
            row(2.0, 2.0, 0.3),  # no saving measured: not counted
            {**row(2.0, 1.0, 0.0, advised="pageable"), "walls": {"pageable": 2.0}}]  # told to keep it: not counted
    out = _tie_policy().savings(rows)
    json.dumps(out)
    assert out["run_apps"] == 3 and out["within"] == 2
    assert out["median_error"] == pytest.approx(0.1)

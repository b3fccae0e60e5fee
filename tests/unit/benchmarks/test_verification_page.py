"""scripts/verification_page.py's pooled judgement of the applications, without a GPU."""

from tests.unit.data import load_script


def _page():
    return load_script("scripts/verification_page.py")


def _lease(walls: dict[str, list[float]], advised: str, saving: float) -> dict:
    judged = {"app": "app", "own": "pageable", "advised": advised, "tie": True, "predicted_saving_s": saving}
    return {"apps": {"app": {"modes": {m: {"wall_s": w} for m, w in walls.items()}}}, "judged": [judged]}


def test_an_advice_that_differs_by_lease_is_a_row_an_advice_each_judged_over_every_lease():
    mod = _page()
    walls = {"pageable": [3.0, 3.1, 2.9], "pinned": [2.9, 3.0, 2.8], "pageable-registered": [2.6, 2.7, 2.5]}
    docs = [_lease(walls, "pageable", 0.0), _lease(walls, "pageable-registered", 0.2),
            _lease(walls, "pageable-registered", 0.3)]
    rows = mod._pooled_advice(docs)
    assert len(rows) == 2
    # the latest run's advice first, with its own predicted saving; each against the three runs pooled
    assert rows[0].startswith("| app (advice of 2 of 3 runs) | pageable | pageable-registered (tie) | "
                              "pageable-registered | +0.0% | yes |")
    assert "| 0.300 s | 0.400 s | no |" in rows[0]  # 0.1 s off: beyond 20% of 0.4 s and the runs' spread
    assert rows[1].startswith("| app (advice of 1 of 3 runs) | pageable | pageable (tie) | pageable-registered | "
                              "+15.4% | no |")  # 3.0 s against 2.6 s


def test_one_advice_over_every_lease_is_one_row_named_by_the_application():
    mod = _page()
    walls = {"pageable": [3.0, 3.0], "pinned": [2.0, 2.0]}
    (row,) = mod._pooled_advice([_lease(walls, "pinned", 1.0), _lease(walls, "pinned", 1.0)])
    assert row.startswith("| app | pageable | pinned (tie) | pinned | +0.0% | yes | pinned: +0.0%, yes | 1.000 s |")


def test_an_advice_applied_by_its_variant_is_judged_and_named_by_it():
    mod = _page()
    walls = {"managed": [3.0, 3.0], "pageable-registered": [0.8, 0.8], "pageable-registered-sampled": [0.6, 0.6]}
    run = _lease(walls, "pageable-registered", 2.3)
    run["judged"][0]["applied"] = "pageable-registered-sampled"
    run["judged"][0]["own"] = "managed"
    (row,) = mod._pooled_advice([run])
    assert row.startswith("| app | managed | pageable-registered (tie), applied as pageable-registered-sampled | "
                          "pageable-registered-sampled | +0.0% | yes |")
    assert "| 2.300 s | 2.400 s | yes |" in row


def test_the_advise_section_is_written_from_the_judgement_files_alone(tmp_path, monkeypatch):
    """The traces a judgement was read from are not kept in the repository: the section needs only the judged files."""
    import json

    mod = _page()
    doc = _lease({"pageable": [3.0, 3.0], "pinned": [2.0, 2.0]}, "pinned", 1.0)
    doc["judged"][0].update(fastest="pinned", advised_vs_fastest=0.0, held=True, measured_saving_s=1.0, saving_held=True)
    doc.update(gpu="NVIDIA H200", date="2026-12-01T10:00:00", rounds=3)
    (tmp_path / "advise").mkdir()
    (tmp_path / "advise" / "nvidia-h200-judged-a.json").write_text(json.dumps(doc))
    monkeypatch.setattr(mod, "RESULTS", tmp_path)
    monkeypatch.setattr(mod, "ROOT", tmp_path)
    text = "\n".join(mod.advise_section("h200"))
    assert "| app | pageable | pinned (tie) | pinned | +0.0% | yes | 1.000 s | 1.000 s | yes |" in text
    assert "NVIDIA H200, 2026-12-01, 3 rounds" in text and ".tar" not in text

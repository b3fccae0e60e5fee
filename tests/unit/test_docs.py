"""The documentation: its generated pages match the committed results, the README stays a manual."""

import subprocess
import sys

import pytest

from tests.unit.data import ROOT, load_script


def test_the_generated_pages_match_the_committed_results():
    """The pages as scripts/verification_page.py writes them from the committed results and held.json's figures
    (each row of held.json checked against the digest of the files it was computed from)."""
    r = subprocess.run([sys.executable, "scripts/verification_page.py", "--check"], cwd=ROOT, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr


def test_the_verification_programs_page_matches_their_timings_and_the_golden_advice():
    """docs/verification-programs.md as scripts/programs_page.py writes it: the committed timings of every mode and
    the judge's verdict on today's advice (the golden files, which the advice tests hold to what umprof answers)."""
    r = subprocess.run([sys.executable, "scripts/programs_page.py", "--check"], cwd=ROOT, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr


def test_the_held_out_programs_are_counted_once_a_gpu_as_they_first_came():
    """The page's held-out section: only the programs the verification README marks held out, each on each GPU from
    one folder, its earliest (checkpoint_copies' H100 traces were judged again, after a change they led to, in a
    later folder: that judgement is not a held-out one)."""
    page = load_script("scripts/programs_page.py")
    rows = page._first_held_out()
    assert rows and {r["program"] for r in rows} <= page._held_out_programs()
    folders = {}
    for r in rows:
        folders.setdefault((r["gpu"], r["program"]), set()).add(r["folder"])
    assert all(len(f) == 1 for f in folders.values())
    assert folders[("NVIDIA H100 80GB HBM3", "checkpoint_copies")] == {"nvidia-h100-2026-12-07-c"}


@pytest.mark.slow
@pytest.mark.parametrize("gpu", ["h100", "h200"])
def test_held_json_keeps_what_todays_model_gives_the_shipped_calibration(gpu):
    """held.json keeps every calibration's judgement of the verification sets, so that the pages are written in
    seconds; the shipped calibration's, judged again here by today's model, must be what it keeps (a change of the
    model that moves a figure needs scripts/verification_page.py run again)."""
    from umprof import api

    page = load_script("scripts/verification_page.py")
    (row,) = [r for r in page.cached_judged(gpu) if r["name"] == "shipped"]
    cal = api.load_calibration(page.ROOT / "umprof" / "calibrations" / page.SHIPPED[gpu])
    judged, kept = page.held(cal, gpu), page.held_of(row, gpu)
    assert judged.keys() == kept.keys()
    # the counts exactly; the shares to the last digits numpy's and pandas' versions sum differently
    assert all(pytest.approx(kept[k], rel=1e-9) == judged[k] for k in judged)


def test_the_readme_is_a_manual_of_at_most_350_lines_with_both_quick_start_commands():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 350
    assert 'pip install -e ".[gpu]" && umprof run' in text
    assert 'pip install -e ".[test]" && python3 -m pytest -q' in text

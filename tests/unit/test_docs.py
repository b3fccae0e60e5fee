"""The documentation: its generated pages match the committed results, the README stays a manual."""

import subprocess
import sys

from tests.unit.data import ROOT


def test_the_generated_pages_match_the_committed_results():
    # the pages judge every verification set with the shipped calibration: 8-12 minutes on a two-core machine, longer
    # beside other work (600 s once ran out there)
    r = subprocess.run([sys.executable, "scripts/verification_page.py", "--check"], cwd=ROOT, capture_output=True,
                       text=True, timeout=1800)
    assert r.returncode == 0, r.stdout + r.stderr


def test_the_readme_is_a_manual_of_at_most_350_lines_with_both_quick_start_commands():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 350
    assert 'pip install -e ".[gpu]" && umprof run' in text
    assert 'pip install -e ".[test]" && python3 -m pytest -q' in text

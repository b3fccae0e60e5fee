"""The repository stays small enough to clone in seconds: no tracked file over 2 MB, the tracked tree at most
25 MB (evidence is kept as small immutable files; traces and archives of whole runs stay out of it)."""

import shutil
import subprocess

import pytest

from tests.unit.data import ROOT

# a file over this is an archive or a whole run's output, not the small evidence a page cites
MAX_FILE_BYTES = 2 * 10**6
# what a clone of the working tree may weigh: 25 MB, the bound for a repository cloned in seconds
MAX_TREE_BYTES = 25 * 10**6


def _tracked_sizes() -> dict[str, int]:
    """Every tracked file's size in the working tree, by its path (a file deleted but not yet committed: left out)."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: nothing is tracked")
    r = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, timeout=60)
    if r.returncode != 0:
        pytest.skip(f"git ls-files failed here: {r.stderr.decode(errors='replace').strip()}")
    paths = [p for p in r.stdout.decode().split("\0") if p]
    return {p: (ROOT / p).stat().st_size for p in paths if (ROOT / p).is_file()}


def test_no_tracked_file_is_over_2_mb():
    big = {p: s for p, s in _tracked_sizes().items() if s > MAX_FILE_BYTES}
    assert not big, f"tracked files over {MAX_FILE_BYTES / 1e6:.0f} MB: " + ", ".join(
        f"{p} ({s / 1e6:.1f} MB)" for p, s in sorted(big.items()))


def test_the_tracked_tree_is_at_most_25_mb():
    sizes = _tracked_sizes()
    total = sum(sizes.values())
    largest = sorted(sizes.items(), key=lambda x: -x[1])[:5]
    assert total <= MAX_TREE_BYTES, (f"tracked tree {total / 1e6:.1f} MB, over {MAX_TREE_BYTES / 1e6:.0f} MB; largest: "
                                     + ", ".join(f"{p} ({s / 1e6:.1f} MB)" for p, s in largest))

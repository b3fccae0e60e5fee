"""The self-contained HTML report, built from committed H200 results."""

import shutil
import subprocess

import pytest
from click.testing import CliRunner

from tests.unit.data import CAL, CROSS, RESULTS, VERIFY, WORKLOADS
from umprof.cli import cli


@pytest.fixture(scope="module")
def report_html(tmp_path_factory):
    out = tmp_path_factory.mktemp("report") / "report.html"
    files = [RESULTS / "nvidia-h200-default.parquet", RESULTS / "nvidia-h200-um.parquet", CAL, VERIFY, CROSS]
    r = CliRunner().invoke(cli, ["report", *map(str, files), "-o", str(out), "--workload", str(WORKLOADS / "verify.toml")])
    assert r.exit_code == 0, r.output
    return out


def test_report_is_self_contained_with_every_section(report_html):
    text = report_html.read_text(encoding="utf-8")
    for anchor in ("device", "recommend", "breakdown", "transfers", "crossovers", "um"):
        assert f"id='{anchor}'" in text, anchor
    assert "http://" not in text and "https://" not in text and "<script" not in text
    assert text.count("data:image/png;base64,") >= 8
    from umprof.core.results import ResultSet
    from umprof.core.units import format_rate

    copy = ResultSet.load(RESULTS / "nvidia-h200-default.parquet").devices[0]["d2d_bytes_per_s"]
    assert "NVIDIA H200" in text and format_rate(copy) in text  # the ceilings (the default run's measured device copy)
    assert text.count("verified: top pick") == 16 and "top picks held" not in text
    assert "over the whole run (recommend --verify, wall clock): 16 of 16 held" in text


def test_report_refuses_to_overwrite_and_wrong_suffix(report_html):
    r = CliRunner().invoke(cli, ["report", str(CAL), "-o", str(report_html)])
    assert r.exit_code == 2 and "--force" in r.output
    r = CliRunner().invoke(cli, ["report", str(CAL), "-o", str(report_html.with_suffix(".pdf"))])
    assert r.exit_code == 2 and ".html" in r.output


CHROMIUM = next((shutil.which(n) for n in ("chromium-headless-shell", "chromium", "chromium-browser", "google-chrome")
                 if shutil.which(n)), None)


@pytest.mark.skipif(CHROMIUM is None, reason="no headless Chromium here")
def test_report_renders_in_headless_chromium(report_html, tmp_path):
    shot = tmp_path / "report.png"
    subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", f"--screenshot={shot}",
                    "--window-size=1300,2000", report_html.as_uri()], check=True, capture_output=True, timeout=120)
    import numpy as np
    from PIL import Image

    img = Image.open(shot).convert("L")
    assert img.size == (1300, 2000)
    assert len(np.unique(np.asarray(img))) > 16  # text, tables and figures, not a blank page

"""benchmarks/staging_context.py without a GPU: its tables and timeline sentence from the committed runs."""

import json

from tests.unit.data import ROOT, load_script

context = load_script("benchmarks/staging_context.py")
STAGING = ROOT / "results" / "staging"


def test_the_rates_are_tabled_by_context():
    rows = json.loads((STAGING / "nvidia-h100-staging-context.json").read_text())
    text = context.markdown(rows)
    lines = text.splitlines()
    assert lines[0] == "| bytes | what | direction | back-to-back | after-host-write | after-idle |"
    ring = next(line for line in lines if line.startswith("| 256 MiB | ring | h2d |"))
    assert ring == "| 256 MiB | ring | h2d | 37.9 | 33.7 | 32.1 |"
    assert "| 256 MiB | pinned | h2d | 51.7 |  |  |" in lines  # measured back to back only: the rest left blank
    assert len(lines) == 2 + len({(r["bytes"], r["what"], r["direction"]) for r in rows})


def test_a_timeline_says_where_the_transfer_went():
    t = json.loads((STAGING / "nvidia-h100-staging-timeline.json").read_text())[0]
    text = context.timeline_summary(t)
    assert text.startswith("one 256 MiB H2D after a host write, 12 threads: 8.36 ms, 64 chunks, 32.1 GB/s")
    assert "the first copy began 0.30 ms in and the 12th 0.87 ms in" in text and "the last DMA landed by 8.36 ms" in text
    table = context.timeline_table(t).splitlines()
    assert len(table) == 2 + 64 and table[2].startswith("| 0 | 4096 |")


def test_small_transfers_are_tabled_by_size_and_method():
    rows = [dict(method=m, bytes=2 * 2**20, threads=t, host_write_ms=w, h2d_ms=h)
            for m, t, w, h in zip(context.SMALL_METHODS, (1, 2, 0), (0.2, 0.33, 0.19), (0.15, 0.27, 0.19))]
    lines = context.small_table(rows).splitlines()
    assert lines[0] == "| bytes | method | threads | host write ms | H2D ms | both ms |"
    assert lines[2] == "| 2 MiB | ring, calling thread | 1 | 0.200 | 0.150 | 0.350 |"
    assert lines[3] == "| 2 MiB | ring, its threads | 2 | 0.330 | 0.270 | 0.600 |" and len(lines) == 5

"""Rewrite committed result files (Parquet) small, once, before they are committed:

    python3 scripts/trim_results.py FILE.parquet ... [--empty-statistics] [--totals]

Each file is written with zstd and without per-column statistics (its header stays); the frame read back is
checked equal to what was meant.
``--empty-statistics`` empties the per-case summary statistics nothing in umprof reads (the spread of the GPU's
and the host's timings, the 99th percentile: ``STATISTICS``); ``--totals`` keeps only the rows of phase
``total`` (what a verification set's judgement reads: each strategy's loop by wall clock). The header's meta
records what was left out (``trimmed``), so that a reader knows the file is not the run's whole output.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# the summary statistics of a case's samples beside their medians: read by no view, model or page
STATISTICS = ["gpu_time_mean_s", "gpu_time_stdev_s", "gpu_time_min_s", "gpu_time_max_s", "gpu_time_iqr_s",
              "cpu_time_mean_s", "cpu_time_stdev_s", "cpu_time_min_s", "cpu_time_max_s", "cpu_time_iqr_s",
              "time_p99_s"]
# the strongest zstd level pyarrow writes: a file is written once and read many times
ZSTD_LEVEL = 19


def _trimmed(table, statistics: bool, totals: bool):
    """The table less what the options leave out, and what that is in words."""
    import pyarrow as pa
    import pyarrow.compute as pc

    left_out = []
    if totals:
        table = table.filter(pc.equal(table["phase"], "total"))
        left_out.append("every row but phase total")
    emptied = [c for c in STATISTICS if c in table.column_names] if statistics else []
    for c in emptied:
        i = table.column_names.index(c)
        table = table.set_column(i, table.schema.field(i), pa.nulls(len(table), table.schema.field(i).type))
    if emptied:
        left_out.append("columns " + ", ".join(emptied) + " (emptied)")
    return table, left_out


def rewrite(path: Path, statistics: bool = False, totals: bool = False) -> tuple[int, int]:
    """Rewrite ``path`` in place (see the module's docstring); its size before and after."""
    import pandas as pd
    import pyarrow.parquet as pq

    from umprof.core.results import ResultSet

    before = path.stat().st_size
    table, left_out = _trimmed(pq.read_table(path), statistics, totals)
    md = dict(table.schema.metadata or {})
    if b"umprof" not in md:
        raise SystemExit(f"{path}: not a umprof result file (no umprof header in its Parquet metadata)")
    if left_out:
        header = json.loads(md[b"umprof"])
        header.setdefault("meta", {})["trimmed"] = "; ".join(left_out)
        md[b"umprof"] = json.dumps(header).encode()
    expected = ResultSet.load(path).frame
    expected = expected[expected["phase"] == "total"] if totals else expected
    expected = expected.assign(**{c: float("nan") for c in STATISTICS if statistics and c in expected})
    tmp = path.with_name(f".{path.stem}.tmp.parquet")
    pq.write_table(table.replace_schema_metadata(md), tmp, compression="zstd", compression_level=ZSTD_LEVEL,
                   write_statistics=False)
    pd.testing.assert_frame_equal(ResultSet.load(tmp).frame.reset_index(drop=True), expected.reset_index(drop=True))
    tmp.replace(path)
    return before, path.stat().st_size


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("--empty-statistics", action="store_true", help="empty the columns of STATISTICS")
    ap.add_argument("--totals", action="store_true", help="keep only the rows of phase total")
    a = ap.parse_args()
    for f in a.files:
        before, after = rewrite(f, a.empty_statistics, a.totals)
        print(f"{f}: {before / 1e3:.0f} kB -> {after / 1e3:.0f} kB")
    return 0


if __name__ == "__main__":
    sys.exit(main())

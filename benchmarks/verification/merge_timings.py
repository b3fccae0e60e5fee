"""Merge the timings of several run_gpu.py calls on one machine (same GPU, driver and CPU count) into one
NAME.json a program: each mode's runs put together, the calls' dates listed. A TIMINGS_DIR may hold merged documents
(a results folder) and other JSON files, which are passed over.

    python3 merge_timings.py OUT_DIR TIMINGS_DIR [TIMINGS_DIR...]
"""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run_gpu import command_text  # noqa: E402 (beside this script)

SAME_MACHINE = ("gpu", "driver", "cpu_count")


def merge(docs: list[dict]) -> dict:
    """One timings document from several of one program on one machine."""
    first = docs[0]
    for d in docs[1:]:
        for k in SAME_MACHINE:
            if d[k] != first[k]:
                raise ValueError(f"{first['program']}: key {k!r}: expected {first[k]!r} in every call, got {d[k]!r}")
    out = {k: v for k, v in first.items() if k not in ("date", "modes", "checksums_agree")}
    out["command"] = command_text(first["program"])
    out["dates"] = [date for d in docs for date in d.get("dates", [d.get("date")])]  # a merged document's too
    out["modes"] = {}
    for mode in dict.fromkeys(m for d in docs for m in d["modes"]):
        runs = [d["modes"][mode] for d in docs if mode in d["modes"]]
        out["modes"][mode] = {
            "wall_s": [s for r in runs for s in r["wall_s"]],
            "loop_s": [s for r in runs for s in r["loop_s"]],
            "checksums": sorted({c for r in runs for c in r["checksums"]}),
            "failed": [f for r in runs for f in r["failed"]],
        }
    sums = [c for m in out["modes"].values() for c in m["checksums"]]
    out["checksums_agree"] = bool(sums) and all(abs(c - sums[0]) <= 1e-4 * max(1.0, abs(sums[0])) for c in sums)
    return out


def main() -> int:
    if len(sys.argv) < 3:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    dirs = [Path(p) for p in sys.argv[2:]]
    for name in sorted({f.name for d in dirs for f in d.glob("*.json")}):
        docs = [json.loads((d / name).read_text()) for d in dirs if (d / name).exists()]
        docs = [doc for doc in docs if isinstance(doc, dict) and "modes" in doc]  # not a judge's file beside them
        if docs:
            (out / name).write_text(json.dumps(merge(docs), indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

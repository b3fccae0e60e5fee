"""Advise every verification program's traces of its as_written mode, for judge.py.

    python3 advise_traces.py TRACES_DIR OUT_DIR [GPU]

TRACES_DIR holds ``GPU-NAME.sqlite[.gz|.xz]`` (nsys) and ``GPU-NAME.json[.gz|.xz]`` (torch.profiler) traces, a job's
ranks as ``GPU-NAME-rankN``; OUT_DIR gets ``NAME.TRACER.json`` (the advice as ``umprof advise --json`` writes it,
or umprof's one-line error) and ``NAME.TRACER.txt`` (the terminal's view), as judge.py reads them. GPU (h100, h200):
only the traces of that prefix, where the folder holds several GPUs' (the names in OUT_DIR leave the prefix out).
"""

from __future__ import annotations

import gzip
import io
import json
import lzma
import re
import shutil
import sys
import tempfile
from pathlib import Path

from rich.console import Console

from umprof import api
from umprof.core.errors import UsageError
from umprof.views.advice import print_advice

TRACE = re.compile(r"^(?P<gpu>[a-z0-9]+)-(?P<name>.+?)(?P<rank>-rank\d+)?\.(?P<kind>sqlite|json)(?:\.(?:gz|xz))?$")


def plain(path: Path, scratch: Path) -> Path:
    """The trace as umprof reads it: an nsys export decompressed; a torch.profiler JSON as it is, or decompressed
    where it is xz-compressed (the fixtures are; torch.profiler writes gzip, which umprof reads)."""
    if path.suffix not in (".gz", ".xz") or (".json" in path.suffixes and path.suffix == ".gz"):
        return path
    out = scratch / path.name.rsplit(".", 1)[0]
    with (lzma.open if path.suffix == ".xz" else gzip.open)(path, "rb") as f, open(out, "wb") as g:
        shutil.copyfileobj(f, g)
    return out


def main() -> int:
    traces, out = Path(sys.argv[1]), Path(sys.argv[2])
    gpu = sys.argv[3] if len(sys.argv) > 3 else None
    out.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="umprof-judge-"))
    try:
        for p in sorted(traces.iterdir()):
            m = TRACE.match(p.name)
            if not m or (gpu and m["gpu"] != gpu):
                continue
            stem = f"{m['name']}{m['rank'] or ''}.{'nsys' if m['kind'] == 'sqlite' else 'kineto'}"
            try:
                found = api.advise(plain(p, scratch))
            except UsageError as e:
                (out / f"{stem}.json").write_text(f"{e}\n")
                (out / f"{stem}.txt").write_text(f"{e}\n")
                continue
            doc = found[0].to_dict() if found else {"advice": []}
            (out / f"{stem}.json").write_text(json.dumps(doc, indent=1, default=str) + "\n")
            buf = io.StringIO()
            console = Console(file=buf, width=160, color_system=None)
            for adv in found:
                print_advice(adv, console)
            (out / f"{stem}.txt").write_text(buf.getvalue())
            print(stem, "done", flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

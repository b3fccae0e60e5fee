"""Draw the README's picture: `umprof advise`'s timeline of a traced application (the committed H100 trace
of benchmarks/apps/pycuda_loop.py), into docs/img/advise-timeline.png.

    python3 scripts/readme_picture.py
"""

import lzma
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main():
    from umprof import api
    from umprof.views.timeline import timeline_figure

    with tempfile.TemporaryDirectory() as tmp:  # the fixture is committed compressed
        trace = Path(tmp) / "h100-pycuda_loop.sqlite"
        with lzma.open(ROOT / "tests" / "fixtures" / "traces" / "h100-pycuda_loop.sqlite.xz") as f:
            trace.write_bytes(f.read())
        (adv,) = api.advise(trace)
    fig = timeline_figure(adv.app)
    out = ROOT / "docs" / "img" / "advise-timeline.png"
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()

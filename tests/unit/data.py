"""The committed result files the unit tests read (no GPU needed).

``results/`` holds what the documentation cites (the verification sets' measurements among them);
``tests/fixtures/results/`` holds what only tests read: the calibrations the model's unit tests were
written against (the first loop calibration of the H200, and calibration-7 of each GPU, 2026-11-23,
which the verification sets were judged by) and the first verification set measured under every
strategy.
"""

import atexit
import functools
import gzip
import importlib.util
import lzma
import shutil
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "results"
VERIFICATION = RESULTS / "verification"
FIXTURES = ROOT / "tests" / "fixtures" / "results"
WORKLOADS = ROOT / "benchmarks" / "workloads"
SHIPPED = ROOT / "umprof" / "calibrations"
CAL7 = {gpu: FIXTURES / f"nvidia-{gpu}-loop-calibration-7.parquet" for gpu in ("h200", "h100")}
CAL = FIXTURES / "nvidia-h200-loop-calibration-1.parquet"  # the first loop calibration (H200, 2026-11-22), of many model tests
VERIFY = FIXTURES / "nvidia-h200-loop-verify.parquet"  # verify.toml measured under every strategy (2026-11-22)


def load_script(path: str):
    """A script of the repository (``benchmarks/...``, ``scripts/...``: not a package) imported as a module."""
    spec = importlib.util.spec_from_file_location(Path(path).stem, ROOT / path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def unpacked(plain: Path, folder: Path) -> Path:
    """The SQLite trace ``plain`` as a file: itself where it is committed plain, else its ``.xz`` or ``.gz`` copy
    decompressed into ``folder`` (a fixture's stem stays the same whichever compression it is committed in)."""
    plain = Path(plain)
    if plain.is_file():
        return plain
    xz, gz = plain.with_name(plain.name + ".xz"), plain.with_name(plain.name + ".gz")
    out = Path(folder) / plain.name
    with (lzma.open(xz, "rb") if xz.is_file() else gzip.open(gz, "rb")) as f, open(out, "wb") as g:
        shutil.copyfileobj(f, g)
    return out


TRACES = ROOT / "tests" / "fixtures" / "traces"


@functools.cache
def readable(folder: Path) -> Path:
    """A fixture folder of traces as users hand them to umprof, once a process: a scratch copy in which each
    torch.profiler trace committed as ``.json.xz`` (xz weighs about 60% of gzip, and the repository's size is
    bounded) is the ``.json.gz`` torch.profiler writes, and every other file a link to the committed one."""
    out = Path(tempfile.mkdtemp(prefix=f"umprof-{Path(folder).name}-"))
    atexit.register(shutil.rmtree, out, True)
    for f in sorted(Path(folder).rglob("*")):
        dest = out / f.relative_to(folder)
        if f.is_dir():
            dest.mkdir(parents=True, exist_ok=True)
        elif f.name.endswith(".json.xz"):
            with lzma.open(f, "rb") as src, gzip.GzipFile(dest.with_name(f.name[:-3] + ".gz"), "wb", 1, mtime=0) as g:
                shutil.copyfileobj(src, g)
        else:
            dest.symlink_to(f)
    return out


def holdout(gpu: str, n: int, *tags: str) -> list[Path]:
    """A verification set's measured runs on one GPU (``-b``: a second run on the same machine)."""
    return [VERIFICATION / f"nvidia-{gpu}-loop-holdout-{n}{tag}.parquet" for tag in ("", *tags)]


CROSS = RESULTS / "nvidia-h200-crossovers.parquet"
MiB = 1024**2


def judged(name: str) -> dict:
    """A judgement of `umprof advise` on applications (results/advise/NAME.json, kept xz-compressed)."""
    from benchmarks.apps.rows_json import read_kept

    return read_kept(ROOT / "results" / "advise" / f"{name}.json.xz")

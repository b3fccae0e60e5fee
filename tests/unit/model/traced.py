"""The committed fixture traces (tests/fixtures/traces), each decompressed, parsed and advised once for the whole
test session: the advice tests and the golden files share one `umprof.advise` of a trace (the shipped calibration
of its GPU) instead of reading and pricing it again in every test. The advice is shared, so a test reads it and
never changes it; a test that changes the model (a monkeypatched constant) advises its trace itself, from
``path``."""

import atexit
import functools
import shutil
import tempfile
from pathlib import Path

from tests.unit.data import ROOT, TRACES, readable, unpacked

GOLDEN = ROOT / "tests" / "fixtures" / "golden"


def stems() -> list[str]:
    """Every fixture trace's name without its suffixes ('h100-stream_loop'), sorted."""
    return sorted({p.name.split(".sqlite")[0] for p in TRACES.glob("*.sqlite*")})


@functools.cache
def _scratch() -> Path:
    d = Path(tempfile.mkdtemp(prefix="umprof-traces-"))
    atexit.register(shutil.rmtree, d, True)
    return d


@functools.cache
def path(name: str, gpu: str = "h100") -> Path:
    """The fixture trace ``{gpu}-{name}`` as a .sqlite file (a compressed one, .xz or .gz, decompressed once a session)."""
    return unpacked(TRACES / f"{gpu}-{name}.sqlite", _scratch())


@functools.cache
def advice(name: str, gpu: str = "h100", calibration=None, as_gpu: str | None = None) -> tuple:
    """``umprof.advise`` of the fixture trace, once a session for each calibration (a path, hashable) and ``as_gpu``
    (api.advise's ``gpu``): its AppAdvice, one per process and GPU, shared by every test that asks."""
    from umprof import api

    return tuple(api.advise(path(name, gpu), calibration, gpu=as_gpu))


def advised(stem: str) -> tuple:
    """:func:`advice` of a fixture by its stem ('h100-stream_loop'); () for a trace umprof refuses (CUDA graphs traced
    whole), which has no advice to check and whose one line the reader's own tests check."""
    from umprof.core.errors import UsageError

    try:
        return advice(*split(stem))
    except UsageError:
        return ()


def split(stem: str) -> tuple[str, str]:
    """'h100-stream_loop' -> ('stream_loop', 'h100')."""
    gpu, name = stem.split("-", 1)
    return name, gpu


def advise_again(adv, **kwargs):
    """The advice model run again on a shared advice's application, with the shipped calibration of its GPU, for a
    test that changes the model (a monkeypatched constant, or advise's other arguments: ``kwargs``) and compares:
    the trace is not read again."""
    from umprof import api
    from umprof.core import calibrations as store
    from umprof.model.advise import advise

    cf = store.for_gpu(adv.app.gpu, adv.app.memory_bytes or None)
    return advise(adv.app, api._loaded(cf), cf.summary(), **kwargs)


TORCH = readable(TRACES / "torch")  # PyTorch programs' traces, nsys (.sqlite.xz) and torch.profiler (.json.gz)
KINETO = readable(TRACES / "kineto")


def torch_traces() -> list[Path]:
    """Every PyTorch fixture trace: tests/fixtures/traces/torch (both readers) and tests/fixtures/traces/kineto."""
    return sorted([*TORCH.glob("*.sqlite.*"), *TORCH.glob("*.json.gz"), *KINETO.glob("*.json*"),
                   *KINETO.glob("ranks/*.json*")])


def torch_stem(p: Path) -> str:
    """'h100-readback.nsys', 'h100-readback.kineto', 'kineto-a100-alexnet': a golden file's name for the trace."""
    if p.parent == TORCH:
        name = p.name.split(".")[0]
        return f"{name}.{'nsys' if '.sqlite' in p.name else 'kineto'}"
    return "kineto-" + str(p.relative_to(KINETO)).replace("/", "-").split(".")[0]


@functools.cache
def plain(p: Path) -> Path:
    """The trace as umprof reads it: an nsys export decompressed (.gz or .xz) once a session, a JSON as it is."""
    if ".sqlite" not in p.name or p.suffix == ".sqlite":
        return p
    return unpacked(p.with_name(p.name.rsplit(".", 1)[0]), _scratch())


@functools.cache
def torch_advice(p: Path) -> tuple:
    """``umprof.advise`` of a PyTorch fixture trace, once a session; a trace of a GPU no calibration describes (an
    A100's, a ROCm one's) advised as if on an H100 (``--gpu H100``), so that the model is checked on traces of
    programs written elsewhere; () where umprof refuses it (a trace without CUDA activity), whose one line the
    reader's own tests check."""
    from umprof import api
    from umprof.core.errors import UsageError

    try:
        return tuple(api.advise(plain(p)))
    except UsageError as e:
        if "which no calibration here describes" not in str(e):
            return ()
    return tuple(api.advise(plain(p), gpu="H100"))

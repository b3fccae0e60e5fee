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

from tests.unit.data import ROOT, unpacked

TRACES = ROOT / "tests" / "fixtures" / "traces"
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

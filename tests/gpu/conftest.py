"""GPU tests: run on a machine with an NVIDIA GPU (``pytest -m gpu``); skipped elsewhere."""

import pytest

from umprof.core.errors import GpuUnavailable


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "tests/gpu" in str(item.fspath):
            item.add_marker(pytest.mark.gpu)


@pytest.fixture(scope="session")
def session():
    from umprof.measure.gpu import open_session

    try:
        s = open_session(0, um_counters=True)
        if s.um is not None:
            s.um.disable()  # the default 'sample' mode: timed samples uncounted, one counted sample per case
    except GpuUnavailable as e:
        pytest.skip(f"no GPU here: {e}")
    yield s
    s.close()


@pytest.fixture(scope="session")
def ctx_factory(session):
    from umprof.measure import device as devmod
    from umprof.measure.kernels import KernelCache
    from umprof.measure.ops import RunContext

    info = devmod.query(session)
    info.d2d_bytes_per_s = devmod.measure_d2d(session)
    kernels = KernelCache(session)

    def make(scenario):
        return RunContext(session, kernels, info, scenario, info.to_dict())

    return make


@pytest.fixture(scope="module")
def nsys(session):
    """Nsight Systems' nsys, or the test skipped with what is missing."""
    from umprof.core.errors import ToolUnavailable
    from umprof.nsight import nsys as nsysmod

    try:
        return nsysmod.find_nsys()
    except ToolUnavailable as e:
        pytest.skip(str(e))

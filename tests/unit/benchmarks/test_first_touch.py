"""benchmarks/first_touch.py without a GPU: a buffer of either backing, as umprof backs pageable memory."""

from tests.unit.data import load_script


def _first_touch():
    return load_script("benchmarks/first_touch.py")


def test_either_backing_gives_a_fresh_buffer_as_umprof_backs_pageable_memory():
    mod = _first_touch()
    for huge in (True, False):
        b = mod._buffer(8 * 2**20, huge)
        assert b.nbytes == 8 * 2**20 and b.dtype.itemsize == 1
        # malloc'd pages are a mapping of their own (strategies.pageable_empty), numpy's an ordinary array
        assert isinstance(b.base, memoryview) != huge
        write, free = mod._first_write(2**20, huge)  # the write and the free, each timed
        assert write > 0 and free >= 0


def test_without_a_gpu_it_says_so_in_one_line_and_exits_3(monkeypatch, capsys):
    import pytest

    from umprof.core.errors import GpuUnavailable

    mod = _first_touch()

    def no_gpu(*a, **k):
        raise GpuUnavailable("no GPU here")

    monkeypatch.setattr("umprof.measure.gpu.open_session", no_gpu)
    monkeypatch.setattr("sys.argv", ["first_touch.py", "--reps", "1"])
    with pytest.raises(SystemExit) as e:
        mod.main()
    assert e.value.code == 3 and capsys.readouterr().err.strip() == "first_touch: no GPU here"

"""Every kernel compiles with nvcc for sm_80 and sm_90 with no register spills (no GPU needed)."""

import shutil

import pytest

from umprof.core.resources import kernels_dir
from umprof.measure.kernels import resource_usage

SOURCES = sorted(kernels_dir().glob("*.cu"))
pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")


@pytest.mark.nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("path", SOURCES, ids=[p.name for p in SOURCES])
def test_compiles_without_spills(path, arch):
    usage = resource_usage(path, arch)
    assert usage, f"{path.name}: no kernels found"
    for name, u in usage.items():
        assert u["spill_stores"] == 0 and u["spill_loads"] == 0, f"{name} spills on {arch}: {u}"
        assert 0 < u["registers"] <= 255


def test_lifecycle_expected_closed_form():
    import numpy as np

    from umprof.measure.ops.lifecycle import initial_pattern, lifecycle_expected

    x = initial_pattern(4096)
    y = x.copy()
    for r in range(1, 10):
        y = y * np.uint32(3) + np.uint32(1)
        assert np.array_equal(lifecycle_expected(x, r), y)


def test_touch_pass_random_order_visits_every_word_once():
    import numpy as np

    from umprof.measure.ops.lifecycle import random_order

    for m in (1, 3, 7, 64, 100):
        order = random_order(m, page_words=256)
        assert np.array_equal(np.sort(order), np.arange(m * 256, dtype=np.uint64)), m
        if m >= 32:  # a warp's 32 lanes land in 32 different pages
            assert len(set((order[:32] // 256).tolist())) == 32


def test_workload_expected_values_follow_the_passes_and_the_host_turns():
    import numpy as np

    from umprof.measure.ops.lifecycle import (
        PAGE_WORDS,
        expected_after,
        initial_pattern,
        selected_words,
    )

    n = 8 * PAGE_WORDS
    mask = selected_words(n, 0.25, "strided", 8)
    assert mask.sum() == 2 * PAGE_WORDS // 8  # 2 of 8 pages, every 8th word
    x0 = initial_pattern(n)
    got = expected_after(x0, mask, reuse=2, iterations=3, pingpong=True)
    y = x0.copy()
    for it in range(3):
        if it:
            y = y + np.uint32(1)
        for _ in range(2):
            y[mask] = y[mask] * np.uint32(3) + np.uint32(1)
    assert np.array_equal(got, y)
    no_pp = expected_after(x0, mask, reuse=2, iterations=3, pingpong=False)
    assert np.array_equal(no_pp[~mask], x0[~mask]) and not np.array_equal(no_pp[mask], x0[mask])


def test_cubins_are_cached_on_disk_by_source_options_and_arch(tmp_path, monkeypatch):
    """The second compile of the same kernel comes from the cache; a change to the source, an
    included file, the options or the architecture compiles afresh."""
    from umprof.measure import cubins

    monkeypatch.setenv("UMPROF_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "common.cuh").write_text("#define SCALE 3u\n")
    src = tmp_path / "k.cu"
    src.write_text('#include "common.cuh"\nextern "C" __global__ void k(unsigned* x) { x[threadIdx.x] *= SCALE; }\n')
    cubin, cached = cubins.compile_cubin(src, "sm_90", ["-lineinfo"])
    assert cubin[:4] == b"\x7fELF" and not cached
    again, cached = cubins.compile_cubin(src, "sm_90", ["-lineinfo"])
    assert cached and again == cubin
    assert not cubins.compile_cubin(src, "sm_80", ["-lineinfo"])[1]
    assert not cubins.compile_cubin(src, "sm_90", [])[1]
    (tmp_path / "common.cuh").write_text("#define SCALE 5u\n")
    assert not cubins.compile_cubin(src, "sm_90", ["-lineinfo"])[1]
    assert len(list((tmp_path / "cache").glob("k-sm_*.cubin"))) == 4


def test_cubin_cache_that_cannot_be_written_still_compiles(tmp_path, monkeypatch):
    from umprof.measure import cubins

    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("UMPROF_CACHE_DIR", str(blocker / "sub"))  # a path under a file: not creatable
    src = kernels_dir() / "lifecycle.cu"
    assert cubins.compile_cubin(src, "sm_90", ["-std=c++17"])[0][:4] == b"\x7fELF"


def test_nvcc_errors_name_the_file(tmp_path, monkeypatch):
    from umprof.measure import cubins

    monkeypatch.setenv("UMPROF_CACHE_DIR", str(tmp_path / "cache"))
    bad = tmp_path / "bad.cu"
    bad.write_text("this is not CUDA\n")
    with pytest.raises(RuntimeError, match="nvcc failed on bad.cu for sm_90"):
        cubins.compile_cubin(bad, "sm_90", [])


def test_host_code_is_built_once_and_kept_where_the_cache_cannot_be_written(tmp_path, monkeypatch):
    """kernels/staging_ring.c becomes a shared library by nvcc, cached under a key of its text, options and
    nvcc (a second build is the cached file); where the cache cannot be written it still builds, to a
    private copy; without nvcc the error says what to install."""
    from umprof.core.errors import GpuUnavailable
    from umprof.measure import hostlib

    monkeypatch.setenv("UMPROF_CACHE_DIR", str(tmp_path / "cache"))
    lib = hostlib.build("staging_ring")
    assert lib.parent == tmp_path / "cache" and lib.read_bytes()[:4] == b"\x7fELF"
    assert hostlib.build("staging_ring") == lib
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("UMPROF_CACHE_DIR", str(blocker / "sub"))
    private = hostlib.build("staging_ring")
    assert private.is_file() and private.parent != blocker / "sub"
    monkeypatch.setenv("PATH", str(tmp_path))  # no nvcc
    with pytest.raises(GpuUnavailable, match="nvcc is not on PATH"):
        hostlib.build("staging_ring")

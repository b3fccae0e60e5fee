"""The workload model: keys, errors, and its mapping onto the lifecycle axes."""


import pytest

from tests.unit.data import ROOT, WORKLOADS, MiB
from umprof.core.errors import UsageError
from umprof.model.workload import Workload, from_mapping, load_workloads


def test_example_and_verification_workloads_load():
    (example,) = load_workloads(ROOT / "scenarios" / "workloads" / "example.toml")
    assert len(load_workloads(ROOT / "scenarios" / "workloads" / "typical.toml")) == 6
    assert example.bytes == 256 * MiB and example.reuse == 4 and example.read_only and example.host_writes == 0.1
    verify = load_workloads(WORKLOADS / "verify.toml")
    assert len(verify) >= 14 and len({w.name for w in verify}) == len(verify)
    # the space the issue names: 64 KiB..1 GiB, read-only and in place, host writes 1%..100% and none,
    # host reads none..all, 1..200 iterations, sparse and dense, every pattern
    assert min(w.bytes for w in verify) == 64 * 1024 and max(w.bytes for w in verify) == 1024 * MiB
    assert {w.read_only for w in verify} == {True, False}
    assert {0.0, 0.01, 1.0} <= {w.host_writes for w in verify} and {0.0, 1.0} <= {w.host_reads for w in verify}
    assert min(w.iterations for w in verify) == 1 and max(w.iterations for w in verify) == 200
    assert {w.touched < 1 for w in verify} == {True, False}
    assert {w.pattern for w in verify} == {"streaming", "strided", "random", "warp-pages"}


@pytest.mark.parametrize("raw, key", [
    ({"bytes": "1MiB", "touched": 0}, "touched"), ({"bytes": "1MiB", "touched": 1.5}, "touched"),
    ({"bytes": "1MiB", "pattern": "zigzag"}, "pattern"), ({"bytes": "1MiB", "stride": 3}, "stride"),
    ({"bytes": "1000"}, "bytes"), ({"bytes": "lots"}, "bytes"), ({"bytes": "1MiB", "reuse": 0}, "reuse"),
    ({"bytes": "1MiB", "pingpong": "yes"}, "pingpong"), ({"bytes": "1MiB", "iterations": 2.5}, "iterations"),
    ({"bytes": "1MiB", "iterations": 100001}, "iterations"),
    ({"bytes": "64KiB", "touched": 0.5}, "touched"), ({"bytes": "1MiB", "kernel_bytes": -1}, "kernel_bytes"),
    ({"bytes": "1MiB", "kernel_bytes": 2.5}, "kernel_bytes"), ({"bytes": "1MiB", "kernel_bytes": "lots"}, "kernel_bytes"),
])
def test_bad_workload_values_name_the_key(raw, key):
    with pytest.raises(UsageError, match=f"wl.toml: key '{key}': expected"):
        from_mapping(raw, "wl.toml")


def test_unknown_key_and_missing_bytes(tmp_path):
    with pytest.raises(UsageError, match="unknown key 'reuses'.*keys are: bytes"):
        from_mapping({"bytes": "1MiB", "reuses": 2}, "x")
    with pytest.raises(UsageError, match="key 'bytes' is missing"):
        from_mapping({"reuse": 2}, "x")
    bad = tmp_path / "w.toml"
    bad.write_text("[workloads]\nbytes = 1\n")
    with pytest.raises(UsageError, match=r"w.toml: expected a \[workload\] table"):
        load_workloads(bad)


def test_workload_maps_onto_the_loop_axes():
    from umprof.model.recommend import verification_scenario

    w = Workload(bytes=64 * MiB, reuse=2, touched=0.25, pattern="strided", stride=16, iterations=5, host_writes=0.1,
                 gpu_writes=0.0, host_reads=1.0, name="x")
    (case,) = verification_scenario(w, ["pinned"]).cases()
    assert case.params == {"strategy": "pinned", "bytes": 64 * MiB, "reuse": 2, "touched": 0.25, "pattern": "strided",
                           "stride": 16, "host_writes": 0.1, "gpu_writes": 0.0, "host_reads": 1.0, "iterations": 5,
                           "copies": 1, "host_pages": "numpy", "first_write": "copy", "host_reader": "numpy"}
    # records copied one by one: the strategies that copy make them in parts, the others none
    records = Workload(bytes=MiB, copies=64)
    parts = {c.params["strategy"]: c.params["copies"] for c in verification_scenario(
        records, ["pageable", "pinned", "mapped", "managed", "pinned-pipelined", "pageable-staged"]).cases()}
    assert parts == {"pageable": 64, "pinned": 64, "mapped": 1, "managed": 1, "pinned-pipelined": 1,
                     "pageable-staged": 1}
    # malloc'd pages: the strategies whose buffer is pageable memory back it so, the others allocate their own
    malloced = Workload(bytes=MiB, host_pages="malloc")
    pages = {c.params["strategy"]: c.params["host_pages"] for c in verification_scenario(
        malloced, ["pageable", "pinned", "mapped", "managed", "pageable-registered", "pageable-staged"]).cases()}
    assert pages == {"pageable": "malloc", "pinned": "numpy", "mapped": "malloc", "managed": "numpy",
                     "pageable-registered": "malloc", "pageable-staged": "malloc"}
    # a first write by stores: every strategy's loop writes its buffer so
    stored = Workload(bytes=MiB, first_write="stores")
    assert {c.params["first_write"] for c in verification_scenario(stored, ["pageable", "pinned", "managed"]).cases()} \
        == {"stores"}
    # read back word by word: every strategy's loop reads its buffer so
    words = Workload(bytes=MiB, host_reader="words")
    assert {c.params["host_reader"] for c in verification_scenario(words, ["pinned", "managed"]).cases()} == {"words"}
    # one iteration: the verification runs three, so the steady iteration is measured too
    (one,) = verification_scenario(Workload(bytes=MiB), ["pinned"]).cases()
    assert one.params["iterations"] == 3


@pytest.mark.parametrize("key", ["host_writes", "gpu_writes", "host_reads"])
@pytest.mark.parametrize("value", [-0.1, 1.5, "half", True])
def test_fractions_outside_0_to_1_name_the_key(key, value):
    with pytest.raises(UsageError, match=f"key '{key}': expected a fraction from 0 to 1"):
        from_mapping({"bytes": "1MiB", key: value}, "wl.toml")


def test_defaults_keep_the_one_shot_meaning_and_pingpong_is_all_three():
    w = from_mapping({"bytes": "1MiB"}, "x")
    assert (w.host_writes, w.gpu_writes, w.host_reads, w.iterations) == (0.0, 1.0, 1.0, 1)
    p = from_mapping({"bytes": "1MiB", "pingpong": True, "iterations": 4}, "x")
    assert (p.host_writes, p.gpu_writes, p.host_reads) == (1.0, 1.0, 1.0)
    with pytest.raises(UsageError, match="'pingpong' means .* but 'host_reads' is 0.5"):
        from_mapping({"bytes": "1MiB", "pingpong": True, "host_reads": 0.5}, "x")
    # the host may read more than the GPU wrote (its own input, say)
    assert from_mapping({"bytes": "1MiB", "gpu_writes": 0, "host_reads": 1}, "x").read_only
    assert from_mapping({"bytes": "1MiB", "iterations": 100000}, "x").iterations == 100000


def test_the_first_write_is_copy_or_stores():
    assert Workload(bytes=MiB).first_write == "copy"
    assert "first written by stores" in Workload(bytes=MiB, first_write="stores").describe()
    with pytest.raises(UsageError, match="first_write.*copy, stores"):
        Workload(bytes=MiB, first_write="memset")


def test_the_host_reads_back_with_numpy_or_word_by_word():
    assert Workload(bytes=MiB).host_reader == "numpy" and "word by word" not in Workload(bytes=MiB).describe()
    assert "read back word by word" in Workload(bytes=MiB, host_reader="words").describe()
    assert from_mapping({"bytes": "1MiB", "host_reader": "words"}, "x").host_reader == "words"
    with pytest.raises(UsageError, match="wl.toml: key 'host_reader': expected one of numpy, words .*got 'bytes'"):
        from_mapping({"bytes": "1MiB", "host_reader": "bytes"}, "wl.toml")


def test_split_puts_the_host_s_reads_apart_from_its_writes():
    assert Workload(bytes=MiB).split is False
    w = from_mapping({"bytes": "2MiB", "host_writes": 0.5, "host_reads": 0.5, "split": True}, "x")
    assert w.split and "input and output apart" in w.describe()
    assert "split" not in w.loop_axes()  # umprof's loop runs the in-place layout only
    with pytest.raises(UsageError, match="'split': expected true or false"):
        Workload(bytes=MiB, split="yes")
    with pytest.raises(UsageError, match="'host_reads': expected at most 1 - host_writes"):
        Workload(bytes=MiB, host_writes=0.75, host_reads=0.5, split=True)


def test_a_loop_read_from_a_trace_has_no_typed_bounds():
    # a trace's loop of 137,960 iterations, two million copies each way, kernels of two hours: priced as they are
    w = Workload(bytes=MiB, iterations=137_960, copies=2_000_000, kernel_s=7200.0)
    assert (w.iterations, w.copies, w.kernel_s) == (137_960, 2_000_000, 7200.0)
    with pytest.raises(UsageError, match="key 'iterations': expected an integer of 1 or more"):
        Workload(bytes=MiB, iterations=0)
    # what a person types keeps the loop op's bounds, named as they typed them
    with pytest.raises(UsageError, match=r"x: key 'copies': expected an integer from 1 to 1000000 .*got 2000000"):
        from_mapping({"bytes": "1MiB", "copies": 2_000_000}, "x")
    with pytest.raises(UsageError, match=r"x: option '--iterations': expected an integer from 1 to 100000"):
        from_mapping({"bytes": "1MiB", "iterations": 137_960}, "x", options=True)


def test_a_workload_s_kernel_time_reads_as_a_time_without_an_exponent():
    # a PyTorch loop read as one iteration of 72,333 launches: 1.59 s of kernels, once said "1.59e+03 ms"
    assert "kernels 1.59 s" in Workload(bytes=MiB, kernel_s=1.59).describe()
    assert "kernels 917 µs" in Workload(bytes=MiB, kernel_s=917e-6).describe()


def test_a_share_too_small_for_two_decimals_is_said_under_them_never_as_zero():
    from umprof.model.workload import _pct

    assert _pct(0.0) == "0%" and _pct(0.5) == "50%" and _pct(0.0018) == "0.18%"
    assert _pct(9.4e-6) == "under 0.01%"  # a few KiB read back of a GiB: written, not nothing

"""Advice in the program's own framework: every PyTorch fixture trace (nsys and torch.profiler) is told PyTorch's
calls and never pycuda's or CUDA C's, the JSON names the framework and its evidence, and a PyTorch program's own
choices are priced, listed with their bands and advised only where the low end of the band clears the prediction's
own error."""

import json
import os
import re

import pytest

from tests.unit.model import traced
from tests.unit.model.test_golden_advice import golden_of
from umprof.model import frameworks
from umprof.model.advice import packing, readback_waits
from umprof.model.advice import thresholds as th

# calls of other frameworks' APIs: a change for a PyTorch program naming one is not in its idiom
FOREIGN = re.compile(r"pycuda|pagelocked_empty|memcpy_htod|memcpy_dtoh|cuda-bindings|cuMemHostRegister|cudaHostAlloc|"
                     r"cudaMallocHost|(?<!cudart\(\)\.)cudaHostRegister\b|cudaMemcpy|cudaMemPrefetchAsync|cupy|malloc'd")
TRACES = traced.torch_traces()
GOLDEN = traced.GOLDEN / "torch"


def _said(d: dict) -> str:
    return " ".join([d["verdict"], *(a["change"] for a in d["advice"]), *(c["idiom"] for c in d["choices"])])


@pytest.mark.parametrize("trace", TRACES, ids=traced.torch_stem)
def test_a_pytorch_program_is_told_pytorchs_calls_only(trace):
    for adv in traced.torch_advice(trace):
        d = adv.to_dict()
        if d["framework"]["name"] != "pytorch":
            continue
        assert d["framework"]["evidence"]
        hit = FOREIGN.search(_said(d))
        assert hit is None, f"{trace.name}: '{hit and hit.group(0)}' in {_said(d)[:300]}"


@pytest.mark.parametrize("trace", TRACES, ids=traced.torch_stem)
def test_a_program_is_ranked_only_the_ways_its_framework_can_make(trace):
    for adv in traced.torch_advice(trace):
        cannot = frameworks.cannot_make(adv.framework)
        ranked = {r["strategy"] for r in adv.ranking}
        assert not ranked & set(cannot), f"{trace.name}: {sorted(ranked & set(cannot))} ranked for {adv.framework}"
        # each with its reason (or the calibration's own, where it had one first)
        if adv.framework == "pytorch" and ranked:
            assert adv.excluded["mapped"] == adv.excluded["zero-copy"] == cannot["mapped"]
            assert adv.excluded["managed-prefetch"] == cannot["managed-prefetch"]


def test_a_cuda_c_program_is_still_ranked_the_ways_that_read_in_place_and_managed_memory():
    (adv,) = traced.torch_advice(next(p for p in TRACES if traced.torch_stem(p) == "h100-batch_loop.nsys"))
    assert adv.framework == "cuda" and not frameworks.cannot_make("cuda")
    assert {"zero-copy", "managed-prefetch"} <= {r["strategy"] for r in adv.ranking}


def test_every_torch_fixture_of_a_pytorch_program_reads_as_pytorch():
    told = {traced.torch_stem(p): traced.torch_advice(p)[0].framework for p in TRACES if traced.torch_advice(p)}
    assert told["h100-readback.nsys"] == told["h100-readback.kineto"] == "pytorch"
    assert told["h100-cupy_batches.nsys"] == "cupy" and told["h100-batch_loop.nsys"] == "cuda"


@pytest.mark.parametrize("trace", TRACES, ids=traced.torch_stem)
def test_a_choice_is_advised_only_where_its_band_clears_the_error(trace):
    for adv in traced.torch_advice(trace):
        loop = adv.loop_advice
        for c in adv.choices:
            if c["advised"]:
                assert c["low_s"] > th.SAVING_ERROR * adv.priced_s and c["low_s"] > 0
        if loop is not None and loop.idiom and loop.idiom not in (packing.IDIOM, readback_waits.IDIOM):
            chosen = next(c for c in adv.choices if c.get("chosen"))
            assert chosen["advised"] and chosen["code"] == loop.idiom and loop.change == chosen["idiom"]
            assert 0 < loop.saving_low_s <= loop.saving_s <= loop.now_s
            assert loop.conditional == chosen["conditional"]


def test_copies_back_into_fresh_pageable_tensors_are_told_a_preallocated_pinned_one():
    for reader in ("sqlite.gz", "json.gz"):
        (adv,) = traced.torch_advice(traced.TORCH / f"h100-readback.{reader}")
        loop = adv.loop_advice
        assert loop.idiom == "pinned-out" and "pin_memory=True" in loop.change and not loop.conditional
        assert loop.saving_s / loop.now_s > 0.5


def test_a_choice_whose_saving_rests_on_what_the_trace_cannot_show_is_said_as_conditional():
    (adv,) = traced.torch_advice(traced.TORCH / "h100-train_loader.json.gz")
    loop = adv.loop_advice
    assert loop.idiom == "resident" and loop.conditional and "cannot show" in loop.note
    assert adv.verdict.count("Where this holds") == 1


def test_the_json_shows_the_inner_loop_and_the_choices():
    (adv,) = traced.torch_advice(traced.TORCH / "h100-offload_weights.sqlite.gz")
    d = json.loads(json.dumps(adv.to_dict(), default=str))
    assert d["loop"]["inner"]["iterations"] > d["loop"]["iterations"]
    assert d["choices"] and {"code", "idiom", "saving_s", "low_s", "high_s", "conditional", "advised"} <= set(
        d["choices"][0])


@pytest.mark.parametrize("trace", TRACES, ids=traced.torch_stem)
def test_the_advice_on_each_torch_fixture_is_its_golden_file(trace):
    stem = traced.torch_stem(trace)
    got = [golden_of(a) for a in traced.torch_advice(trace)]
    text = json.dumps(got, indent=1, sort_keys=True, ensure_ascii=False, default=str) + "\n"
    golden = GOLDEN / f"{stem}.json"
    if os.environ.get("UMPROF_REGOLD") == "1":
        GOLDEN.mkdir(exist_ok=True)
        golden.write_text(text)
    assert golden.is_file(), f"{golden} is missing: regenerate with UMPROF_REGOLD=1"
    assert text == golden.read_text(), f"{stem}: the advice differs from {golden.name} (UMPROF_REGOLD=1 rewrites it)"

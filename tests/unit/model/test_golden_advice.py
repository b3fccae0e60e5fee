"""The advice on every fixture trace (tests/fixtures/traces), as `umprof.advise(path)` gives it with the shipped
calibration of the trace's GPU, against the golden files in tests/fixtures/golden: any change to what umprof
advises on a real trace shows here, fixture by fixture.

To regenerate them after a change that is meant to move the advice (and say in the commit which fixtures' advice
changed and how)::

    UMPROF_REGOLD=1 PYTHONPATH=$PWD python3 -m pytest -q tests/unit/model/test_golden_advice.py
"""

import json
import math
import os
import re

import pytest

from tests.unit.model import traced
from umprof.core.errors import UsageError

DIGITS = 4  # significant digits a float keeps: the figures stable across platforms' last bits, still a real check


def rounded(v):
    """A JSON-ready copy of the advice's dict: floats to DIGITS significant digits, NaN as None, numpy scalars as
    Python's."""
    v = getattr(v, "item", lambda: v)() if not isinstance(v, (dict, list, tuple, str)) else v
    if isinstance(v, dict):
        return {str(k): rounded(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [rounded(x) for x in v]
    if isinstance(v, float):
        if math.isnan(v):
            return None
        return v if math.isinf(v) or v == 0 else float(f"{v:.{DIGITS}g}")
    return v


# the flows a golden file keeps, the most time first, as the terminal shows them: the rest are the trace model's
# (tested on their own), and a job's many small flows would weigh more than its advice
FLOWS_KEPT = 10


def golden_of(adv) -> dict:
    """What a golden file keeps of one advice: its dict, rounded (``rounded``), its flows cut to FLOWS_KEPT with how
    many were left out."""
    d = rounded(adv.to_dict())
    flows = d.get("flows")
    if isinstance(flows, list) and len(flows) > FLOWS_KEPT:
        d["flows"], d["flows_left_out"] = flows[:FLOWS_KEPT], len(flows) - FLOWS_KEPT
    return d


def golden_text(stem: str) -> str:
    """The golden file's text for one fixture trace: its advice (one dict per process and GPU), keys sorted; for a
    trace umprof refuses (CUDA graphs traced whole), the refusal's line, the trace named by its stem."""
    name, gpu = traced.split(stem)
    try:
        got = [golden_of(a) for a in traced.advice(name, gpu)]
    except UsageError as e:
        got = {"refused": str(e).replace(str(traced.path(name, gpu)), stem)}
    return json.dumps(got, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


@pytest.mark.parametrize("stem", traced.stems())
def test_the_advice_on_each_fixture_trace_is_its_golden_file(stem):
    golden = traced.GOLDEN / f"{stem}.json"
    text = golden_text(stem)
    if os.environ.get("UMPROF_REGOLD") == "1":
        golden.write_text(text)
    assert golden.is_file(), f"{golden} is missing: regenerate with UMPROF_REGOLD=1 (see the module's docstring)"
    assert text == golden.read_text(), f"{stem}: the advice differs from {golden.name} (UMPROF_REGOLD=1 rewrites it)"


def test_every_golden_file_has_its_trace():
    assert {p.stem for p in traced.GOLDEN.glob("*.json")} == set(traced.stems())


@pytest.mark.parametrize("stem", ["h100-stream_loop", "h200-particles", "h200-two_gpus", "h100-vectorAdd"])
def test_limits_and_notes_carry_a_stable_code_beside_their_text(stem):
    for d in (a.to_dict() for a in traced.advice(*traced.split(stem))):
        assert d["schema"] == 2
        for x in d["limits"] + d["notes"]:
            assert set(x) == {"code", "text"} and re.fullmatch(r"[a-z]+(-[a-z0-9]+)*", x["code"]) and x["text"], x


def test_no_golden_advice_says_within_0_percent():
    for p in traced.GOLDEN.glob("*.json"):
        assert "within 0%" not in p.read_text(), p.name

"""`umprof advise` in the terminal for a PyTorch program: the framework with its evidence, and its own choices priced
with their bands, the one advised marked."""

import io

from rich.console import Console

from tests.unit.model import traced
from umprof.views.advice import print_advice


def shown(name: str) -> str:
    buf = io.StringIO()
    for adv in traced.torch_advice(traced.TORCH / name):
        print_advice(adv, Console(file=buf, width=200, color_system=None))
    return buf.getvalue()


def test_a_pytorch_program_is_shown_its_framework_and_choices():
    text = shown("h100-readback.json.gz")
    assert "framework: pytorch (a torch.profiler trace)" in text
    assert "pytorch's choices" in text and "pinned-out" in text and "chosen" in text
    assert "pin_memory=True" in text and "pycuda" not in text


def test_an_inner_loop_is_shown_inside_its_loop():
    assert "inside each: a loop of" in shown("h100-offload_weights.sqlite.gz")

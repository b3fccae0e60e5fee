"""The layering rule (DESIGN.md): imports go downward only, core → nsight → measure → model →
views → cluster → api → cli, and no module imports itself back through a circle. Every import is
counted, those inside functions too, so a lazy upward import is caught as well."""

import ast
import importlib
import subprocess
import sys

import pytest

from tests.unit.data import ROOT

LAYERS = ["core", "nsight", "measure", "model", "views", "cluster", "api", "cli"]
PACKAGE = ROOT / "umprof"


def _module_name(path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def layer_of(module: str) -> int:
    """A module's layer: its subpackage, ``umprof.api`` and the package itself (the public API)
    as 'api', ``umprof.__main__`` as 'cli', and ``umprof.nvtx`` (the documented alias of
    ``umprof.nsight.nvtx``) as 'nsight'."""
    parts = module.split(".")
    if module in ("umprof", "umprof.api"):
        return LAYERS.index("api")
    if module == "umprof.__main__":
        return LAYERS.index("cli")
    if module == "umprof.nvtx":
        return LAYERS.index("nsight")
    return LAYERS.index(parts[1])


def imports_of(module: str) -> set[str]:
    """Every umprof module ``module`` imports, at module level or inside functions."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.split(".")[0] == "umprof"}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "umprof":
            for a in node.names:  # `from umprof.x import y`: y may be a submodule
                sub = f"{node.module}.{a.name}"
                out.add(sub if sub in MODULES else node.module)
    return {m for m in out if m in MODULES and m != module}


def test_every_module_is_in_a_layer():
    for m in MODULES:
        assert 0 <= layer_of(m) < len(LAYERS), m


@pytest.mark.parametrize("module", sorted(MODULES))
def test_every_module_imports_without_a_gpu(module):
    importlib.import_module(module)


def test_imports_go_downward_only():
    upward = [f"{m} ({LAYERS[layer_of(m)]}) imports {t} ({LAYERS[layer_of(t)]})"
              for m in MODULES for t in imports_of(m) if layer_of(t) > layer_of(m)]
    assert not upward, "\n".join(upward)


def test_no_import_circle():
    graph = {m: imports_of(m) for m in MODULES}
    state, circles = {}, []

    def visit(m, path):
        state[m] = "open"
        for t in graph[m]:
            if state.get(t) == "open":
                circles.append(" → ".join(path[path.index(t):] + [t]))
            elif t not in state:
                visit(t, path + [t])
        state[m] = "done"

    for m in graph:
        if m not in state:
            visit(m, [m])
    assert not circles, "\n".join(circles)


def test_cli_modules_are_thin():
    for p in (PACKAGE / "cli").glob("*.py"):
        assert len(p.read_text(encoding="utf-8").splitlines()) < 200, p


def test_importing_umprof_loads_no_gpu_and_no_plotting():
    code = ("import sys, umprof; from umprof import nvtx; "
            "print(sorted(m for m in ('pycuda', 'cuda', 'matplotlib', 'rich') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"


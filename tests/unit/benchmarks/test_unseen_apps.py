"""benchmarks/apps/verification without a GPU: every application there is one run.sh builds and times, in modes its program
accepts, and it compiles (CI has nvcc): a program that did not build would cost a run's timings."""

import py_compile
import re
import shutil
import subprocess

import pytest

from tests.unit.data import ROOT, load_script

UNSEEN = ROOT / "benchmarks" / "apps" / "verification"
RUN_SH = (UNSEEN / "run.sh").read_text()
MODES = load_script("benchmarks/apps/verification/to_apps_json.py").run_sh_modes(UNSEEN / "run.sh")
PROGRAMS = sorted(p.stem for p in [*UNSEEN.glob("*.cu"), *UNSEEN.glob("*.py")] if p.stem != "to_apps_json")
CUDA_PROGRAMS = sorted(p.stem for p in UNSEEN.glob("*.cu"))


def test_every_program_is_timed_and_the_default_run_holds_all_but_the_multi_gpu_one():
    assert sorted(MODES) == PROGRAMS
    default = re.search(r'apps="\$\{ONLY:-([^}]*)\}"', RUN_SH).group(1).split()
    assert sorted(default + ["two_gpus"]) == PROGRAMS


@pytest.mark.parametrize("name", PROGRAMS)
def test_a_program_accepts_each_mode_run_sh_times_it_in(name):
    # every mode is a branch of the program's --mem (an unknown one exits 2)
    source = next(p for p in (UNSEEN / f"{name}.cu", UNSEEN / f"{name}.py") if p.exists()).read_text()
    for mode in MODES[name]:
        assert f'"{mode}"' in source, mode


@pytest.mark.nvcc
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
@pytest.mark.parametrize("name", CUDA_PROGRAMS)
def test_the_program_compiles(name, tmp_path):
    # as run.sh builds it on the GPU machine
    cmd = ["nvcc", "-O2", "-arch=sm_90", "-std=c++17", "-o", str(tmp_path / name), str(UNSEEN / f"{name}.cu")]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.parametrize("name", sorted(set(PROGRAMS) - set(CUDA_PROGRAMS)))
def test_the_python_program_compiles(name, tmp_path):
    # run by python3 on the GPU machine (pycuda there, not here): at least its syntax is checked
    py_compile.compile(str(UNSEEN / f"{name}.py"), cfile=str(tmp_path / f"{name}.pyc"), doraise=True)


def test_a_variant_is_named_by_its_strategy_and_run_sh_names_every_mode_so():
    names = load_script("benchmarks/apps/verification/to_apps_json.py").strategy_name
    assert names("registered-sampled") == "pageable-registered-sampled"
    assert names("registered-probe") == "pageable-registered-probe"
    assert names("pinned-sampled") == "pinned-sampled" and names("staged") == "pageable-staged"
    assert names("once") == "once" and names("managed-prefetch") == "managed-prefetch"

"""Compiled kernels on disk: nvcc runs once per source, options, architecture and nvcc.

A cubin is stored under a key hashed from the kernel file's text, the text of every file it
``#include``s with quotes (recursively), the compile options, the target architecture and
``nvcc --version``; any change to one of them compiles afresh. The folder is
``$UMPROF_CACHE_DIR``, else ``$XDG_CACHE_HOME/umprof/kernels``, else
``~/.cache/umprof/kernels``. A cache that cannot be written is skipped, never fatal. Needs
nvcc, not a GPU (so CI tests it).
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from umprof.core.errors import GpuUnavailable

_INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.MULTILINE)


def cache_dir() -> Path:
    """Where cubins are kept."""
    if os.environ.get("UMPROF_CACHE_DIR"):
        return Path(os.environ["UMPROF_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "umprof" / "kernels"


def nvcc_path() -> str:
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        raise GpuUnavailable("nvcc is not on PATH: umprof compiles its kernels with the CUDA toolkit's nvcc; "
                             "install it or add it to PATH")
    return nvcc


@functools.lru_cache(maxsize=4)
def nvcc_version(nvcc: str) -> str:
    return subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout


def _sources(path: Path, seen: set | None = None) -> list[tuple[str, str]]:
    """(name, text) of the file and of everything it includes with quotes, in include order."""
    seen = set() if seen is None else seen
    path = path.resolve()
    if path in seen or not path.is_file():
        return []
    seen.add(path)
    text = path.read_text()
    out = [(path.name, text)]
    for name in _INCLUDE.findall(text):
        out += _sources(path.parent / name, seen)
    return out


def cache_key(path: Path, arch: str, options: list[str], nvcc: str) -> str:
    """The hash that names a cubin: sources, options, architecture, compiler."""
    h = hashlib.sha256()
    for name, text in _sources(Path(path)):
        h.update(name.encode() + b"\0" + text.encode() + b"\0")
    h.update("\0".join([arch, *options, nvcc_version(nvcc)]).encode())
    return h.hexdigest()[:32]


def compile_cubin(path: Path, arch: str, options: list[str]) -> tuple[bytes, bool]:
    """(the cubin of ``path`` for ``arch``, whether it came from the cache)."""
    nvcc = nvcc_path()
    path = Path(path)
    key = cache_key(path, arch, options, nvcc)
    cached = cache_dir() / f"{path.stem}-{arch}-{key}.cubin"
    try:
        return cached.read_bytes(), True
    except OSError:
        pass
    with tempfile.TemporaryDirectory(prefix="umprof-nvcc-") as tmp:
        out = Path(tmp) / "kernel.cubin"
        cmd = [nvcc, "-cubin", f"-arch={arch}", "-o", str(out), f"-I{path.parent}", *options, str(path)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"nvcc failed on {path.name} for {arch}:\n{proc.stderr.strip()}")
        cubin = out.read_bytes()
    store(cached, cubin)
    return cubin, False


def store(cached: Path, data: bytes) -> bool:
    """Write ``data`` to the cache file ``cached`` whole, then rename it into place (a concurrent run
    never reads half a file); False where the cache cannot be written (a read-only home: compile every
    run, still correct)."""
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(dir=cached.parent, prefix=".tmp-")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp_name, 0o755)  # a shared library is mapped executable
        os.replace(tmp_name, cached)
        return True
    except OSError:
        return False

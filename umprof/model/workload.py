"""The workload model: an application's loop over one buffer, in the terms that decide which
host-memory strategy wins.

A :class:`Workload` is the buffer's size; how many times the loop runs (``iterations``); what
the host writes before each iteration (``host_writes``: the fraction of the buffer that is new
data; 0 = produced once); how many kernel passes each iteration makes (``reuse``), over which
fraction of the 64 KiB pages (``touched``), walking them how (``pattern``: streaming, strided,
random, warp-pages), and what fraction of what they touch they also write (``gpu_writes``: 0 =
a read-only input, 1 = updated in place); what the host reads after each iteration
(``host_reads``: 0 = only the kernel's small result); and whether it fits in device memory
(``fits``; by default from the device's memory). ``pingpong`` is the old name for
host_writes = gpu_writes = host_reads = 1. Three keys describe an application read from its trace
(``umprof advise``): ``copies``, its explicit copies each way per iteration (in equal parts);
``kernel_s``, its kernels' own time per iteration on device-resident data, below which no
strategy's kernel goes; and ``kernel_bytes``, the most those kernels can have moved of the buffer in
that time (at the device memory's theoretical rate), which is all a kernel reading the buffer across
the link moves. ``host_pages`` says how its pageable memory is backed: ``numpy`` (a Python
program's arrays, numpy's huge-page advice; the default) or ``malloc`` (a C or C++ program's buffers,
which fault in and are page-locked 4 KiB at a time where the host gives huge pages only where advised).
``first_write`` says how the host writes the buffer first: ``copy`` (its data copied in, memcpy, as
umprof's loop does; the default) or ``stores`` (each word stored as a program computes it: an
application read from its trace), which page-locked memory takes longer to absorb than memory whose pages
fault in as they are written. ``host_reader`` says how the host reads the buffer back: ``numpy`` (a vectorized sum, a
Python program's read; the default) or ``words`` (each word added in turn, a compiled program's loop), which waits
longer on managed pages faulting back from the GPU. ``split`` says where the host reads: by default (false) the part of the buffer
it wrote (one buffer updated in place: umprof's loop), and with ``split = true`` another part, after the part it
writes (an application's separate input and output buffers: the host writes the input, the GPU writes the
output, the host reads that). It changes what managed memory moves (the host's writes land on pages the
kernels last had on the GPU) and the host's first write, which covers the input alone (``first_write_bytes``).
Like ``kernel_s`` it describes an application read from its trace; umprof's loop (``recommend --verify``) runs
the in-place layout only.

It is written as CLI options (``umprof recommend --bytes 256MiB --reuse 16 --host-writes 0.1``)
or a TOML file (``scenarios/workloads/example.toml`` documents every key), and it maps
one-to-one onto the ``loop`` op's axes, so ``recommend --verify`` measures exactly the loop it
predicted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from functools import partial
from pathlib import Path

from umprof.core.errors import UsageError
from umprof.core.units import format_size, format_time, parse_size
from umprof.measure.ops.lifecycle import PAGE_BYTES, PAGE_WORDS, PATTERNS  # noqa: F401 (the op's granule and patterns)
from umprof.measure.ops.loop import FIRST_WRITES, HOST_READERS
from umprof.measure.strategies import HOST_PAGES

# the most kernel passes an iteration a workload takes: past it, a way that reads host memory in place is priced
# crossing the link more often than any copy way's whole loop takes, so more passes change no ranking
MAX_REUSE = 1024


@dataclass(frozen=True)
class Workload:
    """One buffer's use by an application (see the module's docstring)."""

    bytes: int
    name: str = ""
    reuse: int = 1
    touched: float = 1.0
    pattern: str = "streaming"
    stride: int = 8
    iterations: int = 1
    host_writes: float = 0.0
    gpu_writes: float = 1.0
    host_reads: float = 1.0
    pingpong: bool = False
    fits: bool | None = None
    copies: int = 1  # explicit copies each way per iteration, in equal parts (an application's records)
    kernel_s: float = 0.0  # the kernels' own time per iteration on device-resident data (from a trace): a floor
    kernel_bytes: int = 0  # the most those kernels moved of the buffer per iteration (from a trace); 0: not known
    host_pages: str = "numpy"  # how its pageable memory is backed: a Python program's numpy arrays, or C's malloc
    first_write: str = "copy"  # how the host writes the buffer first: its data copied in, or stored word by word
    host_reader: str = "numpy"  # how the host reads it back: numpy's vectorized sum, or word by word (compiled code)
    split: bool = False  # the host reads another part than it writes (separate input and output buffers)

    def __post_init__(self):
        _check(self)

    @property
    def label(self) -> str:
        return self.name or self.describe()

    @property
    def touched_text(self) -> str:
        """The touched fraction as a percentage a person reads (two decimals under 1%)."""
        return f"{self.touched:.0%}" if self.touched >= 0.01 else f"{self.touched:.2%}"

    def describe(self) -> str:
        """One line a person reads: '256MiB, reuse 16, touched 100%, streaming, 1 iteration'."""
        parts = [format_size(self.bytes), f"reuse {self.reuse}", f"touched {self.touched_text}",
                 self.pattern + (f" (stride {self.stride})" if self.pattern == "strided" else "")]
        parts.append(f"{self.iterations} iteration" + ("s" if self.iterations != 1 else ""))
        parts.append(f"host writes {_pct(self.host_writes)}, GPU writes {_pct(self.gpu_writes)}, "
                     f"host reads {_pct(self.host_reads)}")
        if self.fits is False:
            parts.append("does not fit in device memory")
        if self.copies > 1:
            parts.append(f"{self.copies} copies each way")
        if self.host_pages != "numpy":
            parts.append(f"{self.host_pages}'d pages")
        if self.first_write != "copy":
            parts.append("first written by stores")
        if self.host_reader != "numpy":
            parts.append("read back word by word")
        if self.split:
            parts.append("input and output apart")
        if self.kernel_s > 0:
            parts.append(f"kernels {format_time(self.kernel_s)}")
        if self.kernel_bytes > 0:
            parts.append(f"kernels move at most {format_size(self.kernel_bytes)}")
        return ", ".join(parts)

    @property
    def host_write_bytes(self) -> float:
        """The bytes the host writes each iteration."""
        return self.host_writes * self.bytes

    @property
    def host_read_bytes(self) -> float:
        """The bytes the host reads each iteration."""
        return self.host_reads * self.bytes

    @property
    def first_write_bytes(self) -> float:
        """The bytes the host writes before the loop: the whole buffer (umprof's loop), or, split, the input
        alone (all but the output it reads; all of the input, where each iteration rewrites a part)."""
        return (1.0 - self.host_reads) * self.bytes if self.split else float(self.bytes)

    @property
    def output_first_bytes(self) -> float:
        """The bytes the host does not write before the loop: split, the output, whose pages are first touched by the
        GPU or by the first copies back (``Calibration._first_write``); none where the host writes the whole buffer."""
        return float(self.bytes) - self.first_write_bytes

    @property
    def host_span(self) -> float:
        """The bytes the host touches each iteration: its writes and reads are both prefixes of the buffer,
        or, split, apart (an application's input and output)."""
        bw, br = self.host_write_bytes, self.host_read_bytes
        return min(float(self.bytes), bw + br) if self.split else max(bw, br)

    @property
    def read_only(self) -> bool:
        """The kernel never writes the buffer (READ_MOSTLY applies)."""
        return self.gpu_writes == 0

    def loop_axes(self, iterations: int | None = None) -> dict[str, list]:
        """The ``loop`` op's axes for this workload (every strategy is added by the caller);
        ``iterations`` overrides the workload's (a verification runs at least three, so that
        the steady state is measured)."""
        return {
            "bytes": [self.bytes], "reuse": [self.reuse], "touched": [self.touched], "pattern": [self.pattern],
            "stride": [self.stride], "iterations": [iterations or self.iterations],
            "host_writes": [self.host_writes], "gpu_writes": [self.gpu_writes], "host_reads": [self.host_reads],
            "copies": [self.copies], "host_pages": [self.host_pages], "first_write": [self.first_write],
            "host_reader": [self.host_reader],
        }


def _pct(f: float) -> str:
    """A share in words: whole percents from 1%, two decimals below it, and "under 0.01%" for a share that is not
    zero but would print as 0.00% (a kernel that writes a few KiB of a GiB does write it)."""
    if f == 0 or f >= 0.01:
        return f"{f:.0%}"
    return f"{f:.2%}" if f >= 0.00005 else "under 0.01%"


KEYS = {f.name for f in fields(Workload)}
FRACTIONS = ("host_writes", "gpu_writes", "host_reads")
# The bounds of what a person types (a workload file, `recommend`'s options), not of what a trace holds: a loop of
# more iterations or copies, or slower kernels, read from a trace is priced as it is. `recommend --verify` runs the
# loop op, which measures at most MAX_ITERATIONS iterations and whose copies are each a cudaMemcpy call.
MAX_ITERATIONS = 100_000
MAX_COPIES = 1_000_000
MAX_KERNEL_S = 3600


class KeyNames(dict):
    """How an error names a workload's keys: as a file's keys (``key 'host_writes'``) or as the CLI's options
    (``option '--host-writes'``); ``split_on`` is how the input and output apart are said."""

    def __init__(self, kind: str, name, split_on: str):
        super().__init__({k: name(k) for k in KEYS}, split_on=split_on)
        self.kind = kind


FILE_KEYS = KeyNames("key", lambda k: k, "split = true")
OPTIONS = KeyNames("option", lambda k: "--" + k.replace("_", "-"), "--split")


class WorkloadError(UsageError):
    """A workload's key with a value it cannot take: ``says(names)`` is what is wrong, the words that follow the
    key's name (": expected ..."), naming the other keys it mentions through ``names`` (FILE_KEYS or OPTIONS),
    so that one error reads right from a file or the CLI."""

    def __init__(self, key: str, says):
        self.key, self.says = key, says
        super().__init__(self.text(FILE_KEYS))

    def text(self, names: KeyNames) -> str:
        return f"{names.kind} '{names[self.key]}'{self.says(names)}"


def _check(w: Workload) -> None:
    """Raise WorkloadError naming the key, what is expected and what was given (``_check_sizes``, then
    ``_check_host``)."""
    bad = partial(_bad, w)
    _check_sizes(w, bad)
    _check_host(w, bad)


def _bad(w: Workload, key: str, expected) -> None:
    """A WorkloadError for ``key``; ``expected`` is text, or a function of the key names where it mentions other
    keys."""
    given = getattr(w, key)
    said = expected if callable(expected) else lambda n: expected
    raise WorkloadError(key, lambda n: f": expected {said(n)}, got {given!r}")


def _check_sizes(w: Workload, bad) -> None:
    """The workload's name, sizes, counts and fractions."""
    if not isinstance(w.name, str):
        bad("name", "text")
    if not isinstance(w.bytes, int) or isinstance(w.bytes, bool) or w.bytes < PAGE_BYTES:
        bad("bytes", "a size of at least 64KiB ('256MiB', 1073741824)")
    if w.bytes % PAGE_BYTES:
        bad("bytes", lambda n: f"a multiple of 64 KiB (the granule of '{n['touched']}')")
    if not isinstance(w.reuse, int) or isinstance(w.reuse, bool) or not 1 <= w.reuse <= MAX_REUSE:
        bad("reuse", f"an integer from 1 to {MAX_REUSE} (kernel passes per transfer)")
    if isinstance(w.touched, bool) or not isinstance(w.touched, (int, float)) or not 0 < w.touched <= 1:
        bad("touched", "a fraction in (0, 1] of the buffer each pass touches")
    if w.pattern not in PATTERNS:
        bad("pattern", "one of " + ", ".join(PATTERNS))
    if (not isinstance(w.stride, int) or isinstance(w.stride, bool) or w.stride < 1
            or w.stride & (w.stride - 1) or w.stride > PAGE_WORDS):
        bad("stride", f"a power of two from 1 to {PAGE_WORDS} (4-byte words between touched words)")
    if not isinstance(w.iterations, int) or isinstance(w.iterations, bool) or w.iterations < 1:
        bad("iterations", "an integer of 1 or more (iterations of the application's loop)")
    for key, what in (("host_writes", "of the buffer the host writes before each iteration"),
                      ("gpu_writes", "of what a kernel pass touches that it also writes (0: a read-only input)"),
                      ("host_reads", "of the buffer the host reads after each iteration (0: only a small result)")):
        v = getattr(w, key)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1:
            bad(key, f"a fraction from 0 to 1 {what}")
    if not isinstance(w.pingpong, bool):
        bad("pingpong", lambda n: f"true or false ({n['host_writes']} = {n['gpu_writes']} = {n['host_reads']} = 1)")
    if w.fits is not None and not isinstance(w.fits, bool):
        bad("fits", "true, false, or absent (decided from the device's memory)")
    if not isinstance(w.copies, int) or isinstance(w.copies, bool) or w.copies < 1:
        bad("copies", "an integer of 1 or more (explicit copies each way per iteration)")
    if isinstance(w.kernel_s, bool) or not isinstance(w.kernel_s, (int, float)) or not 0 <= w.kernel_s < math.inf:
        bad("kernel_s", "seconds of kernel time per iteration, 0 or more (0: the passes' own)")
    if not isinstance(w.kernel_bytes, int) or isinstance(w.kernel_bytes, bool) or w.kernel_bytes < 0:
        bad("kernel_bytes", "bytes the kernels move of the buffer per iteration at most, 0 or more (0: not known)")
    if w.touched * (w.bytes // PAGE_BYTES) < 1:
        bad("touched", f"a fraction that selects at least one 64 KiB page of {format_size(w.bytes)}")


def _check_host(w: Workload, bad) -> None:
    """How the host's memory is backed, first written and read back, and whether its parts are apart."""
    if w.host_pages not in HOST_PAGES:
        bad("host_pages", "one of " + ", ".join(HOST_PAGES) + " (how its pageable memory is backed: a Python "
            "program's numpy arrays, a C or C++ program's malloc)")
    if w.first_write not in FIRST_WRITES:
        bad("first_write", "one of " + ", ".join(FIRST_WRITES) + " (how the host writes the buffer first: its "
            "data copied in, or stored word by word as a program computes it)")
    if w.host_reader not in HOST_READERS:
        bad("host_reader", "one of " + ", ".join(HOST_READERS) + " (how the host reads the buffer back: numpy's "
            "vectorized sum, or each word in turn as a compiled program's loop)")
    if not isinstance(w.split, bool):
        bad("split", "true or false (whether the host reads another part of the buffer than it writes: "
            "separate input and output buffers)")
    if w.split and w.host_writes + w.host_reads > 1 + 1e-6:
        bad("host_reads", lambda n: f"at most 1 - {n['host_writes']} ({1 - w.host_writes:.6g}) with {n['split_on']} "
            "(the parts the host writes and reads are apart)")


def _check_typed(values: dict) -> None:
    """The bounds of a workload a person typed (MAX_ITERATIONS, MAX_COPIES, MAX_KERNEL_S), beyond ``_check``'s: a
    WorkloadError for an integer or a number of seconds out of them (the type errors are ``_check``'s)."""
    for key, most, what in (("iterations", MAX_ITERATIONS, "iterations of the application's loop"),
                            ("copies", MAX_COPIES, "explicit copies each way per iteration")):
        given = values.get(key)
        if isinstance(given, int) and not isinstance(given, bool) and not 1 <= given <= most:
            raise WorkloadError(key, lambda n: f": expected an integer from 1 to {most} ({what}), got {given!r}")
    seconds = values.get("kernel_s")
    if isinstance(seconds, (int, float)) and not isinstance(seconds, bool) and seconds >= MAX_KERNEL_S:
        raise WorkloadError("kernel_s", lambda n: f": expected seconds of kernel time per iteration, 0 to "
                            f"{MAX_KERNEL_S} (0: the passes' own), got {seconds!r}")


def from_mapping(raw: dict, where: str, options: bool = False) -> Workload:
    """A Workload from a TOML table or the CLI's options, within the bounds of what a person types
    (``_check_typed``); ``where`` names the source in errors, and with ``options`` they name each key as the
    option that gave it (``--host-writes``, not ``host_writes``)."""
    try:
        return _from_mapping(raw)
    except WorkloadError as e:
        raise UsageError(f"{where}: {e.text(OPTIONS if options else FILE_KEYS)}") from None
    except UsageError as e:
        raise UsageError(f"{where}: {e}") from None


def _from_mapping(raw: dict) -> Workload:
    unknown = sorted(set(raw) - KEYS)
    if unknown:
        raise UsageError(f"unknown key {unknown[0]!r}; a workload's keys are: {', '.join(sorted(KEYS))}")
    if "bytes" not in raw:
        raise UsageError("key 'bytes' is missing: expected the buffer's size ('256MiB')")
    values = dict(raw)
    try:
        values["bytes"] = parse_size(values["bytes"])
    except (UsageError, ValueError, TypeError):
        given = raw["bytes"]
        raise WorkloadError("bytes", lambda n: f": expected a size ('256MiB', 1073741824), got {given!r}") from None
    if isinstance(values.get("kernel_bytes"), str):
        try:
            values["kernel_bytes"] = parse_size(values["kernel_bytes"])
        except (UsageError, ValueError):
            given = raw["kernel_bytes"]
            raise WorkloadError("kernel_bytes", lambda n: f": expected a size ('64MiB', 67108864), got {given!r}") \
                from None
    for k in ("touched", *FRACTIONS):
        if isinstance(values.get(k), int) and not isinstance(values.get(k), bool):
            values[k] = float(values[k])
    if values.get("pingpong") is True:
        other = {k: values[k] for k in FRACTIONS if k in values and values[k] != 1}
        if other:
            k, v = next(iter(other.items()))
            raise WorkloadError("pingpong", lambda n: f" means {n['host_writes']} = {n['gpu_writes']} = "
                                f"{n['host_reads']} = 1, but '{n[k]}' is {v!r}: give one or the other")
        values.update({k: 1.0 for k in FRACTIONS})
    _check_typed(values)
    return Workload(**values)


def load_workloads(path: str | Path) -> list[Workload]:
    """The workloads of a TOML file: one ``[workload]`` table, or several ``[[workload]]``."""
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib

    path = Path(path)
    if not path.is_file():
        raise UsageError(f"{path}: no such workload file")
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as e:
        raise UsageError(f"{path}: not valid TOML: {e}") from None
    unknown = sorted(set(doc) - {"workload"})
    if unknown or "workload" not in doc:
        raise UsageError(f"{path}: expected a [workload] table or [[workload]] tables, got "
                         f"{', '.join(repr(k) for k in doc) or 'an empty file'}")
    tables = doc["workload"] if isinstance(doc["workload"], list) else [doc["workload"]]
    out = []
    for i, t in enumerate(tables):
        where = f"{path}: workload {t.get('name') or i + 1}" if len(tables) > 1 else str(path)
        if not isinstance(t, dict):
            raise UsageError(f"{where}: expected a table of keys, got {t!r}")
        out.append(from_mapping(t, where))
    return out


def with_fit(w: Workload, device_memory_bytes: int | None) -> Workload:
    """``fits`` decided from the device's memory where the workload leaves it open."""
    if w.fits is not None or not device_memory_bytes:
        return w
    return replace(w, fits=w.bytes <= device_memory_bytes)

"""The errors umprof reports to a person, and what the CLI does with each."""


class UmprofError(Exception):
    """A problem umprof explains in one line, without a traceback."""

    exit_code = 1


class UsageError(UmprofError, ValueError):
    """Bad input: a scenario file, an axis, an option. Reported before the GPU is touched."""

    exit_code = 2


class GpuUnavailable(UmprofError):
    """No pycuda, no driver or no device: says which and what to install."""

    exit_code = 3


class CaseSkipped(UmprofError):
    """A case that cannot run here, with the reason (e.g. no HMM, not enough free memory)."""


class CaseFailed(UmprofError):
    """A case that ran and went wrong (wrong kernel output, a CUDA error)."""


class ToolUnavailable(UmprofError):
    """An outside tool umprof drives (nsys, ncu, CUPTI) is missing or failed: says which and where to get it."""

    exit_code = 3

"""Finding NVIDIA's command-line tools (nsys, ncu): an explicit path, an environment
variable, PATH, then the folders their installers use."""

from __future__ import annotations

import os
import shutil
from glob import glob

from umprof.core.errors import ToolUnavailable, UsageError


def find_tool(name: str, explicit: str | None, env: str, install_globs: tuple[str, ...], missing: str,
              option: str | None = None) -> str:
    """The executable ``name``: ``explicit`` (an option's value), then $env, then PATH, then the
    newest match of ``install_globs``. A wrong explicit path is a usage error; none found raises
    ToolUnavailable with ``missing`` as the message. ``option`` names the explicit path's option."""
    for source, candidate in ((option or f"--{name}", explicit), (env, os.environ.get(env))):
        if candidate:
            path = shutil.which(candidate) or (candidate if os.access(candidate, os.X_OK) and os.path.isfile(candidate) else None)
            if path is None:
                raise UsageError(f"{source}: {candidate!r} is not an executable {name}")
            return path
    found = shutil.which(name)
    if found:
        return found
    for pattern in install_globs:
        hits = sorted(glob(pattern), reverse=True)
        if hits:
            return hits[0]
    raise ToolUnavailable(missing)

"""The judged runs' JSON as the repository keeps it: a document's top-level lists of rows (dicts) one compact row a
line, every other key on a line of its own; about a quarter fewer bytes than indented JSON, and a diff still a row a
line. Files kept unchanged since they were written are xz-compressed (``.xz``); ``read_kept`` reads either."""

from __future__ import annotations

import json
import lzma
from pathlib import Path


def read_kept(path: Path):
    """A kept JSON file as Python: plain, or xz-compressed where its name ends in ``.xz``."""
    data = Path(path).read_bytes()
    return json.loads(lzma.decompress(data) if Path(path).suffix == ".xz" else data)


def rows_a_line(doc: dict, default=None) -> str:
    """``doc`` as JSON text, each top-level list of dicts a row a line (``default``: as ``json.dumps`` takes it)."""
    dump = lambda v: json.dumps(v, separators=(",", ":"), default=default)  # noqa: E731
    lines = []
    for k, v in doc.items():
        if isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            rows = ",\n  ".join(dump(x) for x in v)
            lines.append(f" {json.dumps(k)}: [\n  {rows}\n ]")
        else:
            lines.append(f" {json.dumps(k)}: {dump(v)}")
    return "{\n" + ",\n".join(lines) + "\n}\n"

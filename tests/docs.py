"""Reading the shell lines the docs show, for the tests that run them as written."""

from __future__ import annotations

import re
from pathlib import Path


def sh_block(path: Path, heading: str) -> str:
    """The first ``sh`` code block after ``heading`` in the Markdown file ``path``."""
    text = path.read_text(encoding="utf-8")
    section = text[text.index(heading) :]
    found = re.search(r"```sh\n(.*?)```", section, re.S)
    assert found, f"no sh block under {heading!r} in {path.name}"
    return found.group(1)

"""Every relative link of the repository's Markdown leads somewhere: the file it names exists,
and a ``#fragment`` into a Markdown file is one of that file's headings (as GitHub makes
their anchors). A newcomer following the docs must never meet a dead end."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
_CODE = re.compile(r"```.*?```", re.S)
_LINK = re.compile(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$", re.M)


def markdown_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "*.md"], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return [ROOT / name for name in listed.stdout.split()]


def prose(path: Path) -> str:
    """The file without its fenced code blocks (whose brackets are code, not links)."""
    return _CODE.sub("", path.read_text(encoding="utf-8"))


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens.

    >>> slug("Verifying a match"), slug("Version 4 keys"), slug("`ofc verify` (Python)")
    ('verifying-a-match', 'version-4-keys', 'ofc-verify-python')
    """
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for found in _HEADING.finditer(prose(path)):
        name = slug(found.group(1))
        count = seen.get(name, 0)
        seen[name] = count + 1
        out.add(name if count == 0 else f"{name}-{count}")
    return out


def dead_links(path: Path) -> list[str]:
    dead = []
    for found in _LINK.finditer(prose(path)):
        target = found.group(1)
        if re.match(r"^[a-z][a-z+.-]*:", target):  # https:, mailto: ...
            continue
        file_part, _, fragment = target.partition("#")
        destination = (path.parent / file_part) if file_part else path
        if not destination.exists():
            dead.append(f"{target}: no such file")
        elif fragment and destination.suffix == ".md" and fragment not in anchors(destination):
            dead.append(f"{target}: no such heading in {destination.name}")
    return dead


def test_the_docs_are_found() -> None:
    names = {p.relative_to(ROOT).as_posix() for p in markdown_files()}
    assert {"README.md", "docs/shuffle-v1.md", "docs/hand-history.md"} <= names


@pytest.mark.parametrize("path", markdown_files(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_leads_somewhere(path: Path) -> None:
    assert dead_links(path) == []


def test_a_dead_link_is_found(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# A heading\n")
    page = tmp_path / "page.md"
    page.write_text(
        "[ok](other.md#a-heading) [gone](missing.md) [no heading](other.md#nowhere)\n"
        "[web](https://example.com) [self](#top)\n# Top\n```\n[code](not-a-link.md)\n```\n"
    )
    assert dead_links(page) == [
        "missing.md: no such file",
        "other.md#nowhere: no such heading in other.md",
    ]

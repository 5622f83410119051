"""Where the tests find the documentation's text: the README, a page of docs/, one section.

Tests that hold a snippet or a generated block of the docs to the code look it up here, so
moving a section between the README and docs/ changes one lookup, not every test.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def readme() -> str:
    return (ROOT / "README.md").read_text(encoding="utf-8")


def doc(name: str) -> str:
    """docs/<name>.md ("smart" or "smart.md")."""
    file_name = name if name.endswith(".md") else f"{name}.md"
    return (DOCS / file_name).read_text(encoding="utf-8")


def section(path: Path | str, heading: str) -> str:
    """The text under `heading` (its words, without the #s) up to the next heading of the same
    or a higher level; `path` is relative to the repository root. Lines inside fenced code
    (a `## comment` in a TOML sample) are never headings."""
    lines = (ROOT / path).read_text(encoding="utf-8").splitlines(keepends=True)
    found: list[str] = []
    level = 0
    fenced = False
    for line in lines:
        if line.lstrip().startswith("```"):
            fenced = not fenced
        heading_match = None if fenced else re.match(r"(#+) (.*?)[ \t]*$", line)
        if heading_match and level and len(heading_match.group(1)) <= level:
            break
        if level:
            found.append(line)
        elif heading_match and heading_match.group(2) == heading:
            level = len(heading_match.group(1))
    assert level, f"{path} has no heading {heading!r}"
    return "".join(found)


def block(text: str, name: str) -> str:
    """The body of a generated block `<!-- name:start -->` ... `<!-- name:end -->`."""
    match = re.search(f"<!-- {name}:start -->\n(.*?)<!-- {name}:end -->", text, re.S)
    assert match, f"no {name} block"
    return match.group(1)

"""Checks of the Markdown files: dead links and anchors, repository paths that do not exist,
quoted log lines no code prints. Each returns its problems as "file: what: why" strings.

Text inside fenced code is no link and no heading; repository paths are looked for in inline
code, fenced code and link targets alike.
"""

from __future__ import annotations

import glob
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PLUGIN = ROOT / "plugin"

FENCE = re.compile(r"^[ \t]*```.*?^[ \t]*```[ \t]*$", re.M | re.S)  # also indented in a list
INLINE_CODE = re.compile(r"`([^`]+)`")  # a span may wrap onto the next line
LINK = re.compile(r"\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
REFERENCE = re.compile(r"^\[[^\]]+\]:\s*(\S+)", re.M)
HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$", re.M)
# A repository path: one of these top-level folders, then anything up to a blank or quote.
REPO_PATH = re.compile(
    r"(?<![\w./$~-])(?:\./)?((?:plugin|tests|telegraf|dashboards|docs|\.ci)/[^\s`'\",;:()\]|]*)"
)
# Written like a repository path, but none: an InfluxDB 1.8 bucket ("database/retention_policy").
NOT_PATHS = {"telegraf/autogen"}
LOG_QUOTE = re.compile(r"^([EWID])! (.*)$")
# Where the fixed text of a quoted log line ends: a placeholder, an ellipsis, a quote, a number.
VARIABLE = re.compile(r"<|\.\.\.|…|'|\"|\{|\(|#|\bN\b")


def doc_files() -> list[Path]:
    """Every Markdown file the checks cover."""
    paths = [ROOT / "README.md", ROOT / "dashboards" / "README.md"]
    paths += sorted((ROOT / "docs").glob("*.md"))
    paths += sorted((ROOT / "telegraf").rglob("*.md"))
    paths.append(ROOT / "tests" / "golden" / "README.md")
    return [path for path in paths if path.is_file()]


DOC_FILES = doc_files


def _text(path: Path, text: str | None) -> str:
    return path.read_text(encoding="utf-8") if text is None else text


def _prose(text: str) -> str:
    """The text without fenced code (kept as blank lines, so line numbers would stay)."""
    return FENCE.sub(lambda match: "\n" * match.group(0).count("\n"), text)


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, blanks to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip())  # a link: its text
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


def anchors(text: str) -> set[str]:
    found: set[str] = set()
    seen: dict[str, int] = {}
    for match in HEADING.finditer(_prose(text)):
        base = slug(match.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def markdown_links(path: Path, text: str | None = None) -> list[str]:
    """Every link target of the file, in order (inline and reference-style)."""
    prose = _prose(_text(path, text))
    return [m.group(1) for m in LINK.finditer(prose)] + REFERENCE.findall(prose)


def dead_links(path: Path, text: str | None = None) -> list[str]:
    """Relative links to files that do not exist, and anchors no heading has."""
    own = _text(path, text)
    problems = []
    for target in markdown_links(path, own):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        linked = (path.parent / file_part).resolve() if file_part else path
        if file_part and not linked.exists():
            problems.append(f"{_name(path)}: {target}: no such file")
        elif anchor and linked.suffix == ".md":
            linked_text = own if linked == path else linked.read_text(encoding="utf-8")
            if anchor not in anchors(linked_text):
                problems.append(f"{_name(path)}: {target}: no such anchor")
    return problems


def _inline_code(text: str) -> list[str]:
    """Inline code spans outside fenced code, a line break inside one read as a blank."""
    return [" ".join(span.split()) for span in INLINE_CODE.findall(_prose(text))]


def _code_spans(text: str) -> list[str]:
    return [match.group(0) for match in FENCE.finditer(text)] + _inline_code(text)


def missing_paths(path: Path, text: str | None = None) -> list[str]:
    """Repository paths in code spans and link targets that name nothing in the repository;
    `<name>` and `*` match anything, a trailing `...` is dropped."""
    own = _text(path, text)
    named = [m.group(1) for span in _code_spans(own) for m in REPO_PATH.finditer(span)]
    named += [t for t in markdown_links(path, own) if REPO_PATH.fullmatch(t.split("#")[0])]
    problems = []
    for name in dict.fromkeys(named):
        if name in NOT_PATHS:
            continue
        pattern = re.sub(r"<[^>]*>", "*", name.split("#")[0].removesuffix("...").rstrip("."))
        if not glob.glob(str(ROOT / pattern)):
            problems.append(f"{_name(path)}: {name}: no such path")
    return problems


def plugin_sources() -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted(PLUGIN.rglob("*.py")))


def printable(fixed: str, sources: str) -> bool:
    """The fixed text is in the sources, or is `component: rest` with both parts there (a
    component prefix is often added to a message kept elsewhere: "smart: " + HELP)."""
    if fixed in sources:
        return True
    component, colon, rest = fixed.partition(": ")
    return bool(colon) and f"{component}: " in sources and rest in sources


def unprintable_log_lines(path: Path, text: str | None = None) -> list[str]:
    """Quoted log lines (`E! ...`, `W! ...`, `I! ...`, `D! ...` in inline code) whose fixed
    text, up to the first variable part, no source under plugin/ holds."""
    sources = plugin_sources()
    problems = []
    for span in _inline_code(_text(path, text)):
        match = LOG_QUOTE.match(span)
        fixed = VARIABLE.split(match.group(2), maxsplit=1)[0].rstrip() if match else ""
        if fixed and not printable(fixed, sources):
            problems.append(f"{_name(path)}: {span}: no message of plugin/ starts so")
    return problems

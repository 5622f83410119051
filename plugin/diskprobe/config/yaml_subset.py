"""A strict YAML subset: enough for exporter-toolkit's web config files (--web.config.file),
and an error for anything that could mean something else. No YAML library is a dependency.

Read: block mappings and sequences indented by spaces (a sequence may sit at its key's own
indentation, "key:\\n- a", as the toolkit's samples do), flow sequences of scalars on one line
("[a, 'b']"), the empty mapping "{}", plain, 'single-' and "double-quoted" scalars, comments,
blank lines and one leading "---". Refused, with the line: tabs in indentation, anchors,
aliases, tags, block scalars (| and >), flow mappings, scalars over several lines, duplicate
keys, several documents. Scalars stay text: the caller decides what "true" or "10" means.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from diskprobe.config.yaml_values import (
    COMMENT,
    INDICATORS,
    KEY_END,
    Mapping,
    Node,
    Scalar,
    Sequence,
    YamlError,
    inline,
    is_item,
    quoted,
    shown,
    strip_comment,
)

__all__ = ["Entry", "Mapping", "Node", "Scalar", "Sequence", "YamlError", "parse", "shown"]
MAX_DEPTH = 16  # the web config nests 3 deep: more is a wrong file, never a deep recursion
# Raw control characters (a tab is whitespace, a CR ends a CRLF line): binary, not text.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ufeff]")


class _Line(NamedTuple):
    number: int
    indent: int
    body: str  # the line after its indentation, trailing whitespace removed


def parse(text: str) -> Node | None:
    """The document in `text` (None if it holds only comments); YamlError if outside the subset."""
    lines = _lines(text)
    if not lines:
        return None
    parser = _Parser(lines)
    root = parser.block(lines[0].indent, 0)
    if parser.at < len(lines):
        left = lines[parser.at]
        raise YamlError(left.number, f"unexpected indentation ({left.indent} spaces)")
    return root


def _lines(text: str) -> list[_Line]:
    found: list[_Line] = []
    marker = False  # a "---" was seen
    for number, raw in enumerate(text.split("\n"), 1):
        line = raw[:-1] if raw.endswith("\r") else raw  # CRLF files
        line = line[1:] if number == 1 and line.startswith("\ufeff") else line  # a BOM
        bad = _CONTROL.search(line)
        if bad is not None:
            raise YamlError(number, f"control character {bad.group()!r}: not a text file")
        body = line.lstrip(" ")
        indent = len(line) - len(body)
        body = body.rstrip(" \t")
        if not body or body.lstrip("\t").startswith("#"):
            continue
        if body.startswith("\t"):
            raise YamlError(number, "a tab in the indentation: indent with spaces")
        if indent == 0 and body.startswith("%"):  # "%YAML 1.2", before any "---"
            raise YamlError(number, INDICATORS["%"])
        if indent == 0 and re.match(r"(---|\.\.\.)(\s|$)", body):
            if found or marker or strip_comment(body) != "---":
                raise YamlError(number, "only one document, with at most a leading '---'")
            marker = True
            continue
        found.append(_Line(number, indent, body))
    return found


class _Parser:
    def __init__(self, lines: list[_Line]) -> None:
        self.lines = lines
        self.at = 0  # the next line to read

    def peek(self) -> _Line | None:
        return self.lines[self.at] if self.at < len(self.lines) else None

    def block(self, indent: int, depth: int) -> Node:
        first = self.lines[self.at]
        if depth > MAX_DEPTH:
            raise YamlError(first.number, f"nested more than {MAX_DEPTH} levels deep")
        if is_item(first.body):
            return self.sequence(indent, depth)
        return self.mapping(indent, depth)

    def mapping(self, indent: int, depth: int) -> Mapping:
        items: dict[str, tuple[int, Node]] = {}
        first = self.lines[self.at]
        line = self.peek()
        while line is not None and line.indent == indent:
            if is_item(line.body):
                raise YamlError(line.number, "a sequence item ('- ') where a key was expected")
            key, rest = _split_key(line)
            if key in items:
                raise YamlError(line.number, f"duplicate key {shown(key)} (first on line "
                                f"{items[key][0]})")  # fmt: skip
            self.at += 1
            items[key] = (line.number, self.value(line, rest, indent, depth))
            line = self.peek()
        return Mapping(items, first.number)

    def sequence(self, indent: int, depth: int) -> Sequence:
        items: list[Node] = []
        first = self.lines[self.at]
        line = self.peek()
        while line is not None and line.indent == indent and is_item(line.body):
            self.at += 1
            rest = _no_comment(line.body[1:].lstrip(" \t"))
            plain = rest[:1] not in ("", '"', "'", "[", "{")
            if is_item(rest) or (plain and KEY_END.search(strip_comment(rest))):
                raise YamlError(line.number, "a sequence or mapping on an item's line ('- - a', "
                                "'- key: a') is not supported")  # fmt: skip
            items.append(self.value(line, rest, indent, depth))
            line = self.peek()
        return Sequence(items, first.number)

    def value(self, line: _Line, rest: str, indent: int, depth: int) -> Node:
        """What follows a key's colon or an item's dash: on the line, or the block under it."""
        below = self.peek()
        if rest == "":
            if below is not None and below.indent > indent:
                return self.block(below.indent, depth + 1)
            if below is not None and below.indent == indent and is_item(below.body):
                return self.sequence(indent, depth + 1)  # "key:\n- a": the toolkit's own style
            return Scalar(None, line.number, True)
        node = inline(rest, line.number)
        if below is not None and below.indent > indent:
            raise YamlError(below.number, "a value continued on the next line: multi-line "
                            "values are not supported (or the indentation is wrong)")  # fmt: skip
        return node


def _split_key(line: _Line) -> tuple[str, str]:
    """ "key: value # note" -> ("key", "value # note"); quoted keys too: '"a b": 1'."""
    body = line.body
    if body[0] in "\"'":
        key, end = quoted(body, line.number)
        after = body[end:].lstrip(" \t")
        if not after.startswith(":") or not KEY_END.match(after):
            raise YamlError(line.number, "expected ':' after the quoted key")
        return key, _no_comment(after[1:].strip(" \t"))
    if body[0] in INDICATORS and (body[0] != "?" or body[1:2] in ("", " ", "\t")):
        raise YamlError(line.number, INDICATORS[body[0]])  # "&a key: v", "? key", "|"
    found = KEY_END.search(body)
    comment = COMMENT.search(body)
    if found is None or (comment is not None and comment.start() < found.start()):
        raise YamlError(line.number, "expected 'key: value' (values over several lines are "
                        "not supported)")  # fmt: skip
    key = body[: found.start()].rstrip(" \t")  # "tls_server_config :" is the toolkit's style
    if not key or key[0] in "[{":
        raise YamlError(line.number, "expected a key before the ':' (flow keys are not supported)")
    return key, _no_comment(body[found.end() :].strip(" \t"))


def _no_comment(rest: str) -> str:
    """What follows "key:" or "- " (its blanks stripped), "" if only a comment follows."""
    return "" if rest.startswith("#") else rest


# -- typed reads of a parsed document: YamlError with the line when a value has the wrong shape

Entry = tuple[int, Node]  # a mapping's value with its key's line
_TRUE, _FALSE = ("true", "True", "TRUE"), ("false", "False", "FALSE")


def keys(entry: Entry, allowed: tuple[str, ...] | None, name: str) -> dict[str, Entry]:
    """A mapping's keys (null: none), each one of `allowed` (None: any) as yaml.UnmarshalStrict."""
    node = entry[1]
    if isinstance(node, Scalar) and node.value is None:
        return {}
    if not isinstance(node, Mapping):
        raise YamlError(node.line, f"{name}: expected a mapping of keys")
    for key, (line, _value) in node.items.items():
        if allowed is not None and key not in allowed:
            known = ", ".join(allowed)
            raise YamlError(line, f"unknown key {shown(key)} in {name} (known: {known})")
    return node.items


def text(entry: Entry, name: str) -> str:
    """A string value; null is "" (unset), as Go's zero value."""
    node = entry[1]
    if not isinstance(node, Scalar):
        raise YamlError(node.line, f"{name}: expected one value, not a list or a mapping")
    return node.value or ""


def boolean(entry: Entry, name: str) -> bool:
    """true or false, unquoted (YAML 1.1's yes/no/on/off are not booleans here)."""
    node = entry[1]
    if isinstance(node, Scalar) and node.plain and node.value in _TRUE + _FALSE:
        return node.value in _TRUE
    raise YamlError(node.line, f"{name}: expected true or false")


def texts(entry: Entry | None, name: str) -> list[str]:
    """A list of strings ("- a" lines or "[a, b]"); absent or null is empty."""
    if entry is None or (isinstance(entry[1], Scalar) and entry[1].value is None):
        return []
    if not isinstance(entry[1], Sequence):
        raise YamlError(entry[1].line, f"{name}: expected a list")
    return [text((item.line, item), name) for item in entry[1].items]

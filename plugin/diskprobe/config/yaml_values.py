"""The YAML subset of config/yaml_subset.py: its nodes, and the values written on one line
(plain, 'single-' and "double-quoted" scalars, flow sequences "[a, b]", "{}").

Anything that could mean something else in YAML is a YamlError with the line: anchors, tags,
block scalars (| and >), flow mappings, a quoted value left open at the end of its line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional, Union

NULLS = ("", "~", "null", "Null", "NULL")  # "key:" and "key: ~" are YAML's null
KEY_END = re.compile(r":(?=[ \t]|$)")  # "key: value", "key:"; "http://x" is no key
_FLOW_PLAIN = re.compile(r"[^,\[\]{}#]*")  # "[a b, c]": an item ends at the next indicator
COMMENT = re.compile(r"[ \t]#")  # "a # note" is a comment; "a#b" is text
_ESCAPES = {
    "0": "\0", "a": "\a", "b": "\b", "t": "\t", "\t": "\t", "n": "\n", "v": "\v", "f": "\f",
    "r": "\r", "e": "\x1b", " ": " ", '"': '"', "/": "/", "\\": "\\", "N": "\x85",
    "_": "\xa0", "L": "\u2028", "P": "\u2029",
}  # fmt: skip
_HEX_ESCAPES = {"x": 2, "u": 4, "U": 8}  # "\x41", "\u00e9", "\U0001F600"
INDICATORS = {
    "&": "anchors (&name) are not supported",
    "*": "aliases (*name) are not supported",
    "!": "tags (!tag) are not supported",
    "|": "block scalars (| and >) are not supported: use a file (cert_file, key_file, "
    'client_ca_file) or one "double-quoted" line with \\n escapes',
    "%": "directives (%YAML) are not supported",
    "@": "a plain value cannot start with @: put it in quotes",
    "`": "a plain value cannot start with `: put it in quotes",
    "?": "complex keys (? key) are not supported",
    ",": "a plain value cannot start with ',': put it in quotes",
    "]": "a plain value cannot start with ']': put it in quotes",
    "}": "a plain value cannot start with '}': put it in quotes",
}
INDICATORS[">"] = INDICATORS["|"]


@dataclass(frozen=True)
class Scalar:
    value: Optional[str]  # None: null ("key:", "key: ~")
    line: int
    plain: bool  # unquoted: "true" may be a boolean, "'true'" never is


@dataclass(frozen=True)
class Mapping:
    items: dict[str, tuple[int, Node]]  # key -> (the key's line, its value)
    line: int


@dataclass(frozen=True)
class Sequence:
    items: list[Node]
    line: int


Node = Union[Scalar, Mapping, Sequence]


class YamlError(ValueError):
    """What is wrong, and on which line (1-based); the caller adds the file's name."""

    def __init__(self, line: int, what: str) -> None:
        super().__init__(f"{line}: {what}")
        self.line = line
        self.what = what


def shown(text: str) -> str:
    """`text` quoted for a message, cut to 60 characters: a 1 MB key makes no error line."""
    return repr(text if len(text) <= 60 else text[:57] + "...")


def is_item(body: str) -> bool:
    return body == "-" or body.startswith(("- ", "-\t"))


def strip_comment(text: str) -> str:
    found = COMMENT.search(text)
    return (text[: found.start()] if found else text).rstrip(" \t")


def inline(text: str, number: int) -> Node:
    """A value written on its key's line: a scalar, a flow sequence or "{}"."""
    if text.startswith(("'", '"')):
        value, end = quoted(text, number)
        _nothing_after(text[end:], number)
        return Scalar(value, number, False)
    if text.startswith("["):
        return _flow_sequence(text, number)
    if text.startswith("{"):
        if not re.fullmatch(r"\{[ \t]*\}", strip_comment(text)):
            raise YamlError(number, "flow mappings ({a: b}) are not supported: use an "
                            "indented block")  # fmt: skip
        return Mapping({}, number)
    if text[0] in INDICATORS and (text[0] != "?" or text[1:2] in ("", " ", "\t")):
        raise YamlError(number, INDICATORS[text[0]])  # "?x" is text, "? x" a complex key
    plain = strip_comment(text)
    if is_item(plain) or KEY_END.search(plain) or plain.startswith(":"):
        # "key: a: b" or "key: - a": YAML errors; a value with ": " in it needs quotes
        raise YamlError(number, f"{shown(plain)} is not a plain value: put it in quotes")
    return Scalar(None if plain in NULLS else plain, number, True)


def _nothing_after(tail: str, number: int) -> None:
    if strip_comment(" " + tail):
        raise YamlError(number, f"unexpected text after the closing quote: {shown(tail.strip())}")


def _flow_sequence(text: str, number: int) -> Sequence:
    """ "[a, 'b c', "d"]" on one line; "[]"; a trailing comma is allowed, nesting is not."""
    items: list[Node] = []
    at = _blanks(text, 1)  # an index, never a slice: a 1 MiB line stays one pass
    while not text.startswith("]", at):
        if at == len(text) or text[at] in "[{#,":
            raise YamlError(number, "a flow sequence holds scalars, separated by commas, and "
                            "closes on the same line")  # fmt: skip
        if text[at] in "\"'":
            value, at = quoted(text, number, at)
            items.append(Scalar(value, number, False))
        else:
            plain = _FLOW_PLAIN.match(text, at)
            item = plain.group().rstrip(" \t") if plain else ""
            if KEY_END.search(item) or item[:1] in INDICATORS:
                raise YamlError(number, f"{shown(item)} in a flow sequence: put it in quotes")
            items.append(Scalar(None if item in NULLS else item, number, True))
            at = plain.end() if plain else at
        at = _blanks(text, at)
        if text.startswith(",", at):
            at = _blanks(text, at + 1)
        elif not text.startswith("]", at):
            what = "a ',' or ']'" if at < len(text) else "the ']' that closes it on the same line"
            raise YamlError(number, f"expected {what} in the flow sequence")
    _nothing_after(text[at + 1 :], number)
    return Sequence(items, number)


def _blanks(text: str, at: int) -> int:
    """The index of the first character from `at` on that is not a space or a tab."""
    while at < len(text) and text[at] in " \t":
        at += 1
    return at


def quoted(text: str, number: int, start: int = 0) -> tuple[str, int]:
    """The scalar quoted at text[start], and the index after its closing quote."""
    quote, out, at = text[start], [], start + 1
    while at < len(text):
        char = text[at]
        if char == quote and quote == "'" and text[at + 1 : at + 2] == "'":
            out.append("'")  # 'it''s': a doubled quote is one quote
            at += 2
        elif char == quote:
            return "".join(out), at + 1
        elif char == "\\" and quote == '"':
            decoded, at = _escape(text, at, number)
            out.append(decoded)
        else:
            out.append(char)
            at += 1
    raise YamlError(number, f"no closing {quote} on this line (a quoted value continued on "
                    "the next line is not supported)")  # fmt: skip


def _escape(text: str, at: int, number: int) -> tuple[str, int]:
    """The escape at text[at] ("\\n", "\\x41", "\\u00e9") decoded, and the index after it."""
    code = text[at + 1 : at + 2]
    if code in _ESCAPES:
        return _ESCAPES[code], at + 2
    width = _HEX_ESCAPES.get(code)
    digits = text[at + 2 : at + 2 + width] if width else ""
    if width is None or not re.fullmatch(r"[0-9A-Fa-f]+", digits) or len(digits) != width:
        raise YamlError(number, f"unknown escape {text[at : at + 2 + (width or 0)]!r} in a "
                        "double-quoted value")  # fmt: skip
    value = int(digits, 16)
    if value > 0x10FFFF or 0xD800 <= value <= 0xDFFF:
        raise YamlError(number, f"escape \\{code}{digits} is not a Unicode character")
    return chr(value), at + 2 + width

"""The web config's YAML (exporter-toolkit's --web.config.file), read by PyYAML strictly.

PyYAML comes with diskprobe's `web` extra (`pip install 'diskprobe[web]'`); without it, a web
config is one config error naming the extra. The document is composed with BaseLoader's
rules (no implicit types: every scalar stays text, `no` is "no"; the caller decides what
`true` or `10` means), then turned into Scalar / Mapping / Sequence nodes that keep each
value's line. Refused with the line, as something that could mean something else or hide a
value: anchors, aliases, tags, merge keys (`<<`), keys that are not plain text, duplicate keys
and more than one document. Block scalars (`cert: |`) and flow mappings are YAML and are read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Union

MAX_DEPTH = 16  # the web config nests 3 deep: more is a wrong file, never a deep recursion
NULLS = ("", "~", "null", "Null", "NULL")  # "key:" and "key: ~" are YAML's null
EXTRA = "needs diskprobe's web extra: pip install 'diskprobe[web]' (PyYAML)"


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


class MissingExtra(ImportError):
    """PyYAML is not installed: the web extra is needed (EXTRA says so)."""


def shown(text: str) -> str:
    """`text` quoted for a message, cut to 60 characters: a 1 MB key makes no error line."""
    return repr(text if len(text) <= 60 else text[:57] + "...")


def parse(text: str) -> Node | None:
    """The document in `text` (None if it holds only comments); YamlError if it is not YAML
    or uses what is refused (see the module docstring); MissingExtra without PyYAML."""
    try:
        import yaml
    except ImportError:
        raise MissingExtra(EXTRA) from None
    loader = None
    try:
        loader = _strict_loader(yaml)(text)  # its reader refuses control characters here
        root = loader.get_single_node()
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        line = mark.line + 1 if mark is not None else 1
        what = "; ".join(part for part in (error.context, error.problem) if part)
        raise YamlError(line, what or "not YAML") from None
    except yaml.reader.ReaderError as error:  # no mark: a position in the text
        line = text[: error.position].count("\n") + 1
        what = f"control character {chr(error.character)!r}: not a text file"
        raise YamlError(line, what) from None
    finally:
        if loader is not None:
            loader.dispose()
    return None if root is None else _node(root, 0)


def _strict_loader(yaml: Any) -> Any:
    """BaseLoader, refusing anchors, aliases and tags as the events arrive."""

    class StrictLoader(yaml.BaseLoader):  # type: ignore[misc]
        depth = 0  # the composer recurses per level: cut it off long before Python's limit

        def compose_node(self, parent: Any, index: Any) -> Any:
            event = self.peek_event()
            line = event.start_mark.line + 1
            if isinstance(event, yaml.AliasEvent):
                raise YamlError(line, "aliases (*name) are not supported")
            if getattr(event, "anchor", None) is not None:
                raise YamlError(line, "anchors (&name) are not supported")
            if getattr(event, "tag", None) is not None:
                raise YamlError(line, "tags (!tag) are not supported")
            if self.depth > MAX_DEPTH + 1:  # the mapping on that line: nested 17 deep
                raise YamlError(line, f"nested more than {MAX_DEPTH} levels deep")
            self.depth += 1
            try:
                return super().compose_node(parent, index)
            finally:
                self.depth -= 1

    return StrictLoader


def _node(node: Any, depth: int) -> Node:
    line = node.start_mark.line + 1
    if node.id == "scalar":
        plain = node.style is None
        return Scalar(None if plain and node.value in NULLS else node.value, line, plain)
    if depth > MAX_DEPTH:  # a mapping or list nested deeper
        raise YamlError(line, f"nested more than {MAX_DEPTH} levels deep")
    if node.id == "sequence":
        return Sequence([_node(item, depth + 1) for item in node.value], line)
    items: dict[str, tuple[int, Node]] = {}
    for key_node, value_node in node.value:
        key_line = key_node.start_mark.line + 1
        if key_node.id != "scalar":
            raise YamlError(key_line, "a key must be plain text, not a list or a mapping")
        key = key_node.value
        if key == "<<" and key_node.style is None:
            raise YamlError(key_line, "merge keys (<<) are not supported")
        if key in items:
            raise YamlError(key_line, f"duplicate key {shown(key)} (first on line "
                            f"{items[key][0]})")  # fmt: skip
        items[key] = (key_line, _node(value_node, depth + 1))
    return Mapping(items, line)


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

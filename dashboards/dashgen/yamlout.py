"""A small block-style YAML writer for the alert provisioning file (no PyYAML needed)."""

from __future__ import annotations

import json
import re
from typing import Any

_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_PLAIN_VALUE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")
_RESERVED = {"true", "false", "yes", "no", "on", "off", "y", "n", "null"}


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if value is None:
        return "null"
    text = str(value)
    if _PLAIN_VALUE.match(text) and text.lower() not in _RESERVED:
        return text
    if "\n" in text or "'" in text:
        return json.dumps(text, ensure_ascii=False)  # a valid YAML double-quoted scalar
    return "'" + text + "'"


def _key(key: str) -> str:
    if not _PLAIN_KEY.match(key):
        raise ValueError(f"YAML key needs quoting: {key!r}")
    return key


def _lines(value: Any, indent: int) -> list[str]:
    pad = " " * indent
    lines: list[str] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, (dict, list)) and item:
                lines.append(f"{pad}{_key(key)}:")
                lines += _lines(item, indent + 2)
            else:
                lines.append(f"{pad}{_key(key)}: {_empty(item)}")
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, (dict, list)) and item:
                nested = _lines(item, indent + 2)
                lines.append(f"{pad}- {nested[0].lstrip()}")
                lines += nested[1:]
            else:
                lines.append(f"{pad}- {_empty(item)}")
    else:
        raise TypeError(value)
    return lines


def _empty(item: Any) -> str:
    if isinstance(item, dict):
        return "{}"
    if isinstance(item, list):
        return "[]"
    return _scalar(item)


def dump(document: dict[str, Any], header: str = "") -> str:
    comment = "".join(f"# {line}".rstrip() + "\n" for line in header.splitlines())
    return comment + "\n".join(_lines(document, 0)) + "\n"

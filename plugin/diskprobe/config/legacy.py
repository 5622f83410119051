"""Deprecated spellings still accepted: the top-level `format` and `textfile` keys.

They predate [output] holding everything about where batches go. Fleets have configs in the
field, so they keep working: they are moved into the [output] table before it is built, and
the load returns one deprecation line saying what to write instead. Given together with the
new spelling and disagreeing, they are a ConfigError: which one was meant cannot be told.
"""

from __future__ import annotations

import json
from typing import Any, Optional

from diskprobe.config.checks import ConfigError, convert
from diskprobe.config.output import OutputConfig
from diskprobe.config.sections import field_default, find_field

LEGACY_KEYS = ("format", "textfile")
# The [output] keys each legacy key sets, in the order the deprecation line names them.
NEW_KEYS = {"kind": "textfile", "path": "textfile", "format": "format"}
SHOWN_MAX = 200  # characters of a value quoted back in a message


def move_legacy_keys(table: dict[str, Any], source: str) -> tuple[dict[str, Any], Optional[str]]:
    """`table` with the top-level format / textfile moved into [output]; the deprecation line
    (None when the file has neither)."""
    given = [key for key in LEGACY_KEYS if key in table]
    if not given:
        return table, None
    where = f"{source}: " if source else ""
    output = table.get("output", {})
    if not isinstance(output, dict):
        raise ConfigError(f"{where}'output' must be a table ([output])")
    legacy = {key: _checked(where, key, table[key]) for key in given}
    moved = _new_values(legacy)
    for key, value in moved.items():
        if key in output and output[key] != value:
            old = NEW_KEYS[key]
            raise ConfigError(
                f"{where}top-level '{old}' = {_shown(legacy[old])} disagrees with [output] "
                f"{key} = {_shown(output[key])}; keep only the [output] keys"
            )
    rest = {key: value for key, value in table.items() if key not in LEGACY_KEYS}
    rest["output"] = {**output, **moved}
    return rest, _deprecation(where, given, moved)


def _checked(where: str, key: str, value: Any) -> str:
    # Held to the same spec as the [output] key it becomes, under the name the file used.
    item = find_field(OutputConfig, "path" if key == "textfile" else key)
    checked: str = convert(f"{where}'{key}'", value, field_default(item), item.metadata)
    return checked


def _new_values(legacy: dict[str, str]) -> dict[str, str]:
    moved: dict[str, str] = {}
    if legacy.get("textfile"):  # an empty textfile meant stdout, the default: nothing to move
        moved.update(kind="textfile", path=legacy["textfile"])
    if "format" in legacy:
        moved["format"] = legacy["format"]
    return moved


def _deprecation(where: str, given: list[str], moved: dict[str, str]) -> str:
    keys = " and ".join(f"'{key}'" for key in given)
    verb = "is" if len(given) == 1 else "are"
    if moved:
        writes = [f"{key} = {_shown(moved[key])}" for key in NEW_KEYS if key in moved]
        todo = f"write [output] {_listed(writes)} instead"
    else:
        todo = "remove it (an empty 'textfile' means stdout, the default)"
    return f"{where}top-level {keys} {verb} deprecated; {todo}"


def _listed(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _shown(value: Any) -> str:
    if isinstance(value, str):
        return json.dumps(value[:SHOWN_MAX] + ("..." if len(value) > SHOWN_MAX else ""))
    return repr(value)[:SHOWN_MAX]

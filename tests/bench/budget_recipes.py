"""The Telegraf tag recipes of telegraf/diskprobe-fleet-tags.conf, for budget_count.py: read from
the shipped conf file (each `## Recipe: NAME` block's commented TOML) and applied to a point
with Telegraf's semantics: a processor's `namepass` (globs on the measurement name) selects the
metrics it modifies, the others pass unchanged; `tagexclude` / `taginclude` are globs on tag
keys; `fieldexclude` globs on field keys; an input's `tagdrop` drops a whole metric whose tag
value matches a glob. And what a recipe takes out of a line, in bytes.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    import tomli as tomllib  # type: ignore[no-redef]

from lineproto import Point


@dataclass
class Recipe:
    """Telegraf filters, applied in order: (namepass globs, tagexclude, taginclude,
    fieldexclude) per processor; tagdrop {tag: globs} on the input."""

    name: str
    steps: list[dict[str, Any]] = field(default_factory=list)
    tagdrop: dict[str, list[str]] = field(default_factory=dict)

    def apply(self, point: Point) -> Point | None:
        """The point as the recipe leaves it: None if dropped, `point` itself if untouched."""
        for key, globs in self.tagdrop.items():
            if key in point.tags and any(fnmatch.fnmatchcase(point.tags[key], g) for g in globs):
                return None
        steps = [step for step in self.steps
                 if _any(point.measurement, step.get("namepass", ["*"]))]  # fmt: skip
        if not steps:
            return point
        tags, fields = dict(point.tags), dict(point.fields)
        for step in steps:
            exclude, include = step.get("tagexclude", []), step.get("taginclude")
            tags = {k: v for k, v in tags.items() if not _any(k, exclude)
                    and (include is None or _any(k, include))}  # fmt: skip
            fields = {k: v for k, v in fields.items() if not _any(k, step.get("fieldexclude", []))}
        return Point(point.measurement, tags, fields, point.time_ns) if fields else None


def _any(name: str, globs: list[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, glob) for glob in globs)


def read_recipes(conf: Path) -> list[Recipe]:
    """Each `## Recipe: NAME` block of the conf file: its `# `-commented TOML, uncommented."""
    recipes = [Recipe("as emitted")]
    for block in re.split(r"(?m)^## Recipe: ", conf.read_text())[1:]:
        name, _, body = block.partition("\n")
        toml = "\n".join(line[2:] for line in body.splitlines()
                         if line.startswith("# ") and not line.startswith("# #"))  # fmt: skip
        table = tomllib.loads(toml)
        recipe = Recipe(name.strip())
        for processor in table.get("processors", {}).get("noop", []):
            recipe.steps.append(processor)
        for execd in table.get("inputs", {}).get("execd", []):
            recipe.tagdrop.update(execd.get("tagdrop", {}))
        recipes.append(recipe)
    return recipes


def _escape(text: str, special: str) -> str:
    return "".join("\\" + c if c in special else c for c in text)


def _value(value: object) -> str:
    """A field value as diskprobe's serializer writes it (floats by repr, ints with i)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"{value}i"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return repr(value)


def removed_bytes(before: Point, after: Point) -> int:
    """The bytes a recipe took out of one line: its dropped tags and fields."""
    tags = sum(len(f",{_escape(k, ',= ')}={_escape(v, ',= ')}")
               for k, v in before.tags.items() if k not in after.tags)  # fmt: skip
    fields = sum(len(f",{_escape(k, ',= ')}={_value(v)}")
                 for k, v in before.fields.items() if k not in after.fields)  # fmt: skip
    return tags + fields

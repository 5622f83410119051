"""`diskprobe --sample-config`: the config spec rendered in Telegraf's sample.conf style."""

from __future__ import annotations

import json
import textwrap
from dataclasses import fields
from typing import Any

from diskprobe.config import SECTIONS, AgentConfig, field_default
from diskprobe.config.checks import describe_bounds
from diskprobe.durations import format_duration

HEADER = """\
## diskprobe configuration (TOML).
## Every key is shown commented out with its default value: uncomment to change it.
## Durations are strings such as "500ms", "10s", "30m" or "1h". A duration or
## number outside the range shown is refused at start (exit status 2).
"""

# Example value shown for optional settings whose default is "unset".
UNSET_EXAMPLES = {"interval": 60.0}


def _toml_value(value: Any, kind: str) -> str:
    if kind == "duration":
        return json.dumps(format_duration(float(value)))
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(json.dumps(item) for item in value) + "]"
    if isinstance(value, dict):
        items = ", ".join(f"{k} = {_toml_value(v, '')}" for k, v in value.items())
        return "{ " + items + " }" if items else "{}"
    return json.dumps(value)


def _render_keys(cls: type, indent: str) -> list[str]:
    lines: list[str] = []
    for item in fields(cls):
        if item.name in SECTIONS and cls is AgentConfig:
            continue
        kind = item.metadata.get("kind", "")
        doc = item.metadata["doc"]
        default = field_default(item)
        if kind == "duration" or (
            isinstance(default, (int, float)) and not isinstance(default, bool)
        ):
            doc += f" Range: {describe_bounds(item.metadata)}."
        if default is None:
            default = UNSET_EXAMPLES[item.name]
            doc += " Example:"
        wrapped = textwrap.wrap(doc, width=78 - len(indent))
        lines += [f"{indent}## {text}" for text in wrapped]
        lines.append(f"{indent}# {item.name} = {_toml_value(default, kind)}")
        lines.append("")
    return lines


def render_sample_config() -> str:
    lines = [*HEADER.splitlines(), ""]
    lines += _render_keys(AgentConfig, "")
    for section, cls in SECTIONS.items():
        lines += [f"## {cls.__doc__}", f"[{section}]"]
        lines += _render_keys(cls, "  ")
    return "\n".join(lines).rstrip() + "\n"

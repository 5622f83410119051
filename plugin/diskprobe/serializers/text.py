"""Strings from the system, written as valid UTF-8 and kept apart, the same way everywhere.

Every string diskprobe reads from the system (process names and command lines, user names,
cgroup paths, device names, mount points and filesystem types, udev and smartctl model,
serial and firmware strings) is decoded with `surrogateescape`: a byte that is not UTF-8
becomes a lone surrogate U+DC80-U+DCFF, so two names that differ only in such bytes stay two
names, and a path still reaches the same file. Outputs must be valid UTF-8, so before the
format's own escaping a tag value or string field is passed through `system_text()`:

- a byte that was not UTF-8 is written `%XX` (its value, upper-case hex): b"\\xffwriter" is
  `%FFwriter`;
- a literal `%` is written `%25`, so that `%FF` can only mean that byte: the mapping is
  one-to-one, and a process cannot pass itself off as another by its name;
- any other lone surrogate (a JSON `\\ud800` escape in smartctl's output) is written as the
  `%XX` of its bytes (surrogatepass);
- everything else, which is nearly every name, is unchanged.

collectd's identifiers already escape every byte outside [A-Za-z0-9_.] as `%XX`, `%` included;
their undecodable bytes follow the same rule (serializers/collectd.py).

Text a person reads on a terminal (`diagnose`'s and `doctor`'s reports) passes each such name
through `readable_text()`: `system_text()`, and every control character written `%XX` too
(ESC `%1B`, BEL `%07`, a newline `%0A`), so a path or a process name can neither send the
terminal a sequence nor start a line of its own; the report's own words are left as they are.
"""

from __future__ import annotations

from diskprobe.log import terminal_safe

UNDECODABLE_FIRST, UNDECODABLE_LAST = 0xDC80, 0xDCFF  # surrogateescape's range
SURROGATES_FIRST, SURROGATES_LAST = 0xD800, 0xDFFF


def escape_char(char: str) -> str:
    """`%XX` for one character that UTF-8 cannot carry (a lone surrogate), else the char."""
    code = ord(char)
    if UNDECODABLE_FIRST <= code <= UNDECODABLE_LAST:
        return f"%{code - 0xDC00:02X}"
    if SURROGATES_FIRST <= code <= SURROGATES_LAST:
        return "".join(f"%{byte:02X}" for byte in char.encode("utf-8", "surrogatepass"))
    return char


def system_text(text: str) -> str:
    """`text` as valid UTF-8, one-to-one (see the module docstring)."""
    if "%" in text:
        text = text.replace("%", "%25")
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "".join(map(escape_char, text))
    return text


def readable_text(text: str) -> str:
    """A name from the system or a job, for a report a person reads: system_text(), then every
    control character as %XX (log.terminal_safe); one-to-one, as `%` is `%25`."""
    return terminal_safe(system_text(text))

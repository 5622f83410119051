"""serializers/text.py and every serializer: any string the system gives becomes valid UTF-8,
and two different strings never become the same text (issue #25, item 1)."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from diskprobe.metric import Metric
from diskprobe.serializers import make_serializer
from diskprobe.serializers.text import system_text

# Strings as the system hands them over: bytes decoded with surrogateescape (what os, psutil
# and diskprobe's sources do), and ordinary text, '%' and '\\' included.
system_strings = st.one_of(
    st.binary(max_size=24).map(lambda raw: raw.decode("utf-8", "surrogateescape")),
    st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=24),
    st.lists(st.sampled_from(["%", "%FF", "\\", "\udcff", "é", "a", "%25", " ", ",", "="]),
             max_size=8).map("".join),
)


def undo(text: str) -> str:
    """The inverse of system_text on surrogateescape strings: %XX back to its byte."""

    def byte(match: re.Match[str]) -> str:
        value = int(match.group(1), 16)
        return "%" if value == 0x25 else chr(0xDC00 + value)

    return re.sub(r"%([0-9A-F]{2})", byte, text)


@given(system_strings)
def test_valid_utf8_and_one_to_one(text: str) -> None:
    escaped = system_text(text)
    escaped.encode("utf-8")  # no lone surrogate left
    assert undo(escaped) == text


@given(st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=30))
def test_valid_text_without_percent_is_unchanged(text: str) -> None:
    if "%" not in text:
        assert system_text(text) is text or system_text(text) == text


def test_examples() -> None:
    assert system_text(b"\xffwriter".decode("utf-8", "surrogateescape")) == "%FFwriter"
    assert system_text("50%") == "50%25"
    assert system_text("%FF") == "%25FF"  # not the byte: it cannot pass for it
    assert system_text("caf\udce9") == "caf%E9"
    assert system_text("\ud800") == "%ED%A0%80"  # a JSON \\ud800, not from surrogateescape
    assert system_text("/system.slice/dev-disk-by\\x2duuid.swap") == (
        "/system.slice/dev-disk-by\\x2duuid.swap"  # systemd's own escapes stay as they are
    )


def _metric(tag: str, text: str) -> Metric:
    """A process_io point (its tags and string fields come from the system)."""
    fields = {"pid": 1, "read_bytes_per_sec": 1.0, "write_bytes_per_sec": 0.0,
              "processes": 1, "cmdline": text}  # fmt: skip
    return Metric("diskprobe_process_io", {"process": tag, "user": "root"}, fields, 1)


@settings(max_examples=300)
@given(st.sampled_from(["influx", "prometheus", "collectd"]), system_strings, system_strings)
def test_every_format_writes_valid_utf8_and_keeps_names_apart(
    name: str, first: str, second: str
) -> None:
    def text(tag: str) -> str:
        serializer = make_serializer(name, env={"COLLECTD_HOSTNAME": "h\udcff"}, interval=10.0)
        return serializer.serialize([_metric(tag, tag)])

    one, other = text(first), text(second)
    one.encode("utf-8")
    other.encode("utf-8")
    if first != second and first and second:  # an empty tag is left out, in every format
        assert one != other, (first, second, one)

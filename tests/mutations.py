"""Mutations of real text and JSON for the fuzzers (tests/test_fuzz_parsers.py, the state file's
in tests/faults/test_fault_state.py): real input with tokens replaced by hostile ones, lines
cut or duplicated, bytes inserted, JSON values swapped for NaN, huge numbers or other types.

Hypothesis draws one number per example, the seed of a random.Random that makes the choices:
drawn one by one from Hypothesis (25 draws an example), they made its bookkeeping 40-90 % of
the fuzzers' time. Shrinking then shrinks the seed; the failing input is printed whole.
"""

from __future__ import annotations

import json
import random

from hypothesis import strategies as st

HOSTILE_TOKENS = ["9" * 400, "18446744073709551616", "18446744073709551615", "-1", "1e400",
                  "nan", "inf", "-inf", "NaN", "Infinity", "0x10", "1_000", "+5", "\x00", "",
                  "\u0663", "\xb2", "99999999999999999999", "4294967295", "1.5", "x"]  # fmt: skip
# Characters a token may be made of: digits, signs, letters, the bytes diskstats splits on,
# other digits (Arabic-Indic, superscript), a NUL, a lone surrogate (an undecodable byte).
TOKEN_CHARS = "0123456789+-.eExX_ \t\n:=%\x00\u0663\xb2\udcff\u00e9"
EDGE_BYTES = (b"\x00", b"\xff", b"\x80", b"\n", b" ", b"=", b"\t", b"-", b"\xc3")
POWERS = (8, 16, 31, 32, 53, 63, 64, 70)  # integers at and around these powers of two


def hostile_token(rng: random.Random) -> str:
    """A word in place of a number: a known hostile one, an integer of any size (near a power
    of two often: where counters wrap and floats lose digits), or a few odd characters."""
    kind = rng.randrange(4)
    if kind == 0:
        return rng.choice(HOSTILE_TOKENS)
    if kind == 1:
        return str(2 ** rng.choice(POWERS) + rng.randint(-2, 2))
    if kind == 2:
        return str(rng.randint(-10, 2 ** rng.randint(1, 70)))
    return "".join(rng.choice(TOKEN_CHARS) for _ in range(rng.randint(0, 8)))


@st.composite
def mutated(draw: st.DrawFn, text: str) -> str:
    """`text` with a few tokens replaced, lines cut or duplicated, bytes inserted (the choices
    from one seeded random.Random: the module's docstring says why)."""
    rng = random.Random(draw(st.integers(0, 2**64 - 1)))
    lines = text.splitlines()
    for _ in range(rng.randint(0, 4)):
        if not lines:
            break
        index = rng.randrange(len(lines))
        words = lines[index].split(" ")
        kind = rng.choice(["token", "truncate", "duplicate", "bytes", "drop"])
        if kind == "token":  # of "key=value" (PSI, io.stat) often the value only
            at = rng.randrange(len(words))
            key, equals, _ = words[at].rpartition("=")
            prefix = key + equals if equals and rng.random() < 0.5 else ""
            words[at] = prefix + hostile_token(rng)
            lines[index] = " ".join(words)
        elif kind == "truncate":
            lines[index] = lines[index][: rng.randint(0, len(lines[index]))]
        elif kind == "duplicate":
            lines.insert(index, lines[index])
        elif kind == "bytes":  # any bytes (often one that splits or ends a word, or is not
            # UTF-8); those that are not UTF-8 kept as they are
            noise = (
                rng.choice(EDGE_BYTES) if rng.random() < 0.5 else rng.randbytes(rng.randint(0, 12))
            ).decode("utf-8", "surrogateescape")
            at = rng.randint(0, len(lines[index]))
            lines[index] = lines[index][:at] + noise + lines[index][at:]
        else:
            del lines[index]
    return "\n".join(lines) + rng.choice(["\n", "", "\r\n"])


JSON_HOSTILE = ["NaN", "Infinity", "-Infinity", "1e400", "9" * 5000, "-1", "1.5", "null",
                '"x"', "[]", "{}", "true", '"1e400"', '"NaN"', "18446744073709551616",
                # raw bytes in a vendor string, as the runner decodes them (surrogateescape),
                # and a JSON escape of a lone surrogate
                '"Bad\udcffModel\udc80"', '"\\ud800x"', '"50% \\u00e9"']  # fmt: skip


Slot = tuple[dict[str, object], str]


def _slots(node: object, found: list[Slot]) -> list[Slot]:
    """Every (object, key) of a JSON document, depth first."""
    if isinstance(node, dict):
        for key, value in node.items():
            found.append((node, key))
            _slots(value, found)
    elif isinstance(node, list):
        for item in node:
            _slots(item, found)
    return found


@st.composite
def json_mutated(draw: st.DrawFn, documents: list[str]) -> str:
    """A capture with a few JSON values replaced by hostile ones (as text: NaN is not JSON):
    about one value in 31, as many as a coin per key would give, but as a count and positions
    (a capture has ~1,000 keys), chosen by a seeded random.Random as in mutated()."""
    text = draw(st.sampled_from(documents))
    rng = random.Random(draw(st.integers(0, 2**64 - 1)))  # the choices: see the module docstring
    data = json.loads(text)
    slots = _slots(data, [])
    marks: list[str] = []
    for _ in range(rng.randint(0, max(1, 2 * len(slots) // 31))):
        parent, key = rng.choice(slots)  # a value inside a replaced one is replaced for nothing
        parent[key] = f"@@{len(marks)}@@"
        marks.append(rng.choice(JSON_HOSTILE))
    out = json.dumps(data)
    for index, value in enumerate(marks):
        out = out.replace(f'"@@{index}@@"', value)
    if rng.randrange(10) == 0:
        out = out[: rng.randint(0, len(out))]
    return out

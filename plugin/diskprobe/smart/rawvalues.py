"""Raw values as smartctl prints them, reduced to the integer that means something.

"38 (Min/Max 20/45)"  -> 38        temperature with extremes: smartctl formatted it
"0x000000000001"      -> 1         hex
"2765/13191816"       -> 2765      Seagate 1/7 already split by smartctl (errors/operations)
"1,234,567"           -> 1234567   NVMe text with thousands separators
"146,935,678 [75.2 TB]" -> 146935678
"1612952 min"         -> 1612952
"0 0 5"               -> 5         smartctl's raw16 format prints the 48-bit value's three
                                   16-bit words high to low; Command_Timeout's count is the
                                   low word (the first number alone would say 0)
"""

from __future__ import annotations

import re

_LEADING_NUMBER = re.compile(r"\s*(0x[0-9a-fA-F]+|[0-9][0-9,.]*)")
_RAW16 = re.compile(r"\s*(\d+) (\d+) (\d+)\s*$")
COMMAND_TIMEOUT = 188
# Seagate packs two counters into the 48-bit raw value of 1 Raw_Read_Error_Rate and
# 7 Seek_Error_Rate: the high 16 bits count errors, the low 32 bits count operations
# (smartmontools' drivedb prints them "-v 1,raw24/raw32" as errors/operations).
SEAGATE_ERROR_RATE_IDS = (1, 7)


# NVMe counters are 128-bit (39 digits, 32 hex): anything longer is no counter, and int()
# refuses strings of more than 4300 digits with a ValueError of its own.
MAX_DIGITS, MAX_HEX_DIGITS = 40, 34


def parse_raw(text: str) -> int | None:
    """The leading integer of a raw-value string, or None when there is none."""
    match = _LEADING_NUMBER.match(text)
    if match is None:
        return None
    token = match.group(1)
    if token.lower().startswith("0x"):
        return int(token, 16) if len(token) <= MAX_HEX_DIGITS else None
    digits = token.split(".")[0].replace(",", "")
    return int(digits) if digits and len(digits) <= MAX_DIGITS else None


def bounded_int(text: str) -> int | None:
    """ASCII digits (optionally signed) as an int, None past MAX_DIGITS: for parsers'
    `\\d+` matches and JSON integers, which may be any length in hostile output."""
    digits = text.lstrip("+-")
    if not (digits.isascii() and digits.isdigit()) or len(digits) > MAX_DIGITS:
        return None
    return int(text)


def attribute_raw(
    attribute_id: int, model: str, raw_string: str, raw_value: int | None = None
) -> int | None:
    """An ATA attribute's meaningful raw number, from smartctl's string (and JSON value)."""
    text = raw_string.strip()
    triple = _RAW16.match(text)
    if triple and all(len(word) <= 5 and int(word) <= 0xFFFF for word in triple.groups()):
        high, middle, low = (int(word) for word in triple.groups())
        return unpack_vendor_raw(attribute_id, model, high << 32 | middle << 16 | low, True)
    if (text.isascii() and text.isdigit()) or (not text and raw_value is not None):
        number = bounded_int(text) if text else raw_value or 0
        return None if number is None else unpack_vendor_raw(attribute_id, model, number)
    parsed = parse_raw(text)  # smartctl formatted it: the leading number is the value
    return parsed if parsed is not None else raw_value


def unpack_vendor_raw(attribute_id: int, model: str, raw: int, raw16: bool = False) -> int:
    """The documented counter inside a packed 48-bit raw value; others unchanged.

    188 Command_Timeout: the low 16 bits (Seagate always packs it; others when smartctl
    shows it in raw16 words). Seagate 1 and 7: the error count, the high 16 bits.
    """
    if attribute_id == COMMAND_TIMEOUT and (raw16 or is_seagate(model)):
        return raw & 0xFFFF
    if attribute_id in SEAGATE_ERROR_RATE_IDS and is_seagate(model):
        return raw >> 32
    return raw


def is_seagate(model: str) -> bool:
    upper = model.upper().lstrip()
    return upper.startswith(("ST", "SEAGATE")) and not upper.startswith("STEC")

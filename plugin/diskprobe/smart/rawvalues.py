"""Raw values as smartctl prints them, reduced to the integer that means something.

"38 (Min/Max 20/45)"  -> 38        temperature with extremes
"0 0 0"               -> 0         Command_Timeout on some drives: first number
"0x000000000001"      -> 1         hex
"2765/13191816"       -> 2765      Seagate 1/7 ("errors/operations"): the count first
"1,234,567"           -> 1234567   NVMe text with thousands separators
"146,935,678 [75.2 TB]" -> 146935678
"1612952 min"         -> 1612952
"""

from __future__ import annotations

import re

_LEADING_NUMBER = re.compile(r"\s*(0x[0-9a-fA-F]+|[0-9][0-9,.]*)")

# Seagate packs several counters into the 48-bit raw value of these attributes; the
# documented meaning lives in the low bits (smartmontools drivedb, Seagate's field notes):
#   1 Raw_Read_Error_Rate, 7 Seek_Error_Rate: low 32 bits are the error count,
#   188 Command_Timeout: low 16 bits are the timeouts (e.g. 51540393996 = 12 | 12<<16 | 12<<32).
PACKED_LOW_BITS = {1: 32, 7: 32, 188: 16}


def parse_raw(text: str) -> int | None:
    """The leading integer of a raw-value string, or None when there is none."""
    match = _LEADING_NUMBER.match(text)
    if match is None:
        return None
    token = match.group(1)
    if token.lower().startswith("0x"):
        return int(token, 16)
    digits = token.split(".")[0].replace(",", "")
    return int(digits) if digits else None


def unpack_vendor_raw(attribute_id: int, model: str, raw: int) -> int:
    """Seagate's packed attributes reduced to their documented low bits; others unchanged."""
    bits = PACKED_LOW_BITS.get(attribute_id)
    if bits is None or not _is_seagate(model):
        return raw
    return raw & ((1 << bits) - 1)


def _is_seagate(model: str) -> bool:
    upper = model.upper().lstrip()
    return upper.startswith(("ST", "SEAGATE")) and not upper.startswith("STEC")

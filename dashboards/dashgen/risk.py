"""Drive risk as diskprobe itself judges it: the AFR limits and the defect growth fields.

The limits come from diskprobe's own code, not from literals here: the warn limit is the
failure-rate table's hard-drive baseline (a drive whose predictor attributes all read 0)
times VerdictRules' afr_warn_multiple, the fail limit is VerdictRules' afr_fail_percent. A
new table or another default moves the alert, the table colours and the docs together.
They are diskprobe's defaults: a fleet that sets `[smart] afr_warn_multiple` to another value
sets AFR_WARN_MULTIPLE below to that value and regenerates.
"""

from __future__ import annotations

from dashgen.refs import SMART, Field
from diskprobe.smart.afr import load_afr_table
from diskprobe.smart.verdict import GROWTH_COUNTERS, VerdictRules

AFR_MEDIA = "hdd"  # the only media the table has data for (afr_table.toml: [media.*])
AFR_WARN_MULTIPLE = VerdictRules().afr_warn_multiple
# One drive: a serial can move between hosts and device names, so all four label a drive.
DRIVE = ("host", "device", "model", "serial")


def afr_baseline() -> float:
    """The hard-drive population's rate (%/year), as diskprobe's verdict compares against."""
    baseline = load_afr_table().baseline(AFR_MEDIA)
    if baseline is None:
        raise ValueError(f"diskprobe's AFR table has no baseline for {AFR_MEDIA!r}")
    return baseline


def afr_warn_percent() -> float:
    """diskprobe warns at afr_percent >= this (2.87 x 2.0 = 5.74 with today's table)."""
    # Rounded like the table (0.01 %): 2.87 * 2.0 prints as 5.74, not 5.7399999999999.
    return round(afr_baseline() * AFR_WARN_MULTIPLE, 4)


def afr_fail_percent() -> float:
    """diskprobe fails a drive at afr_percent >= this (0 disables the rule there)."""
    return VerdictRules().afr_fail_percent


def growth_fields() -> tuple[Field, ...]:
    """The *_per_day fields, one per counter diskprobe tracks growth of, schema-checked."""
    return tuple(SMART.f(f"{counter}_per_day") for counter in GROWTH_COUNTERS)

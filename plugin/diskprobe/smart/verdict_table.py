"""docs/smart.md's verdict table and failure-rate table, generated from the rules and the data
(tests/update_generated.py writes them; tests/test_docs.py keeps them equal)."""

from __future__ import annotations

from diskprobe.smart.afr import AfrTable, AttributeRates, load_afr_table
from diskprobe.smart.thresholds import DEFAULT_THRESHOLDS, FAIL, WARN
from diskprobe.smart.verdict import GROWTH_COUNTERS, VerdictRules

FIXED_RULES = (
    (FAIL, "smart_overall=FAILED", "smartctl's overall self-assessment is FAILED"),
    (FAIL, "failing_now=NAME", "an ATA attribute is at or below its threshold now (value and "
     "threshold both 0 never count: \"not maintained\")"),
    (FAIL, "critical_warning=N", "NVMe critical warning bits for spare, reliability, read-only "
     "or volatile backup (bit 1, temperature, alone warns)"),
    (FAIL, "available_spare_percent=N", "NVMe spare below the drive's own threshold"),
    (WARN, "critical_warning=2", "NVMe critical warning: temperature only"),
    (WARN, "failed_in_past=NAME", "a non-temperature ATA attribute was at or below its "
     "threshold in the past (a temperature attribute: field temperature_failed_in_past)"),
    (WARN, "NAME_increase=N", f"any of {', '.join(GROWTH_COUNTERS)} grew since the drive's "
     "baseline (first values seen for its serial)"),
    (WARN, "NAME_growth_24h=N", "the same counters grew within the last 24 hours and no "
     "baseline says so (a serial that identifies nothing: history kept by device name)"),
    (WARN, "temperature_c=N", "temperature at or above the drive's own operating limit (NVMe "
     "warning composite threshold, ATA device statistics or SCT limit, SCSI trip)"),
    (WARN, "self_test=failed", "the most recent self-test in the drive's log failed"),
)  # fmt: skip


def render_table(rules: VerdictRules | None = None, table: AfrTable | None = None) -> str:
    """The verdict table: fixed rules, the estimate's limits, then each count limit."""
    rules, table = rules or VerdictRules(), table or load_afr_table()
    lines = ["| verdict | reason | when |", "| --- | --- | --- |"]
    lines += [f"| {level} | `{reason}` | {when} |" for level, reason, when in FIXED_RULES]
    lines.append(
        f"| {FAIL} | `afr_percent=X(NAME=N)` | estimated failure rate >= "
        f"{rules.afr_fail_percent:g} %/year (`afr_fail_percent`) |"
    )
    for media in table.predictors:
        baseline = table.baseline(media) or 0.0
        lines.append(
            f"| {WARN} | `afr_percent=X(NAME=N)` | {media}: estimated failure rate >= "
            f"{rules.afr_warn_multiple:g} x the baseline {baseline:g} %/year = "
            f"{rules.afr_warn_multiple * baseline:g} %/year (`afr_warn_multiple`) |"
        )
    for name, threshold in DEFAULT_THRESHOLDS.items():
        sign = "<=" if threshold.below else ">="
        for level, limit in ((FAIL, threshold.fail), (WARN, threshold.warn)):
            if limit is not None:
                lines.append(f"| {level} | `{name}=N` | {name} {sign} {limit} |")
    return "\n".join(lines) + "\n"


def render_afr_table(table: AfrTable | None = None) -> str:
    """Every bucket of the failure-rate table, with the media it applies to and its source."""
    table = table or load_afr_table()
    predictors = {i for ids in table.predictors.values() for i in ids}
    lines = [
        "| attribute | raw value | AFR %/year | interval | in the drive estimate |",
        "| --- | --- | --- | --- | --- |",
    ]
    for attribute in table.attributes.values():
        used = "yes" if attribute.id in predictors else "no (per attribute only)"
        lines += [_bucket_row(attribute, i, used) for i in range(len(attribute.buckets))]
    media = ", ".join(table.predictors)
    lines.append("")
    lines.append(f"Applies to: {media} (ATA). Source: [{table.source['name']}]"
                 f"({table.source['url']}), {table.source['licence']}; data: "
                 f"{table.source['data']}.")  # fmt: skip
    for kind, note in table.notes.items():
        lines.append(f"No estimate for {kind}: {note}.")
    return "\n".join(lines) + "\n"


def _bucket_row(attribute: AttributeRates, index: int, used: str) -> str:
    bucket = attribute.buckets[index]
    name = f"{attribute.id} {attribute.name}".strip()
    if bucket.high is None:
        values = f"{bucket.low} and more"
    elif bucket.high == bucket.low:
        values = str(bucket.low)
    else:
        values = f"{bucket.low}..{bucket.high}"
    low, high = bucket.interval
    return f"| {name} | {values} | {bucket.afr_percent:g} | {low:g}..{high:g} | {used} |"

"""The failure-rate estimate: afr_table.toml (the data and its sources) and its reading.

A drive's estimate is the *worst* rate among its predictor attributes (for hard drives
Backblaze's five: 5, 187, 188, 197, 198), each read as the highest rate of any bucket at or
below its value. Why the worst and not a product of risks: the five move together (a pending
sector becomes offline-uncorrectable, then reallocated), so multiplying them would count one
defect two or three times. Why "at or below": the table dips where its samples are thin
(187 at 7..11 is 38 % after 50 % at 4..6, with overlapping intervals); a drive that gains
defects must never look safer for it. Per-attribute rates (diskprobe_smart_attr) are the
table's figures as published, dips included.

The estimate is a population rate: of drives like this one, about that share fail per year.
It is no prediction for one drive, and there is none for media the data does not cover.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from importlib import resources
from typing import Any, Optional

from diskprobe.smart.model import Attribute, DriveHealth

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python < 3.11 only
    import tomli as tomllib

TABLE_FORMAT = "diskprobe-afr-table"


@dataclass(frozen=True)
class Bucket:
    low: int
    high: Optional[int]  # None: no upper bound
    afr_percent: float
    interval: tuple[float, float]

    def holds(self, value: int) -> bool:
        return self.low <= value and (self.high is None or value <= self.high)


@dataclass(frozen=True)
class AttributeRates:
    id: int
    name: str
    buckets: tuple[Bucket, ...]

    def rate(self, value: int) -> float | None:
        """The rate of the bucket holding `value`; above the last bucket, the last one's."""
        for bucket in self.buckets:
            if bucket.holds(value):
                return bucket.afr_percent
        last = self.buckets[-1]
        # Above a range: its (worst-end) rate. Above a single value ("10: only 0"): no data.
        above = last.high is not None and value > last.high and last.high > last.low
        return last.afr_percent if above else None

    def rate_at_most(self, value: int) -> float | None:
        """The highest rate of any bucket starting at or below `value` (never lower for more)."""
        rates = [b.afr_percent for b in self.buckets if b.low <= value]
        return max(rates) if rates and self.rate(value) is not None else None


@dataclass(frozen=True)
class Estimate:
    afr_percent: float
    attribute: str  # the predictor that set it: "pending_sectors"
    value: int


@dataclass(frozen=True)
class AfrTable:
    attributes: dict[int, AttributeRates]
    predictors: dict[str, tuple[int, ...]]  # media kind -> attribute ids
    notes: dict[str, str]  # media kind -> why it has no estimate
    source: dict[str, str]

    def covers(self, health: DriveHealth) -> bool:
        return health.protocol == "ata" and health.media in self.predictors

    def attribute_rate(self, health: DriveHealth, attribute: Attribute) -> float | None:
        rates = self.attributes.get(attribute.id)
        if not self.covers(health) or rates is None or attribute.raw is None:
            return None
        return rates.rate(attribute.raw)

    def estimate(self, health: DriveHealth) -> Estimate | None:
        """The drive's estimate, or None (media without data, or no predictor reported)."""
        if not self.covers(health):
            return None
        found: Estimate | None = None
        wanted = self.predictors[health.media]
        for attribute in health.attributes:
            rates = self.attributes.get(attribute.id)
            if attribute.id not in wanted or rates is None or attribute.raw is None:
                continue
            rate = rates.rate_at_most(attribute.raw)
            if rate is not None and (found is None or rate > found.afr_percent):
                found = Estimate(rate, rates.name or str(attribute.id), attribute.raw)
        return found

    def baseline(self, media: str) -> float | None:
        """The estimate of a drive whose predictors all read 0: the population's rate."""
        zero = [self.attributes[i].rate_at_most(0) for i in self.predictors.get(media, ())]
        rates = [rate for rate in zero if rate is not None]
        return max(rates) if rates else None


def load_afr_table(text: str | None = None) -> AfrTable:
    """The packaged table (or `text`); ValueError naming what is wrong in it."""
    if text is None:
        text = resources.files("diskprobe.smart").joinpath("afr_table.toml").read_text("utf-8")
    try:
        return _table(tomllib.loads(text))
    except (KeyError, TypeError, IndexError) as error:  # a row missing a key, or mistyped
        raise ValueError(f"afr table: missing or malformed {error}") from None


def _table(data: dict[str, Any]) -> AfrTable:
    if data.get("format") != TABLE_FORMAT:
        raise ValueError("afr table: not a diskprobe-afr-table")
    attributes = {}
    for row in data.get("attribute", []):
        rates = _attribute(row)
        attributes[rates.id] = rates
    predictors, notes = {}, {}
    for media, entry in data.get("media", {}).items():
        if "predictors" in entry:
            ids = tuple(int(i) for i in entry["predictors"])
            missing = [i for i in ids if i not in attributes]
            if missing:
                raise ValueError(f"afr table: media {media}: predictors without rates {missing}")
            predictors[media] = ids
        else:
            notes[media] = str(entry.get("note", "no data"))
    return AfrTable(attributes, predictors, notes, {k: str(v) for k, v in data["source"].items()})


def _attribute(row: dict[str, Any]) -> AttributeRates:
    buckets = []
    for entry in row["buckets"]:
        low, high = int(entry["from"]), entry.get("to")
        if high is not None and int(high) < low:
            raise ValueError(f"afr table: attribute {row['id']}: bucket {low}..{high} is empty")
        interval = (float(entry["ci"][0]), float(entry["ci"][1]))
        upper = None if high is None else int(high)
        buckets.append(Bucket(low, upper, float(entry["afr"]), interval))
    if not buckets:
        raise ValueError(f"afr table: attribute {row['id']}: no buckets")
    return AttributeRates(int(row["id"]), str(row.get("name", "")), tuple(buckets))

"""A fail-slow Track as the state file keeps it, and back, for restarts.

    "sdc": {"group": "hdd:ST8000NM0055", "fail_slow": true,
            "window": [[slot, {"r/12/14": [requests, ms]}], ...],
            "evidence_n": [[slot, {"e/0/0": [active ms, active, slow, near intervals]}], ...],
            "history": [[slot, {"r/12/14": [requests, ms, active ms]}], ...]}

The file may come from another version, a hand edit or a hostile user: a slot or key that
does not fit is left out, an entry that is no object is dropped by the store's shape check,
and nothing read here can grow without bound (sliding.MAX_KEYS_PER_SLOT, the slot counts).
"""

from __future__ import annotations

from typing import Any, Optional

from diskprobe.compute.failslow import (
    HISTORY_SEC,
    HISTORY_SLOTS,
    WINDOW_SLOTS,
    FailSlowRules,
    Track,
)
from diskprobe.compute.peers import Key
from diskprobe.compute.sliding import SlidingSums

MAX_BUCKET = 200  # far beyond any load or request size (2^100 requests per second)


def key_text(key: Key) -> str:
    return f"{key[0]}/{key[1]}/{key[2]}"


def key_of(text: Any) -> Optional[Key]:
    parts = text.split("/") if isinstance(text, str) else []
    if len(parts) != 3 or parts[0] not in ("r", "w", "e"):
        return None
    try:
        size, load = int(parts[1]), int(parts[2])
    except ValueError:
        return None
    if abs(size) > MAX_BUCKET or abs(load) > MAX_BUCKET:
        return None
    return (parts[0], size, load)


def track_to_json(track: Track) -> dict[str, Any]:
    data: dict[str, Any] = {
        "group": track.group,
        "fail_slow": track.fail_slow,
        "window_sec": track.window_sec,
        "window": track.window.to_json(key_text),
        "evidence_n": track.evidence.to_json(key_text),
    }
    if track.history is not None:
        data["history"] = track.history.to_json(key_text)
    return data


def track_from_json(data: Any, group: str, rules: FailSlowRules) -> Optional[Track]:
    """The saved Track of a device now in `group`; None when there is none for that group
    (another group means another comparison: it starts afresh)."""
    if not is_track_entry(data) or data["group"] != group:
        return None
    track = Track(group, rules)
    track.fail_slow = data["fail_slow"]
    if "history" in data:
        history = data["history"]
        track.history = SlidingSums.from_json(HISTORY_SEC, HISTORY_SLOTS, history, key_of, 3)
    window, slots = rules.window_sec, WINDOW_SLOTS
    if data.get("window_sec") == window:  # slots of another length are not these slots
        track.window = SlidingSums.from_json(window, slots, data.get("window"), key_of, 2)
        # "evidence" (before issue 27) weighed intervals by their length: not these counts
        track.evidence = SlidingSums.from_json(window, slots, data.get("evidence_n"), key_of, 4)
    return track


def is_track_entry(value: Any) -> bool:
    """The state store's shape check of one entry (the rings are checked as they load)."""
    return (
        isinstance(value, dict)
        and isinstance(value.get("group"), str)
        and isinstance(value.get("fail_slow"), bool)
    )

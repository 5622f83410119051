"""The [smart] risk settings (afr_warn_multiple, afr_fail_percent, growth_window) through the
installed `diskprobe` command. A value that passes takes effect on a real drive's verdict (the
fake smartctl replays a golden capture); a bad one is one E! line and exit status 2 before any
drive is read; the command's own sample config loads back to the defaults."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from diskprobe.config import SmartConfig, load_config_text
from diskprobe.durations import parse_duration

from lineproto import parse_lines

TESTS = Path(__file__).resolve().parent
DISKPROBE = Path(sys.executable).parent / "diskprobe"  # the installed console script
FAKE_SMARTCTL = TESTS / "fake_smartctl" / "smartctl"
# An HP hard drive, smart_status passed, 187 Reported_Uncorrect = 1: afr 33.88 %/year.
CASE = TESTS / "golden" / "smart-json" / "failing-ata-hdd-hp-mb0500ebncr"
AFR = "afr_percent=33.88(reported_uncorrectable=1)"
COUNT = "reported_uncorrectable=1"
NEW_KEYS = ("afr_warn_multiple", "afr_fail_percent", "growth_window")
OTHER_COLLECTORS = ("io", "filesystems", "pressure", "process_io", "cgroup_io")


def _config_text(tmp_path: Path, smart: str) -> str:
    # The state file stays in tmp_path: a run must never touch /var/lib/diskprobe.
    tables = "".join(f"[{name}]\nenabled = false\n" for name in OTHER_COLLECTORS)
    return (
        f"state_file = {json.dumps(str(tmp_path / 'state.json'))}\n"
        f"[smart]\nsmartctl_path = {json.dumps(str(FAKE_SMARTCTL))}\n{smart}\n{tables}"
    )


def _run(tmp_path: Path, config_text: str, *args: str) -> subprocess.CompletedProcess[str]:
    fake = tmp_path / "fake-smartctl"
    if not fake.exists():
        shutil.copytree(CASE, fake / CASE.name)
    config = tmp_path / "diskprobe.toml"
    config.write_text(config_text, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HOST_", "COLLECTD_", "FAKE_"))}
    env["FAKE_SMARTCTL_DIR"] = str(fake)
    return subprocess.run(
        [str(DISKPROBE), "--config", str(config), *args],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip


def _verdict(result: subprocess.CompletedProcess[str]) -> tuple[object, tuple[str, ...]]:
    assert result.returncode == 0, result.stderr
    assert not [line for line in result.stderr.splitlines() if line[:2] in ("E!", "W!")]
    smart = [p for p in parse_lines(result.stdout) if p.measurement == "diskprobe_smart"]
    assert len(smart) == 1, result.stdout
    reasons = str(smart[0].fields["verdict_reasons"])
    return smart[0].fields["verdict"], tuple(reasons.split(","))


@pytest.mark.parametrize(
    ("smart", "verdict"),
    [
        ("", ("warn", (COUNT, AFR))),  # the defaults: 2 x 2.87 and 100 %/year
        ("afr_fail_percent = 100", ("warn", (COUNT, AFR))),  # an int for a float: accepted
        ("afr_fail_percent = 30", ("fail", (AFR, COUNT))),  # 33.88 >= 30: the estimate fails it
        ("afr_warn_multiple = 12", ("warn", (COUNT,))),  # 12 x 2.87 = 34.44 > 33.88: no afr
        ("afr_warn_multiple = 0\nafr_fail_percent = 0", ("warn", (COUNT,))),  # 0 disables both
        ('growth_window = "1h"', ("warn", (COUNT, AFR))),  # the shortest window allowed
    ],
    ids=["defaults", "fail-100-int", "fail-30-int", "warn-12-int", "both-off", "window-1h"],
)
def test_accepted_values_take_effect_on_a_real_drive(
    tmp_path: Path, smart: str, verdict: tuple[str, tuple[str, ...]]
) -> None:
    result = _run(tmp_path, _config_text(tmp_path, smart), "--once")
    assert _verdict(result) == verdict
    assert (tmp_path / "fake-smartctl" / "calls.log").exists()  # the drive was read


def test_an_int_for_a_float_option_is_held_as_a_float() -> None:
    smart = load_config_text("[smart]\nafr_fail_percent = 100\nafr_warn_multiple = 3\n", "t").smart
    assert (smart.afr_fail_percent, smart.afr_warn_multiple) == (100.0, 3.0)
    assert type(smart.afr_fail_percent) is float and type(smart.afr_warn_multiple) is float


@pytest.mark.parametrize(
    ("line", "key", "problem"),
    [
        ("afr_fail_percent = nan", "afr_fail_percent", "finite"),
        ("afr_fail_percent = inf", "afr_fail_percent", "finite"),
        ("afr_fail_percent = -1", "afr_fail_percent", "at least 0"),
        ('afr_fail_percent = "high"', "afr_fail_percent", "float"),
        ("afr_fail_percent = true", "afr_fail_percent", "float"),
        ("afr_warn_multiple = 1e9", "afr_warn_multiple", "at most 1000"),
        ("afr_warn_multiple = -inf", "afr_warn_multiple", "finite"),
        ('growth_window = "10s"', "growth_window", "1h to 366 days"),
        ("growth_window = 60", "growth_window", "1h to 366 days"),
    ],
    ids=["nan", "inf", "negative", "string", "bool", "1e9", "minus-inf", "10s", "60-seconds"],
)
def test_bad_value_is_one_clear_line_and_exit_status_2(
    tmp_path: Path, line: str, key: str, problem: str
) -> None:
    result = _run(tmp_path, _config_text(tmp_path, line), "--once")
    assert "Traceback" not in result.stderr
    assert result.returncode == 2 and result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"E! config: {tmp_path / 'diskprobe.toml'}: [smart]: '{key}'")
    assert problem in lines[0], lines[0]
    assert not (tmp_path / "fake-smartctl" / "calls.log").exists()  # refused before any read


def _sample(tmp_path: Path) -> str:
    """`diskprobe --sample-config` with the three keys uncommented, pointed at tmp_path."""
    printed = subprocess.run(
        [str(DISKPROBE), "--sample-config"], capture_output=True, text=True, timeout=60
    )
    assert printed.returncode == 0 and printed.stderr == ""
    lines, section = [], ""
    for line in printed.stdout.splitlines():
        key = line.strip().lstrip("# ").split(" = ")[0]
        if line.startswith("["):
            section = line.strip("[]")
        elif key == "state_file":
            line = f"state_file = {json.dumps(str(tmp_path / 'state.json'))}"
        elif section == "smart" and key == "smartctl_path":
            line = f"smartctl_path = {json.dumps(str(FAKE_SMARTCTL))}"
        elif section == "smart" and key in NEW_KEYS:
            line = line.replace("# ", "", 1)
        elif section in OTHER_COLLECTORS and key == "enabled":
            line = "enabled = false"
        lines.append(line)
    return "\n".join(lines) + "\n"


def test_sample_config_shows_the_defaults_and_loads_back_to_them(tmp_path: Path) -> None:
    text = _sample(tmp_path)
    shown = dict(line.strip().split(" = ") for line in text.splitlines()
                 if line.strip().split(" = ")[0] in NEW_KEYS)  # fmt: skip
    defaults = SmartConfig()
    assert float(shown["afr_warn_multiple"]) == defaults.afr_warn_multiple == 2.0
    assert float(shown["afr_fail_percent"]) == defaults.afr_fail_percent == 100.0
    assert parse_duration(json.loads(shown["growth_window"])) == defaults.growth_window == 7 * 86400
    loaded = load_config_text(text, "sample").smart
    assert [getattr(loaded, key) for key in NEW_KEYS] == [getattr(defaults, k) for k in NEW_KEYS]
    # The command reads its own sample: same verdict as with nothing set at all.
    sample_run = _run(tmp_path, text, "--once")
    assert _verdict(sample_run) == ("warn", (COUNT, AFR))

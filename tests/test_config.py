"""Configuration: loading, one-line errors naming file/key/closest key, sample config round trip."""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import pytest

from diskprobe.config import (
    SECTIONS,
    AgentConfig,
    ConfigError,
    field_default,
    load_config,
    load_config_text,
)
from diskprobe.config.sample import render_sample_config
from diskprobe.durations import format_duration, parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("500ms", 0.5),
        ("10s", 10.0),
        ("30m", 1800.0),
        ("1h", 3600.0),
        ("1h30m", 5400.0),
        ("1.5s", 1.5),
    ],
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)
    assert parse_duration(format_duration(seconds)) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "10", "10x", "s", "1h 30m", "-5s", "ten seconds"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(ValueError, match="bad duration"):
        parse_duration(text)


def test_full_config(tmp_path: Path) -> None:
    path = tmp_path / "diskprobe.toml"
    path.write_text(
        'interval = "30s"\ntrigger = "stdin"\ndebug = true\n'
        '[io]\ndevices = ["sd*", "nvme*"]\nexclude = []\npartitions = false\n'
        'device_tags = ["serial"]\ncounters = true\ninterval = "5s"\n'
    )
    config = load_config(str(path))
    assert config.interval == 30.0 and config.trigger == "stdin" and config.debug
    assert config.io.devices == ["sd*", "nvme*"] and config.io.exclude == []
    assert not config.io.partitions and config.io.device_tags == ["serial"]
    assert config.io.counters and config.io.interval == 5.0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[io]\nexlude = []\n", "[io]: unknown key 'exlude' (closest valid key: 'exclude')"),
        ('intervall = "1s"\n', "unknown key 'intervall' (closest valid key: 'interval')"),
        ("[disk]\nenabled = true\n", "unknown key 'disk' (closest valid key:"),
        ('[io]\npartitions = "yes"\n', "'partitions' must be of type bool, not str"),
        ('[io]\ndevices = "sda"\n', "'devices' must be a list of strings"),
        ('interval = "10 seconds"\n', "'interval': bad duration '10 seconds'"),
        ('interval = "0s"\n', "'interval' must be longer than zero"),
        ('trigger = "signal"\n', "'signal' is not one of interval, stdin"),
        ('[io]\ndevice_tags = ["vendor"]\n', "'vendor' is not one of model, serial"),
        ("io = 3\n", "'io' must be a table ([io])"),
        ("interval = \n", "not valid TOML"),
    ],
)
def test_errors_name_file_key_and_closest_key(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_config(str(path))
    assert str(caught.value).startswith(str(path))
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_missing_file() -> None:
    with pytest.raises(ConfigError, match="cannot read config"):
        load_config("/nonexistent/diskprobe.toml")


def test_sample_config_loads_back_to_the_defaults() -> None:
    text = render_sample_config()
    assert load_config_text(text, "sample") == AgentConfig()


def test_sample_config_style_and_every_key_documented() -> None:
    text = render_sample_config()
    for line in text.splitlines():
        assert line == "" or line.lstrip().startswith(("## ", "# ", "[")), line
    # Uncommenting every "# key = value" line must still load and give the defaults.
    uncommented = "\n".join(
        line.replace("# ", "", 1) if line.lstrip().startswith("# ") else line
        for line in text.splitlines()
    )
    config = load_config_text(uncommented, "uncommented")
    assert config.io.exclude == AgentConfig().io.exclude and config.io.interval == 60.0


def test_cli_exits_non_zero_with_one_line_on_a_bad_config(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text("[io]\ncounter = true\n")
    result = subprocess.run(
        [sys.executable, "-m", "diskprobe", "--config", str(path), "--once"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.splitlines() == [
        f"E! config: {path}: [io]: unknown key 'counter' (closest valid key: 'counters')"
    ]


def test_cli_bad_interval_flag() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "diskprobe", "--interval", "fast", "--once"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 2 and result.stderr.startswith(
        "E! config: --interval: bad duration"
    )


# -- bounds, flags and the environment go through the same checks (#11 item 10) --------------


@pytest.mark.parametrize(
    "text",
    [
        'interval = "10ms"\n',
        'interval = "24h"\n[io]\nenabled = false\n',  # fail-slow needs 10 intervals a window
        'interval = "3m"\n',  # the longest that leaves 10 in the default 30 m window
        'state_save_interval = "0s"\n',
        '[smart]\ninterval = "168h"\nrescan = "168h"\ntimeout = "1h"\n',
        '[filesystems]\nforecast_window = "720h"\nstat_timeout = "10ms"\n',
        '[output]\nurl = "https://[::1]:8086/influx"\n',
        '[output]\nurl = "http://influxdb"\n',
        '[smart]\ndevices = ["/dev/sda", "/dev/bus/0 -d megaraid,5"]\n',
    ],
)
def test_values_at_the_bounds_are_accepted(text: str) -> None:
    load_config_text(text, "ok.toml")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('interval = "9ms"\n', "'interval' must be 10ms to 24h, not '9ms'"),
        ('state_save_interval = "-1s"\n', "bad duration"),
        ('[smart]\nrescan = "169h"\n', "'rescan' must be 10ms to 7 days"),
        ("[smart]\nconcurrency = 65\n", "'concurrency' must be at most 64"),
        ('[smart]\nexclude = ["a\\u0000"]\n', "'exclude' must not contain a NUL character"),
        ('[output]\nurl = "http://:8086"\n', "'url' must be an http:// or https:// URL"),
        ('[output]\nurl = "http://h:0"\n', "'url': the port must be a number from 1 to 65535"),
        ('interval = "4m"\n', '[io] fail_slow_window = "30m" holds 7 intervals of 4m; fail-slow '
         "needs at least 10: lengthen fail_slow_window or shorten the interval"),
        ('[io]\ninterval = "10s"\nfail_slow_window = "90s"\n', "holds 9 intervals of 10s"),
    ],
)
def test_out_of_bounds_values_are_refused(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config_text(text, "bad.toml")
    assert str(caught.value).startswith("bad.toml: ") and message in str(caught.value)


def test_a_directory_is_not_a_config_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not a regular file"):
        load_config(str(tmp_path))


def test_flags_pass_the_same_checks_and_win_over_the_file(tmp_path: Path) -> None:
    path = tmp_path / "d.toml"
    path.write_text('interval = "1m"\n[output]\nkind = "influxdb"\nbucket = "b"\n')
    flags = [("--interval", "interval", "5s"), ("--url", "output.url", "http://h:8086")]
    config = load_config(str(path), flags)  # the file alone lacks the url: checked after flags
    assert config.interval == 5.0 and config.output.url == "http://h:8086"
    with pytest.raises(ConfigError, match=r"^--interval must be 10ms to 24h, not '1ns'$"):
        load_config(str(path), [("--interval", "interval", "1ns")])


@pytest.mark.parametrize("value", ["nan", "inf", "-5", "ten", "1e-9", "1e300"])
def test_bad_collectd_interval_is_refused(value: str) -> None:
    with pytest.raises(ConfigError, match=r"^COLLECTD_INTERVAL"):
        load_config_text('[output]\nformat = "collectd"\n', "", env={"COLLECTD_INTERVAL": value})


def test_sample_config_documents_every_range() -> None:
    text = re.sub(r"\n *## ", " ", render_sample_config())  # the docs, unwrapped
    assert "Range: 10ms to 24h." in text and "Range: 1 to 64." in text
    keys = re.findall(r"Range: [^.]+\.(?: Example:)?\n *# (\w+) = ", text)
    bounded = [
        item.name
        for cls in (AgentConfig, *SECTIONS.values())
        for item in fields(cls)
        if item.metadata.get("kind") == "duration" or type(field_default(item)) is int
    ]
    assert sorted(keys) == sorted(bounded)

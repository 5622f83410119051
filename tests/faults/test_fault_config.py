"""Config validation (#11 item 10): every bad value is refused at start, once, in one place.

Each bad config file (or flag, or COLLECTD_INTERVAL) gives exit status 2, exactly one stderr line
`E! config: <file>: ... <key> ...`, nothing on stdout and no traceback: at start-up, before the
loop (the daemon is run without --once: no "started" line, no batch), and the same for --once
and `doctor`. Before the fix these were accepted and then crashed in the loop, spun in a busy
loop, hung on a FIFO, or went on with an E! every cycle: a daemon that does not end by itself
is stopped by the hang guard and fails, however long a refusal takes on a loaded machine.
"""

from __future__ import annotations

import math
import os
import subprocess
from pathlib import Path
from typing import Any, Optional, Union

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from diskprobe.config import SECTIONS, AgentConfig, ConfigError, load_config_text
from diskprobe.config.legacy import LEGACY_KEYS

from ci import HANG_GUARD_SEC
from faultlib import FakeHost, assert_no_traceback, run_diskprobe

BIG = "1" + "0" * 30  # a TOML integer far beyond 64 bits (tomllib takes it)

# (id, file content, key the message names); content "FIFO" makes a named pipe.
CASES: list[tuple[str, Union[str, bytes], Optional[str]]] = [
    ("interval-nan", "interval = nan\n", "'interval'"),
    ("interval-inf", "interval = inf\n", "'interval'"),
    ("interval-1e400", "interval = 1e400\n", "'interval'"),
    ("interval-huge-int", "interval = 1" + "0" * 400 + "\n", "'interval'"),
    ("interval-huge-string", 'interval = "99999999999999h"\n', "'interval'"),
    ("interval-1ns", 'interval = "1ns"\n', "'interval'"),
    ("io-interval-1ns", '[io]\ninterval = "1ns"\n', "[io]: 'interval'"),
    ("stat-timeout-2h", '[filesystems]\nstat_timeout = "2h"\n', "'stat_timeout'"),
    ("forecast-window-31d", '[filesystems]\nforecast_window = "744h"\n', "'forecast_window'"),
    ("smart-interval-8d", '[smart]\ninterval = "192h"\n', "[smart]: 'interval'"),
    ("smart-timeout-inf", "[smart]\ntimeout = inf\n", "[smart]: 'timeout'"),
    ("state-save-nan", "state_save_interval = nan\n", "'state_save_interval'"),
    ("concurrency-big", "[smart]\nconcurrency = 100000\n", "'concurrency'"),
    ("top-big", f"[process_io]\ntop = {BIG}\n", "'top'"),
    ("max-cgroups-big", f"[cgroup_io]\nmax_cgroups = {BIG}\n", "'max_cgroups'"),
    ("min-samples-big", f"[filesystems]\nforecast_min_samples = {BIG}\n", "'forecast_min_samples'"),
    ("spool-max-big", f"[output]\nspool_max_bytes = {BIG}\n", "'spool_max_bytes'"),
    ("drive-no-type", '[smart]\ndevices = ["/dev/sda -d"]\n', "'devices'"),
    ("drive-open-quote", "[smart]\ndevices = ['/dev/sda -d \"sat']\n", "'devices'"),
    ("drive-extra-option", '[smart]\ndevices = ["/dev/sda -d sat -x"]\n', "'devices'"),
    ("url-not-a-url", '[output]\nurl = "not a url"\n', "'url'"),
    ("url-ftp", '[output]\nurl = "ftp://influxdb:8086"\n', "'url'"),
    ("url-port", '[output]\nurl = "http://influxdb:99999"\n', "'url'"),
    ("state-file-nul", 'state_file = "/tmp/a\\u0000b"\n', "'state_file'"),
    ("spool-dir-empty", '[output]\nspool_dir = ""\n', "'spool_dir'"),
    ("textfile-no-path", '[output]\nkind = "textfile"\n', "path"),
    ("old-new-conflict", 'format = "collectd"\n[output]\nformat = "influx"\n', "'format'"),
    ("jobs-match-not-a-list", '[jobs]\nmatch = "train.py"\n', "[jobs]: 'match'"),
    ("jobs-match-numbers", "[jobs]\nmatch = [1, 2]\n", "[jobs]: 'match'"),
    ("jobs-enabled-string", '[jobs]\nenabled = "yes"\n', "[jobs]: 'enabled'"),
    ("jobs-bad-regex", '[jobs]\nmatch = ["train(.py"]\n', "[jobs] match: 'train(.py'"),
    ("jobs-regex-nul", '[jobs]\nmatch = ["a\\u0000b"]\n', "'match'"),
    ("jobs-glob-fs-path", '[jobs]\ncgroups = ["/sys/fs/cgroup/kubepods.slice/*"]\n',
     "[jobs] cgroups: '/sys/fs/cgroup/kubepods.slice/*' is a filesystem path"),
    ("jobs-glob-dotdot", '[jobs]\ncgroups = ["/kubepods.slice/../../etc"]\n',
     "must stay inside the cgroup tree"),
    ("jobs-glob-relative", '[jobs]\ncgroups = ["kubepods.slice/*"]\n', "must start with"),
    ("jobs-max-zero", "[jobs]\nmax_jobs = 0\n", "'max_jobs'"),
    ("jobs-sample-1ms", '[jobs]\nsample_interval = "1ms"\n', "'sample_interval'"),
    ("latency-unknown-op", '[latency]\nops = ["read", "trim"]\n', "[latency]: 'ops': 'trim'"),
    ("latency-bucket-0", '[latency]\nbuckets = ["0s"]\n', "[latency] buckets must be from 1us"),
    ("latency-bucket-2m", '[latency]\nbuckets = ["1ms", "2m"]\n', "must be from 1us to 60s"),
    ("latency-bucket-order", '[latency]\nbuckets = ["10ms", "1ms"]\n', "must be ascending"),
    ("latency-bucket-word", '[latency]\nbuckets = ["fast"]\n', "[latency] buckets"),
    ("latency-buckets-none", "[latency]\nbuckets = []\n", "must hold 1 to 40 bounds"),
    ("latency-buckets-many", "[latency]\nbuckets = [" + ", ".join(f'"{n}ms"' for n in
                                                               range(1, 50)) + "]\n",
     "must hold 1 to 40 bounds"),
    ("latency-top-0", "[latency]\ntop_processes = 0\n", "'top_processes'"),
    ("latency-keys-absurd", f"[latency]\nmax_keys = {BIG}\n", "'max_keys'"),
    ("latency-devices-0", "[latency]\nmax_devices = 0\n", "'max_devices'"),
    ("not-utf8", b'interval = "10s"\n# caf\xe9\n', None),
    ("binary", b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 8, None),
    ("nested-arrays", "a = " + "[" * 100_000, None),
    ("empty", "", None),
    ("too-big", "#" * 79 + "\n" + ("#" * 79 + "\n") * 16_384, None),
    ("fifo", "FIFO", None),
]


def _write(tmp_path: Path, content: Union[str, bytes]) -> Path:
    path = tmp_path / "bad.toml"
    if content == "FIFO":
        os.mkfifo(path)
    elif isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    return path


def _assert_refused(
    result: subprocess.CompletedProcess[str], prefix: str, key: Optional[str]
) -> None:
    assert_no_traceback(result.stderr)
    assert result.returncode == 2, result.stderr[-2000:]
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"E! config: {prefix}"), lines[:5]
    assert key is None or key in lines[0], lines[0]


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    try:
        return run_diskprobe(args, env, timeout=HANG_GUARD_SEC)
    except subprocess.TimeoutExpired as error:
        seen = error.stderr or b""  # what it wrote so far (bytes: not decoded on a timeout)
        text = seen.decode(errors="replace") if isinstance(seen, bytes) else seen
        pytest.fail(f"not refused: still running after {HANG_GUARD_SEC:g}s\n{text[-2000:]}")


@pytest.mark.parametrize(("content", "key"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_config_file_is_one_line_at_start(
    fake_host: FakeHost, tmp_path: Path, content: Union[str, bytes], key: Optional[str]
) -> None:
    path = _write(tmp_path, content)
    result = _run(["--config", str(path)], fake_host.env())  # the daemon, not --once
    _assert_refused(result, f"{path}: ", key)


@pytest.mark.parametrize("mode", [["--once"], ["doctor"]])
@pytest.mark.parametrize(
    "case", ["interval-nan", "interval-1ns", "drive-no-type", "url-not-a-url", "binary", "fifo"]
)
def test_once_and_doctor_refuse_the_same(
    fake_host: FakeHost, tmp_path: Path, mode: list[str], case: str
) -> None:
    _, content, key = next(c for c in CASES if c[0] == case)
    path = _write(tmp_path, content)
    result = _run([*mode, "--config", str(path)], fake_host.env())
    _assert_refused(result, f"{path}: ", key)


@pytest.mark.parametrize(
    ("args", "prefix"),
    [
        (["--interval", "1ns"], "--interval"),
        (["--interval", "99999999999999h"], "--interval"),
        (["--output", "influxdb", "--bucket", "b", "--url", "not a url"], "--url"),
    ],
    ids=["interval-1ns", "interval-huge", "url"],
)
def test_bad_flag_is_one_line_at_start(
    fake_host: FakeHost, tmp_path: Path, args: list[str], prefix: str
) -> None:
    env = {**fake_host.env(), "INFLUX_TOKEN": "t"}
    result = _run([*args, "--config", str(_state_only(tmp_path))], env)
    _assert_refused(result, prefix, None)


@pytest.mark.parametrize("value", ["0.000000001", "1e300"])
def test_bad_collectd_interval_is_one_line_at_start(
    fake_host: FakeHost, tmp_path: Path, value: str
) -> None:
    env = {**fake_host.env(), "COLLECTD_INTERVAL": value}
    args = ["--format", "collectd", "--config", str(_state_only(tmp_path))]
    result = _run(args, env)
    _assert_refused(result, "COLLECTD_INTERVAL", None)


def test_influxdb_cross_rule_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "d.toml"
    path.write_text('[output]\nkind = "influxdb"\nurl = "http://127.0.0.1:9"\n')
    result = _run(["--config", str(path)], {})
    _assert_refused(result, f"{path}: [output] kind", "bucket")


def _state_only(tmp_path: Path) -> Path:
    # Keeps a run of the old code (which accepted these) away from /var/lib/diskprobe.
    path = tmp_path / "state.toml"
    path.write_text(f'state_file = "{tmp_path / "state.json"}"\n[smart]\nenabled = false\n')
    return path


# -- fuzzing: nothing but ConfigError ever leaves load_config_text ----------------------------

_SCALARS = st.one_of(
    st.booleans(),
    st.integers(min_value=-(10**400), max_value=10**400),  # beyond a float: OverflowError
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
    st.sampled_from(["10s", "1ns", "99999999999999h", "http://h:1", "/dev/sda -d sat", ""]),
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=8,
)


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "nan" if math.isnan(value) else repr(value)  # "inf", "-inf", "1e+300"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return '"' + "".join(_char(c) for c in value) + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml(item) for item in value) + "]"
    return "{" + ", ".join(f"{_toml(k)} = {_toml(v)}" for k, v in value.items()) + "}"


def _char(char: str) -> str:
    return char if char.isprintable() and char not in '"\\' else f"\\U{ord(char):08x}"


_KEYS = (
    [("", name) for name in AgentConfig.__dataclass_fields__ if name not in SECTIONS]
    + [(section, name) for section, cls in SECTIONS.items() for name in cls.__dataclass_fields__]
    + [("", name) for name in LEGACY_KEYS]  # the deprecated top-level spellings, still read
)


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(_KEYS), _VALUES), max_size=6))
@example([(("", "interval"), 10**400)])  # OverflowError before the fix
@example([(("smart", "timeout"), math.nan), (("smart", "devices"), ["/dev/sda -d"])])
def test_random_values_for_every_key_raise_only_config_error(
    items: list[tuple[tuple[str, str], Any]],
) -> None:
    tables: dict[str, dict[str, Any]] = {}
    for (section, name), value in items:  # one table per section: duplicates are TOML errors
        tables.setdefault(section, {})[name] = value
    lines = [f"{name} = {_toml(value)}" for name, value in tables.pop("", {}).items()]
    for section, table in tables.items():
        lines += [f"[{section}]", *(f"{name} = {_toml(value)}" for name, value in table.items())]
    _load_or_config_error("\n".join(lines) + "\n")


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.sampled_from(["[", "]", "{", "}", "=", '"', "'", "\n", ",", ".", " ", "#", "\\"])
        | st.sampled_from(["interval", "smart", "devices", "nan", "inf", "1e400", "[[io]]"])
        | st.sampled_from(["a = " + "[" * 2000, "1" + "0" * 400, "a = " + "{b = " * 2000])
        | st.text(max_size=5),
        max_size=40,
    ).map("".join)
)
@example("a = " + "[" * 100_000)  # RecursionError in tomllib before the fix
def test_random_toml_ish_text_raises_only_config_error(text: str) -> None:
    _load_or_config_error(text)


def _load_or_config_error(text: str) -> None:
    try:
        load_config_text(text, "fuzz.toml")
    except ConfigError as error:
        assert "\n" not in str(error)

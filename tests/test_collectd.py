"""collectd output: the PUTVAL serializer on synthetic metrics, and the real collectd.

The real test (root, slow) runs Debian's collectd-core in the foreground with the shipped
telegraf/collectd/diskprobe.conf: its exec plugin runs diskprobe as `nobody` from a venv built
with Debian's /usr/bin/python3 under a 0755 temp dir (the repo is copied there, so it need not
be readable by nobody and pip never builds inside it), the csv plugin writes every value; the
files must hold what a direct `diskprobe --once` run reports.
"""

from __future__ import annotations

import grp
import math
import os
import pwd
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from diskprobe import cli
from diskprobe.metric import FieldValue, Metric
from diskprobe.schema import MEASUREMENTS, FieldSpec, measurement
from diskprobe.serializers import make_serializer
from diskprobe.serializers.collectd import (
    INSTANCE_TAGS,
    SKIPPED,
    CollectdSerializer,
    collectd_type,
    escape_path,
    plugin_instance,
    render_mapping,
)

from ci import skip_or_fail
from lineproto import parse_lines

ROOT = Path(__file__).resolve().parent.parent
COLLECTD_DIR = ROOT / "telegraf" / "collectd"
TYPES_DB = Path("/usr/share/collectd/types.db")
APT_PACKAGES = ("collectd-core", "python3-venv")
T0 = 1_700_000_000_123_456_789  # 1700000000.123 s
PUTVAL = re.compile(r'^PUTVAL "([^"]*)" interval=([0-9.]+) (\d+\.\d{3}):(\S+)$')
# The standard types diskprobe may use: each one GAUGE data source in types.db.
EXPECTED_TYPES = {
    "gauge", "bool", "percent", "bytes", "operations_per_second", "latency", "duration",
    "temperature", "queue_length", "count",
}  # fmt: skip


def _lines(metrics: list[Metric], host: str = "h", interval: float = 10.0) -> list[str]:
    return CollectdSerializer(host, interval).serialize(metrics).splitlines()


def _parse(line: str) -> tuple[dict[str, str], float, float, float]:
    """A PUTVAL line split as collectd's parse_identifier does; (identifier, interval, t, v)."""
    match = PUTVAL.match(line)
    assert match, line
    host, plugin, type_part = match.group(1).split("/")
    plugin_name, _, instance = plugin.partition("-")
    type_name, _, type_instance = type_part.partition("-")
    ident = {"host": host, "plugin": plugin_name, "instance": instance, "type": type_name}
    ident["type_instance"] = type_instance
    return ident, float(match.group(2)), float(match.group(3)), float(match.group(4))


def _unescape(text: str) -> str:
    raw, i = bytearray(), 0
    while i < len(text):
        if text[i] == "%":
            raw.append(int(text[i + 1 : i + 3], 16))
            i += 3
        else:
            raw += text[i].encode()
            i += 1
    return raw.decode("utf-8", "surrogatepass")


def _decode_instance(instance: str) -> tuple[str, list[str]]:
    """The inverse of plugin_instance, as documented: proves the mapping is one-to-one."""
    short, _, rest = instance.partition("-")
    name = "diskprobe_" + short
    tags = INSTANCE_TAGS[name]
    if tags == ("path",):
        path = "/" if rest == "root" else "/" + "/".join(map(_unescape, rest.split("-")))
        return name, [path]
    return name, [_unescape(part) for part in rest.rsplit("-", len(tags) - 1)]


def _sample(field: FieldSpec) -> FieldValue:
    samples: dict[str, FieldValue] = {"float": 1.5, "int": 7, "bool": True, "str": "text"}
    return samples[field.type]


# --- the serializer on synthetic metrics -------------------------------------------------


def test_putval_line_is_collectd_exec_format() -> None:
    metric = Metric("diskprobe_io", {"device": "sda", "model": "X 1"}, {"reads_per_sec": 2.5}, T0)
    assert _lines([metric], host="web1") == [
        'PUTVAL "web1/diskprobe-io-sda/operations_per_second-reads_per_sec" interval=10 '
        "1700000000.123:2.5"
    ]


def test_values_bools_ints_and_what_is_never_written() -> None:
    fields: dict[str, FieldValue] = {
        "responsive": False,
        "total_bytes": 2**62 + 1,
        "fill_rate_bytes_per_sec": -12.25,
        "used_percent": float("nan"),
        "time_to_full_sec": float("inf"),
    }
    lines = _lines([Metric("diskprobe_fs", {"path": "/"}, fields, T0)])
    written = [(_parse(line)[0]["type"], _parse(line)[0]["type_instance"]) for line in lines]
    assert written == [
        ("bool", "responsive"), ("bytes", "total_bytes"), ("gauge", "fill_rate_bytes_per_sec")
    ]  # fmt: skip
    assert [line.rsplit(":", 1)[1] for line in lines] == ["0", str(2**62 + 1), "-12.25"]
    assert not any(re.search(r":(U|nan|inf)", line) for line in lines)


def test_verdict_travels_as_verdict_code_and_other_text_is_skipped() -> None:
    fields: dict[str, FieldValue] = {
        "verdict": "warn",
        "verdict_code": 1,
        "verdict_reasons": "pending_sectors=1",
        "firmware": "1.0",
        "health_ok": True,
    }
    lines = _lines([Metric("diskprobe_smart", {"device": "sda", "serial": "S1"}, fields, T0)])
    assert [_parse(line)[0]["type_instance"] for line in lines] == ["verdict_code", "health_ok"]
    assert lines[0].endswith(":1") and _parse(lines[1])[0]["type"] == "bool"


def test_host_and_interval_come_from_collectd_environment() -> None:
    env = {"COLLECTD_HOSTNAME": 'we"b', "COLLECTD_INTERVAL": "2.500"}
    serializer = make_serializer("collectd", env, interval=1.0)  # --once samples 1 s apart
    line = serializer.serialize([Metric("diskprobe_agent", {"collector": "io"}, {"items": 3}, T0)])
    assert line == (
        'PUTVAL "we\\"b/diskprobe-agent-io/count-items" interval=2.5 1700000000.123:3\n'
    )
    own = make_serializer("collectd", {"COLLECTD_INTERVAL": "bogus"}, interval=30.0)
    assert isinstance(own, CollectdSerializer) and own.interval == 30.0
    assert own.host  # this machine's name when collectd did not give one


def test_a_slow_series_carries_the_gap_since_its_previous_value() -> None:
    serializer = CollectdSerializer("h", 10.0)

    def interval(time_ns: int, device: str = "sda") -> float:
        batch = [Metric("diskprobe_smart", {"device": device}, {"temperature_c": 40}, time_ns)]
        return _parse(serializer.serialize(batch))[1]

    assert interval(T0) == 10.0  # nothing known yet
    assert interval(T0 + 1800 * 10**9) == 1800.0
    assert interval(T0 + 1810_004_000_000) == 10.0  # on time again
    assert interval(T0 + 1800 * 10**9, device="sdb") == 10.0


@pytest.mark.parametrize(
    ("name", "tags", "instance"),
    [
        ("diskprobe_io", {"device": "sda"}, "io-sda"),
        ("diskprobe_io", {"device": "dm-0", "dm_name": "vg-root"}, "io-dm-0"),
        ("diskprobe_io", {"device": "cciss/c0d0"}, "io-cciss%2Fc0d0"),
        ("diskprobe_fs", {"path": "/", "device": "vda1"}, "fs-root"),
        ("diskprobe_fs", {"path": "/root"}, "fs-%72oot"),
        ("diskprobe_fs", {"path": "/var/lib/docker"}, "fs-var-lib-docker"),
        ("diskprobe_fs", {"path": "/mnt/data-1"}, "fs-mnt-data%2D1"),
        ("diskprobe_fs", {"path": "/mnt/my disk/ü"}, "fs-mnt-my%20disk-%C3%BC"),
        ("diskprobe_smart", {"device": "bus0-megaraid5"}, "smart-bus0-megaraid5"),
        ("diskprobe_smart_attr", {"device": "sda-megaraid0", "id": "5"}, "smart_attr-sda-megaraid0-5"),  # noqa: E501
        ("diskprobe_agent", {"collector": "filesystems", "version": "0.1"}, "agent-filesystems"),
    ],
)  # fmt: skip
def test_plugin_instance(name: str, tags: dict[str, str], instance: str) -> None:
    assert plugin_instance(name, tags) == instance
    spec = measurement(name)
    assert _decode_instance(instance) == (name, [tags[t] for t in INSTANCE_TAGS[spec.name]])


@settings(max_examples=300, deadline=None)
@given(path=st.text(max_size=60).map(lambda text: "/" + text))
def test_mount_paths_map_one_to_one(path: str) -> None:
    name = escape_path(path)
    assert re.fullmatch(r"[A-Za-z0-9_.%-]*", name), name
    assert _decode_instance("fs-" + name) == ("diskprobe_fs", [path])


@settings(max_examples=300, deadline=None)
@given(device=st.text(max_size=40), attribute=st.text(max_size=10))
def test_tag_values_map_one_to_one(device: str, attribute: str) -> None:
    instance = plugin_instance("diskprobe_smart_attr", {"device": device, "id": attribute})
    assert re.fullmatch(r"[A-Za-z0-9_.%~-]{1,127}", instance), instance
    if "~" not in instance:
        assert _decode_instance(instance) == ("diskprobe_smart_attr", [device, attribute])


def test_odd_bytes_stay_distinct() -> None:
    """A byte that is not UTF-8 (decoded with surrogateescape) never collides with a real
    character: b"\\xff" is %FF, "ÿ" (U+00FF, two bytes in UTF-8) %C3%BF. Names are bytes: two
    strings of the same bytes are one name, whichever way they were decoded (issue #25)."""
    assert escape_path("/\udcff") == "%FF" and escape_path("/ÿ") == "%C3%BF"
    assert escape_path(os.fsdecode(b"/\xff\xc3\xa9")) == "%FF%C3%A9"
    assert escape_path("/\udcc3\udca9") == escape_path("/é")  # the bytes of "é", twice


def test_names_collectd_would_refuse_are_shortened_and_stay_distinct() -> None:
    base = "/srv/" + "k" * 200
    first, second = (plugin_instance("diskprobe_fs", {"path": base + end}) for end in "ab")
    assert len(first) == len(second) == 127 and first != second
    assert first.startswith("fs-srv-kkk") and re.fullmatch(r".*~[0-9a-f]{16}", first)


def test_every_schema_field_is_mapped_or_listed_as_skipped() -> None:
    assert set(INSTANCE_TAGS) == {spec.name for spec in MEASUREMENTS}
    for spec in MEASUREMENTS:
        assert set(INSTANCE_TAGS[spec.name]) <= {tag.name for tag in spec.tags}
        for field in spec.fields:
            kind = collectd_type(field)
            if field.type == "str":
                assert kind is None and (spec.name, field.name) in SKIPPED, field.name
            else:
                assert kind in EXPECTED_TYPES, (spec.name, field.name, kind)
    for name, field_name in SKIPPED:
        spec_field = measurement(name).field(field_name)
        assert spec_field is not None and spec_field.type == "str", (name, field_name)
    assert "verdict_code" in SKIPPED[("diskprobe_smart", "verdict")]
    assert _kind("diskprobe_smart", "verdict_code") == "gauge"  # the verdict, as a number


def test_serializer_writes_exactly_the_mapped_fields() -> None:
    for spec in MEASUREMENTS:
        tags = {tag.name: f"x{i}" for i, tag in enumerate(spec.tags)}
        fields = {field.name: _sample(field) for field in spec.fields}
        lines = _lines([Metric(spec.name, tags, fields, T0)])
        written = {_parse(line)[0]["type_instance"]: _parse(line)[0] for line in lines}
        expected = {f.name: collectd_type(f) for f in spec.fields if collectd_type(f)}
        assert {name: ident["type"] for name, ident in written.items()} == expected
        assert {ident["instance"] for ident in written.values()} == {
            plugin_instance(spec.name, tags)
        }


def _types_db() -> dict[str, list[str]]:
    if not TYPES_DB.exists():
        skip_or_fail(f"{TYPES_DB} missing: install {' '.join(APT_PACKAGES[:1])}")
    types: dict[str, list[str]] = {}
    for line in TYPES_DB.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, sources = line.split(None, 1)
            types[name] = [source.strip() for source in sources.split(",")]
    return types


def test_every_type_used_is_a_single_gauge_in_collectds_types_db() -> None:
    types = _types_db()
    for kind in EXPECTED_TYPES:
        assert len(types[kind]) == 1 and types[kind][0].split(":")[1] == "GAUGE", kind
    # Ranges: values that can be negative or exceed 100 must not land in a type that forbids it.
    assert types["gauge"][0] == "value:GAUGE:U:U" and types["percent"][0].endswith(":0:100.1")


def test_collectd_readme_holds_the_generated_mapping() -> None:
    text = (COLLECTD_DIR / "README.md").read_text()
    block = r"<!-- collectd-mapping:start -->\n(.*?)<!-- collectd-mapping:end -->"
    match = re.search(block, text, re.S)
    assert match, "telegraf/collectd/README.md has no collectd-mapping block"
    assert match.group(1) == render_mapping(), (
        "regenerate: python -c 'from diskprobe.serializers.collectd import render_mapping; "
        'print(render_mapping(), end="")\''
    )


def test_shipped_exec_block_runs_diskprobe_unprivileged() -> None:
    conf = (COLLECTD_DIR / "diskprobe.conf").read_text()
    execs = re.findall(r'^\s*Exec\s+"([^"]+)"\s+(.*)$', conf, re.M)
    assert execs, "no active Exec line"
    user, args = execs[0]
    assert user.split(":")[0] not in ("root", "0")  # collectd refuses root
    assert args == '"/opt/diskprobe/bin/diskprobe" "--format" "collectd"'
    smart = f'# Exec "{user}" {args} "--config" "/etc/diskprobe/diskprobe.toml"'
    assert smart in conf  # the SMART-through-sudo variant, same command plus the config
    assert re.search(r"^LoadPlugin exec$", conf, re.M)


# --- the command line under collectd -----------------------------------------------------


def _config(argv: list[str], env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Any:
    for key in ("COLLECTD_INTERVAL", "COLLECTD_HOSTNAME"):
        monkeypatch.delenv(key, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return cli._load(cli.build_parser().parse_args(argv))


def test_loop_interval_follows_collectd_unless_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = {"COLLECTD_INTERVAL": "2.500"}
    assert _config(["--format", "collectd"], env, monkeypatch).interval == 2.5
    assert _config(["--format", "collectd"], {}, monkeypatch).interval == 10.0
    assert _config([], env, monkeypatch).interval == 10.0  # influx: collectd is not the host
    assert _config(["--format", "collectd", "--interval", "30s"], env, monkeypatch).interval == 30
    assert _config(["--format", "collectd", "--once"], env, monkeypatch).interval == 1.0
    config = tmp_path / "d.toml"
    config.write_text('interval = "1m"\n[output]\nformat = "collectd"\n')
    assert _config(["--config", str(config)], env, monkeypatch).interval == 60.0
    config.write_text('[output]\nformat = "collectd"\n')
    assert _config(["--config", str(config)], env, monkeypatch).interval == 2.5


@pytest.mark.slow
def test_stdin_at_eof_as_collectd_gives_it_does_not_stop_diskprobe(tmp_path: Path) -> None:
    """collectd's exec hands its children a pipe whose write end is already closed."""
    config = tmp_path / "d.toml"
    config.write_text(f'state_file = "{tmp_path}/state.json"\n[smart]\n  enabled = false\n')
    env = {**os.environ, "COLLECTD_INTERVAL": "1.000", "COLLECTD_HOSTNAME": "t"}
    argv = [sys.executable, "-m", "diskprobe", "--format", "collectd", "--config", str(config)]
    process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
    assert process.stdin is not None and process.stdout is not None
    process.stdin.close()
    try:
        batches = 0
        while batches < 3:  # one agent-io line per batch, a batch every COLLECTD_INTERVAL
            line = process.stdout.readline().decode()
            assert line, "diskprobe stopped at stdin EOF under --format collectd"
            ident, interval, _, _ = _parse(line.rstrip("\n"))
            batches += ident["instance"] == "agent-io" and ident["type_instance"] == "items"
            assert interval == 1.0
        assert process.poll() is None
        process.send_signal(signal.SIGTERM)  # what collectd sends at shutdown
        assert process.wait(timeout=10) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


# --- the real collectd --------------------------------------------------------------------


def _run(argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=600, **kwargs)


def _require_collectd() -> None:
    if os.geteuid() != 0:
        skip_or_fail("needs root: collectd's exec switches to an unprivileged user")
    if shutil.which("collectd") is None:
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        install = ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *APT_PACKAGES]
        if _run(install, env=env).returncode != 0:
            _run(["apt-get", "update", "-qq"], env=env)
            _run(install, env=env)
    needed = ("/usr/sbin/collectd", "/usr/lib/collectd/exec.so", "/usr/lib/collectd/csv.so")
    missing = [path for path in needed if not Path(path).exists()]
    if missing or _run(["/usr/bin/python3", "-c", "import venv, ensurepip"]).returncode:
        packages = " ".join(APT_PACKAGES)
        skip_or_fail(f"collectd or python3-venv missing and not installable (apt: {packages})")


def _csv_rows(path: Path) -> list[tuple[float, float]]:
    lines = path.read_text().splitlines()[1:]
    return [(float(t), float(v)) for t, v in (line.split(",") for line in lines)]


def _csv(csv_root: Path, instance: str, kind: str, field: str) -> list[tuple[float, float]]:
    files = sorted(csv_root.glob(f"diskprobe-{instance}/{kind}-{field}-*"))
    return [row for file in files for row in _csv_rows(file)]


def _children(parent: int) -> list[int]:
    pids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == parent:
            pids.append(int(stat.parent.name))
    return pids


def _collectd_conf(work: Path, user: str, group: str) -> Path:
    shipped = (COLLECTD_DIR / "diskprobe.conf").read_text()
    command = '"/opt/diskprobe/bin/diskprobe" "--format" "collectd"'
    assert '"diskprobe:diskprobe"' in shipped and command in shipped
    block = shipped.replace('"diskprobe:diskprobe"', f'"{user}:{group}"').replace(
        command, f'"{work}/venv/bin/diskprobe" "--format" "collectd" "--config" "{work}/dp.toml"'
    )
    conf = work / "collectd.conf"
    conf.write_text(
        f'Hostname "diskprobe-test"\nFQDNLookup false\nInterval 2\nBaseDir "{work}/base"\n'
        f'PIDFile "{work}/base/collectd.pid"\nTypesDB "{TYPES_DB}"\n'
        f'LoadPlugin logfile\n<Plugin logfile>\n  LogLevel info\n  File "{work}/collectd.log"\n'
        f'</Plugin>\nLoadPlugin csv\n<Plugin csv>\n  DataDir "{work}/csv"\n  StoreRates false\n'
        f"</Plugin>\n{block}"
    )
    return conf


def _build_venv(work: Path) -> Path:
    """Debian's python3, a venv in a 0755 dir, diskprobe installed from a copy of the repo."""
    source = work / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    shutil.copytree(ROOT / "plugin", source / "plugin", ignore=ignore)
    result = _run(["/usr/bin/python3", "-m", "venv", str(work / "venv")])
    assert result.returncode == 0, result.stderr
    result = _run([str(work / "venv" / "bin" / "pip"), "install", "-q", str(source)])
    assert result.returncode == 0, result.stderr[-3000:]
    return work / "venv" / "bin" / "diskprobe"


def _kind(name: str, field: str) -> str:
    spec = measurement(name).field(field)
    assert spec is not None
    return str(collectd_type(spec))


@pytest.mark.root
@pytest.mark.slow
def test_real_collectd_exec_writes_what_diskprobe_once_reports() -> None:
    _require_collectd()
    account = pwd.getpwnam("nobody")
    group = grp.getgrgid(account.pw_gid).gr_name
    nobody: dict[str, Any] = {"user": account.pw_uid, "group": account.pw_gid, "extra_groups": []}
    work = Path(tempfile.mkdtemp(prefix="diskprobe-collectd-"))
    work.chmod(0o755)  # mkdtemp makes it 0700: nobody could not reach the venv
    csv_root = work / "csv" / "diskprobe-test"
    collectd: subprocess.Popen[bytes] | None = None
    child = 0
    try:
        diskprobe = _build_venv(work)
        (work / "state").mkdir()
        os.chown(work / "state", account.pw_uid, account.pw_gid)
        (work / "dp.toml").write_text(
            f'state_file = "{work}/state/state.json"\n[io]\n  counters = true\n'
            "[smart]\n  enabled = false\n"
            # Other tests' scratch mounts (under root's 0700 tmp dirs, in a parallel run) are
            # no statfs for nobody: errors that would be counted, and that are not this test's.
            '[filesystems]\n  ignore_mount_points = ["/tmp/*"]\n'
        )
        _run(["chmod", "-R", "a+rX", str(work)])  # whatever root's umask was
        result = _run([str(diskprobe), "--version"], **nobody)
        assert result.returncode == 0, f"nobody cannot run the venv: {result.stderr}"

        conf = _collectd_conf(work, account.pw_name, group)
        collectd = subprocess.Popen(
            ["collectd", "-f", "-C", str(conf)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        watched = [("fs-root", "bytes", "total_bytes"), ("agent-io", "count", "items")]
        deadline = time.monotonic() + 40
        while time.monotonic() < deadline and collectd.poll() is None:
            child = child or next(iter(_children(collectd.pid)), 0)
            if all(len(_csv(csv_root, *w)) >= 3 for w in watched):
                break
            time.sleep(0.5)
        log_file = work / "collectd.log"
        log = log_file.read_text() if log_file.exists() else ""
        assert collectd.poll() is None, f"collectd exited early:\n{log}"
        assert all(len(_csv(csv_root, *w)) >= 3 for w in watched), f"no values in 40 s:\n{log}"
        # collectd's exec gives its child a pipe already at EOF as stdin; diskprobe, as nobody,
        # must have kept running in that one process through all three batches.
        assert child and os.readlink(f"/proc/{child}/fd/0").startswith("pipe:"), child
        assert Path(f"/proc/{child}").stat().st_uid == account.pw_uid
        assert _children(collectd.pid) == [child], "diskprobe was restarted"
        for bad in ("Identifier too long", "Unable to parse", "Value too old", "Traceback"):
            assert bad not in log, log
        assert "error = E! " not in log, log  # diskprobe's own errors, on stderr

        collectd.send_signal(signal.SIGTERM)
        collectd.wait(timeout=30)
        for _ in range(50):  # collectd sends its children SIGTERM as it shuts down
            if not Path(f"/proc/{child}").exists():
                break
            time.sleep(0.1)
        assert not Path(f"/proc/{child}").exists(), "diskprobe outlived collectd's SIGTERM"

        once = _run([str(diskprobe), "--once", "--config", str(work / "dp.toml")], **nobody)
        assert once.returncode == 0, once.stderr
        _compare(csv_root, parse_lines(once.stdout))
    finally:
        if collectd is not None and collectd.poll() is None:
            collectd.kill()
            collectd.wait()
        if child and "diskprobe" in _cmdline(child):
            os.kill(child, signal.SIGKILL)
        shutil.rmtree(work, ignore_errors=True)


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return ""


def _compare(csv_root: Path, points: list[Any]) -> None:
    """The last csv values against the direct run a few seconds later, point by point."""
    fs = [p for p in points if p.measurement == "diskprobe_fs" and p.fields.get("responsive")]
    disks = [p for p in points if p.measurement == "diskprobe_io"]
    assert fs and disks, points
    found = {path.name for path in csv_root.iterdir()}
    for point in fs + disks:
        assert f"diskprobe-{plugin_instance(point.measurement, point.tags)}" in found, point.tags
    for point in fs:
        instance = plugin_instance(point.measurement, point.tags)
        last = {
            field: _csv(csv_root, instance, _kind("diskprobe_fs", field), field)[-1][1]
            for field in point.fields
        }
        total = point.fields["total_bytes"]
        assert last["total_bytes"] == total and last["responsive"] == 1.0, point.tags
        assert last["inodes_total"] == point.fields["inodes_total"], point.tags
        assert abs(last["used_bytes"] - point.fields["used_bytes"]) <= max(0.01 * total, 2**28)
        assert abs(last["used_percent"] - point.fields["used_percent"]) <= 1.0
    for point in disks:
        instance = plugin_instance(point.measurement, point.tags)
        intervals = _csv(csv_root, instance, "duration", "interval_sec")
        assert len(intervals) >= 3 and abs(intervals[-1][1] - 2.0) <= 0.5, intervals  # Interval 2
        for field, slack in (("reads", 10**5), ("writes", 10**5), ("read_bytes", 2**30)):
            rows = _csv(csv_root, instance, _kind("diskprobe_io", field), field)
            value = point.fields[field]  # read a few seconds later: same counter, a bit further
            assert rows and 0 <= rows[-1][1] <= value <= rows[-1][1] * 1.05 + slack, field
        util = _csv(csv_root, instance, "gauge", "util_percent")
        assert util and all(0 <= v <= 101 and math.isfinite(v) for _, v in util), util
    for collector in ("io", "filesystems"):
        errors = _csv(csv_root, f"agent-{collector}", "count", "errors")
        assert errors and all(value == 0 for _, value in errors), collector

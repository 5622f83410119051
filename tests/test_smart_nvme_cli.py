"""NVMe health through nvme-cli: `nvme smart-log -o json` of nvme-cli 2.3 and 2.11 (corpus
captures in tests/fixtures/nvme-cli, see PROVENANCE.tsv), identity and discovery from a fake
sysfs, and the smart collector end to end with a fake `nvme` (a real process,
tests/fake_nvme/nvme) and no smartctl."""

from __future__ import annotations

import collections
import io
import json
from pathlib import Path
from typing import Any

import pytest

from diskprobe.collectors.base import Clock, CollectorContext
from diskprobe.collectors.registry import build_collectors
from diskprobe.collectors.smart import SmartCollector
from diskprobe.config import (
    AgentConfig,
    CgroupIoConfig,
    FilesystemsConfig,
    IoConfig,
    PressureConfig,
    ProcessIoConfig,
    SmartConfig,
)
from diskprobe.log import Logger
from diskprobe.metric import Metric
from diskprobe.roots import HostRoots
from diskprobe.smart.devices import DriveSpec
from diskprobe.smart.json_protocols import NVME_COUNTERS
from diskprobe.smart.nvme_cli import (
    Identity,
    controller_of,
    discover,
    is_nvme,
    read_identity,
    read_nvme_cli,
)
from diskprobe.smart.nvme_smart_log import (
    NotSmartLog,
    critical_warning,
    number,
    parse_smart_log,
    sensor_temperatures,
)
from diskprobe.smart.runner import CommandRunner
from diskprobe.state import StateStore

from ci import guarded
from helpers import FIXTURES, FakeClock, assert_schema

NVME_FIXTURES = FIXTURES / "nvme-cli"
FAKE_NVME = Path(__file__).parent / "fake_nvme" / "nvme"

# Hand-checked against the captures: kelvin - 273 (as smartctl converts), data units x 512,000.
V2_3 = {
    "temperature_c": 37,  # 310 K
    "power_on_hours": 4974,
    "power_cycles": 64,
    "counters": {
        "critical_warning": 0,
        "available_spare_percent": 100,
        "available_spare_threshold_percent": 5,
        "percentage_used": 2,
        "host_read_commands": 313_528_805,
        "host_write_commands": 1_928_062_610,
        "controller_busy_minutes": 8284,
        "unsafe_shutdowns": 39,
        "media_errors": 0,
        "error_log_entries": 110,
        "warning_temp_minutes": 0,
        "critical_temp_minutes": 0,
        "data_read_bytes": 5_068_041_216_000,  # 9,898,518 units
        "data_written_bytes": 69_712_734_208_000,  # 136,157,684 units
    },
}
V2_11 = {
    "temperature_c": 51,  # 324 K
    "power_on_hours": 24424,
    "power_cycles": 99,
    "counters": {
        "critical_warning": 0,  # the object's "value"
        "available_spare_percent": 100,
        "available_spare_threshold_percent": 5,
        "percentage_used": 30,
        "host_read_commands": 5_808_178_366,
        "host_write_commands": 24_273_507_789,
        "controller_busy_minutes": 69549,
        "unsafe_shutdowns": 49,
        "media_errors": 0,
        "error_log_entries": 212,
        "warning_temp_minutes": 0,
        "critical_temp_minutes": 0,
        "data_read_bytes": 91_155_062_272_000,  # 178,037,231 units
        "data_written_bytes": 987_485_941_760_000,  # 1,928,683,480 units
    },
}
EXPECTED = {
    "smart-log-v2.3.json": V2_3,
    "smart-log-v2.3-float.json": V2_3,  # 310.0, 9898518.0, ...
    "smart-log-v2.3-string.json": V2_3,  # "310", "9898518", ...
    "smart-log-v2.11.json": V2_11,
}
SAMSUNG_MODEL = "Samsung SSD 980 PRO 1TB"


def fixture_text(name: str) -> str:
    return (NVME_FIXTURES / name).read_text()


def smart_log(name: str, **changes: Any) -> str:
    data = json.loads(fixture_text(name))
    data.update(changes)
    return json.dumps(data)


# -- parsing ----------------------------------------------------------------------------------


def test_every_corpus_smart_log_is_checked_and_has_provenance() -> None:
    assert sorted(path.name for path in NVME_FIXTURES.glob("smart-log*.json")) == sorted(EXPECTED)
    provenance = (NVME_FIXTURES / "PROVENANCE.tsv").read_text().splitlines()
    listed = {line.split("\t")[0] for line in provenance[1:]}
    on_disk = {f"nvme-cli/{p.name}" for p in NVME_FIXTURES.iterdir() if p.name != "PROVENANCE.tsv"}
    assert listed == on_disk


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_smart_log_parses_to_the_hand_checked_values(name: str) -> None:
    expected = EXPECTED[name]
    health = parse_smart_log(fixture_text(name), "nvme0")
    assert health.counters == expected["counters"]
    assert all(type(value) is int for value in health.counters.values())
    assert health.temperature_c == expected["temperature_c"]
    assert health.power_on_hours == expected["power_on_hours"]
    assert health.power_cycles == expected["power_cycles"]
    assert (health.device, health.protocol, health.media) == ("nvme0", "nvme", "nvme")
    assert health.source == "nvme-cli"
    assert health.health_ok is True
    assert health.exit_status == 0
    assert health.power_mode == "active"


def test_counter_names_are_the_smartctl_json_paths() -> None:
    health = parse_smart_log(fixture_text("smart-log-v2.11.json"), "nvme0")
    names = set(NVME_COUNTERS.values()) | {"data_read_bytes", "data_written_bytes"}
    assert set(health.counters) == names


@pytest.mark.parametrize(
    ("value", "bitmask"),
    [
        (0, 0),
        (4, 4),
        ("16", 16),
        ("0x10", 16),
        (2.0, 2),
        ({"value": 0, "available_spare": 0, "temp_threshold": 0, "reliability_degraded": 0}, 0),
        ({"value": 4, "available_spare": 0, "reliability_degraded": 1}, 4),
        ({"Value": 2, "temp_threshold": 1}, 2),  # nvme-cli releases that capitalised it
        ({"value": 4}, 4),
        ({"value": 128, "available_spare": 0}, 128),  # a bit nvme-cli has no name for
        ({"available_spare": True, "ro": True}, 1 | 8),  # per-bit flags only
        ({"temp_threshold": 1, "vmbu_failed": 1, "pmr_ro": 1}, 2 | 16 | 32),
        ({"available_spare": False, "temp_threshold": 0}, 0),
        ({}, None),
        (None, None),
        ("n/a", None),
    ],
)
def test_critical_warning_int_object_or_bits(value: Any, bitmask: int | None) -> None:
    assert critical_warning(value) == bitmask


def test_critical_warning_sets_health_and_fails_the_read() -> None:
    warning = {"value": 4, "reliability_degraded": 1}
    text = smart_log("smart-log-v2.11.json", critical_warning=warning)
    health = parse_smart_log(text, "nvme0")
    assert health.counters["critical_warning"] == 4
    assert health.health_ok is False
    no_warning = smart_log("smart-log-v2.11.json", critical_warning=None)
    health = parse_smart_log(no_warning, "nvme0")
    assert "critical_warning" not in health.counters
    assert health.health_ok is None  # the drive did not say


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (310, 310),
        (310.0, 310),
        ("310", 310),
        (" 9898518 ", 9_898_518),
        ("9898518.000000", 9_898_518),  # nvme-cli 1.x long double, "%Lf"
        ("1,234,567", 1_234_567),
        ("1.2e+10", 12_000_000_000),
        ("340282366920938463463374607431768211455", 2**128 - 1),  # exact, past 2**53
        ("0x1f", 31),
        (True, 1),
        ("NaN", None),
        (float("inf"), None),
        ("1e999999999", None),  # must not try to build that integer
        ("n/a", None),
        ("", None),
        (None, None),
        ([1], None),
    ],
)
def test_number_accepts_what_nvme_cli_prints(value: Any, expected: int | None) -> None:
    assert number(value) == expected


def test_float_and_exponent_literals_keep_their_digits() -> None:
    text = (
        '{"critical_warning": 0, "data_units_read": 1.2e10, '
        '"host_read_commands": 9007199254740993.0}'
    )
    health = parse_smart_log(text, "nvme0")
    assert health.counters["data_read_bytes"] == 12_000_000_000 * 512_000
    assert health.counters["host_read_commands"] == 9_007_199_254_740_993  # 2**53 + 1, not 2**53


def test_capitalised_keys_and_temperature_sensors_in_kelvin() -> None:
    text = json.dumps({"Critical_Warning": 0, "Temperature": 300, "temperature_sensor_1": 305,
                       "temperature_sensor_2": 0, "temperature_sensor_3": "318"})  # fmt: skip
    health = parse_smart_log(text, "nvme0")
    assert health.temperature_c == 27
    assert health.counters["critical_warning"] == 0
    log = json.loads(text.lower())
    assert sensor_temperatures(log) == {1: 32, 3: 45}  # sensor 2 reads 0 K: not implemented


def test_sensors_stand_in_for_a_missing_composite_temperature() -> None:
    text = smart_log("smart-log-v2.3.json", temperature=0, temperature_sensor_1=305,
                     temperature_sensor_2=330)  # fmt: skip
    assert parse_smart_log(text, "nvme0").temperature_c == 57
    no_temperature = smart_log("smart-log-v2.3.json", temperature=0)
    assert parse_smart_log(no_temperature, "nvme0").temperature_c is None


@pytest.mark.parametrize(
    "text",
    [
        "",
        "  \n",
        "null",
        "[1, 2]",
        "{}",
        '{"Devices": []}',  # `nvme list -o json` with no drives, not a smart log
        fixture_text("id-ctrl-intel-ssdped.txt"),  # text, with a stray "<<<<<<< HEAD" line
        fixture_text("intel-smart-log-add.txt"),
        fixture_text("smart-log-v2.11.json")[:100],  # cut short
        "[" * 100_000,
        "\ufffd\x00\x01garbage",
    ],
)
def test_anything_but_a_smart_log_raises_not_smart_log(text: str) -> None:
    with pytest.raises(NotSmartLog):
        parse_smart_log(text, "nvme0")


# -- sysfs ------------------------------------------------------------------------------------


def add_controller(
    sys_root: Path,
    name: str,
    model: str = "",
    serial: str = "",
    firmware: str = "",
    namespaces: dict[str, int] | None = None,
    hwmon: str = "",  # "hwmon3/temp1_max=84850" (>= 5.10) or "device/hwmon/hwmon3/temp1_max=..."
) -> Path:
    """/sys/class/nvme/<name> as the kernel lays it out: a link into /sys/devices."""
    number_ = int(name[4:])
    pci = sys_root / "devices" / "pci0000:00" / f"0000:{number_ + 1:02x}:00.0"
    device = pci / "nvme" / name
    device.mkdir(parents=True)
    (device / "device").symlink_to(pci)
    for file, text in (("model", model), ("serial", serial), ("firmware_rev", firmware)):
        if text:
            (device / file).write_text(text.ljust(40 if file == "model" else 20) + "\n")
    for namespace, sectors in (namespaces or {}).items():
        (device / namespace).mkdir()
        (device / namespace / "size").write_text(f"{sectors}\n")
    if hwmon:
        relative, value = hwmon.split("=")
        target = device / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(value + "\n")
    link = sys_root / "class" / "nvme" / name
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(device)
    return device


def test_identity_from_sysfs(tmp_path: Path) -> None:
    add_controller(tmp_path, "nvme0", SAMSUNG_MODEL, "S5GXNF0R123456A", "5B2QGXA7",
                   {"nvme0n1": 1_953_525_168}, "hwmon3/temp1_max=84850")  # fmt: skip
    identity = read_identity(HostRoots(sys=str(tmp_path)), "nvme0")
    assert identity == Identity(
        model=SAMSUNG_MODEL,  # sysfs pads with spaces
        serial="S5GXNF0R123456A",
        firmware="5B2QGXA7",
        capacity_bytes=1_000_204_886_016,  # 1,953,525,168 sectors x 512
        temperature_warning_c=85,  # 84850 m°C is 358 K, which smartctl shows as 85
    )


def test_identity_with_multipath_namespaces_and_older_hwmon_layout(tmp_path: Path) -> None:
    add_controller(tmp_path, "nvme1", "M", "S", "F", {"nvme1c1n1": 1000, "nvme1c1n2": 24},
                   "device/hwmon/hwmon5/temp1_max=74850")  # fmt: skip
    identity = read_identity(HostRoots(sys=str(tmp_path)), "nvme1")
    assert identity.capacity_bytes == 1024 * 512
    assert identity.temperature_warning_c == 75


def test_identity_of_a_controller_sysfs_does_not_show_is_empty(tmp_path: Path) -> None:
    add_controller(tmp_path, "nvme0")
    roots = HostRoots(sys=str(tmp_path))
    assert read_identity(roots, "nvme0") == Identity()
    assert read_identity(roots, "nvme7") == Identity()
    assert read_identity(HostRoots(sys=str(tmp_path / "nowhere")), "nvme0") == Identity()


def test_discovery_lists_controllers_in_numeric_order(tmp_path: Path) -> None:
    for name in ("nvme10", "nvme2", "nvme0"):
        add_controller(tmp_path, name)
    (tmp_path / "class" / "nvme" / "nvme-fabrics").mkdir()  # not a controller
    specs = discover(HostRoots(sys=str(tmp_path)))
    assert specs == [DriveSpec("/dev/nvme0", "nvme"), DriveSpec("/dev/nvme2", "nvme"),
                     DriveSpec("/dev/nvme10", "nvme")]  # fmt: skip
    assert [spec.tag for spec in specs] == ["nvme0", "nvme2", "nvme10"]
    assert discover(HostRoots(sys=str(tmp_path / "nowhere"))) == []


@pytest.mark.parametrize(
    ("spec", "controller", "nvme"),
    [
        (DriveSpec("/dev/nvme0", "nvme"), "nvme0", True),
        (DriveSpec("/dev/nvme12n1"), "nvme12", True),
        (DriveSpec("/dev/disk/by-id/nvme-Samsung_SSD", "nvme"), None, True),
        (DriveSpec("/dev/sda", "sat"), None, False),
        (DriveSpec("/dev/bus/0", "megaraid,5"), None, False),
    ],
)
def test_which_specs_are_nvme(spec: DriveSpec, controller: str | None, nvme: bool) -> None:
    assert controller_of(spec) == controller
    assert is_nvme(spec) is nvme


# -- one read through a real (fake) nvme process ----------------------------------------------


class FakeNvme:
    """The replay folder of tests/fake_nvme/nvme, and the calls it logged."""

    def __init__(self, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.root = root
        self.log = root / "calls.log"
        root.mkdir()
        monkeypatch.setenv("FAKE_NVME_DIR", str(root))
        monkeypatch.setenv("FAKE_NVME_LOG", str(self.log))

    def add(self, controller: str, text: str = "", behaviour: str = "") -> None:
        folder = self.root / controller
        folder.mkdir()
        (folder / "smart-log.json").write_text(text)
        if behaviour:
            (folder / "behaviour").write_text(behaviour + "\n")

    def calls(self) -> list[list[str]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]


@pytest.fixture
def fake_nvme(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeNvme:
    return FakeNvme(tmp_path / "nvme-replay", monkeypatch)


@pytest.fixture
def sys_root(tmp_path: Path) -> Path:
    root = tmp_path / "sys"
    add_controller(root, "nvme0", SAMSUNG_MODEL, "S5GXNF0R123456A", "5B2QGXA7",
                   {"nvme0n1": 1_953_525_168}, "hwmon3/temp1_max=84850")  # fmt: skip
    add_controller(root, "nvme1", "INTEL SSDPE2KX020T7", "PHLF7320001X2P0IGN", "QDV10170",
                   {"nvme1n1": 3_907_029_168})  # fmt: skip
    return root


def test_read_fills_health_and_identity(fake_nvme: FakeNvme, sys_root: Path) -> None:
    fake_nvme.add("nvme0", fixture_text("smart-log-v2.11.json"))
    runner = CommandRunner(str(FAKE_NVME), timeout=10)
    read = read_nvme_cli(DriveSpec("/dev/nvme0", "nvme"), runner, HostRoots(sys=str(sys_root)))
    assert read.problem == ""
    health = read.health
    assert health.counters == V2_11["counters"]
    assert (health.model, health.serial, health.firmware) == (
        SAMSUNG_MODEL, "S5GXNF0R123456A", "5B2QGXA7")  # fmt: skip
    assert health.capacity_bytes == 1_000_204_886_016
    assert health.temperature_warning_c == 85
    assert fake_nvme.calls() == [["smart-log", "-o", "json", "--", "/dev/nvme0"]]
    assert runner.stats.take() == (1, 0)


def test_permission_denied_is_classified_with_nvmes_own_reason(
    fake_nvme: FakeNvme, sys_root: Path
) -> None:
    fake_nvme.add("nvme0", behaviour="permission")
    runner = CommandRunner(str(FAKE_NVME), timeout=10)
    read = read_nvme_cli(DriveSpec("/dev/nvme0", "nvme"), runner, HostRoots(sys=str(sys_root)))
    assert read.problem == "/dev/nvme0: Permission denied"  # not the usage text after it
    assert read.permission and not read.vanished
    assert read.health.exit_status == -1
    assert read.health.counters == {} and read.health.health_ok is None
    # Tags survive a failed read; health fields (capacity, firmware) do not.
    assert (read.health.model, read.health.serial) == (SAMSUNG_MODEL, "S5GXNF0R123456A")
    assert read.health.capacity_bytes is None and read.health.firmware == ""
    assert runner.stats.take() == (1, 1)


def test_a_vanished_controller_asks_for_rediscovery(fake_nvme: FakeNvme, sys_root: Path) -> None:
    runner = CommandRunner(str(FAKE_NVME), timeout=10)
    read = read_nvme_cli(DriveSpec("/dev/nvme5", "nvme"), runner, HostRoots(sys=str(sys_root)))
    assert read.problem == "/dev/nvme5: No such file or directory"
    assert read.vanished and not read.permission


def test_a_hung_nvme_is_killed_at_the_timeout(fake_nvme: FakeNvme, sys_root: Path) -> None:
    fake_nvme.add("nvme0", behaviour="hang")
    runner = CommandRunner(str(FAKE_NVME), timeout=0.5)
    spec, roots = DriveSpec("/dev/nvme0", "nvme"), HostRoots(sys=str(sys_root))
    try:
        # The fake never answers: without the kill at the timeout the read would never
        # return. The guard is no bound on how long the kill may take: only a hang reaches it.
        read = guarded(lambda: read_nvme_cli(spec, runner, roots), "the read of a hung nvme")
    finally:
        runner.close()  # if it hung: kills the fake, so that the guarded thread ends
    assert read.problem.startswith("timed out after 0.5s"), read.problem
    assert read.health.exit_status == -1 and read.health.serial == "S5GXNF0R123456A"


def test_missing_nvme_binary_is_a_problem_not_a_crash(sys_root: Path) -> None:
    runner = CommandRunner("/nonexistent/nvme", timeout=1)
    read = read_nvme_cli(DriveSpec("/dev/nvme0", "nvme"), runner, HostRoots(sys=str(sys_root)))
    assert read.problem == "/nonexistent/nvme: not found on PATH"


# -- the collector end to end -----------------------------------------------------------------


class Agent:
    """A SmartCollector with no smartctl, the fake nvme, a fake sysfs and a manual clock."""

    def __init__(self, tmp_path: Path, sys_root: Path, **config: Any) -> None:
        self.stream = io.StringIO()
        self.clock = FakeClock()
        log = Logger(self.stream, debug=True)
        settings: dict[str, Any] = {"smartctl_path": str(tmp_path / "no-smartctl"),
                                    "nvme_path": str(FAKE_NVME), "timeout": 10.0}  # fmt: skip
        self.config = SmartConfig(**{**settings, **config})
        state = StateStore(str(tmp_path / "state.json"), log)
        context = CollectorContext(HostRoots(sys=str(sys_root)), log, state, Clock(self.clock))
        self.collector = SmartCollector(self.config, context, blocking=True)

    def collect(self) -> tuple[dict[str, Metric], Any]:
        collection = self.collector.collect()
        assert_schema(collection.metrics)
        return {m.tags["device"]: m for m in collection.metrics}, collection

    def log(self) -> str:
        return self.stream.getvalue()


def test_collector_reads_nvme_with_nvme_cli_when_smartctl_is_missing(
    tmp_path: Path, fake_nvme: FakeNvme, sys_root: Path
) -> None:
    fake_nvme.add("nvme0", fixture_text("smart-log-v2.11.json"))
    warning = {"value": 4, "available_spare": 0, "temp_threshold": 0, "reliability_degraded": 1}
    fake_nvme.add("nvme1", smart_log("smart-log-v2.3.json", critical_warning=warning))
    agent = Agent(tmp_path, sys_root)
    try:
        points, collection = agent.collect()
        assert collection.errors == 0
        assert collection.items == 2
        assert collection.agent_fields == {"exec_calls": 2, "exec_failures": 0, "reads_skipped": 0}
        healthy, failing = points["nvme0"], points["nvme1"]
        assert healthy.tags == {"device": "nvme0", "model": SAMSUNG_MODEL, "protocol": "nvme",
                                "serial": "S5GXNF0R123456A", "media": "nvme"}  # fmt: skip
        assert healthy.fields["temperature_c"] == 51
        assert healthy.fields["percentage_used"] == 30
        assert healthy.fields["data_written_bytes"] == 987_485_941_760_000
        assert healthy.fields["capacity_bytes"] == 1_000_204_886_016
        assert healthy.fields["firmware"] == "5B2QGXA7"
        assert healthy.fields["health_ok"] is True and healthy.fields["exit_status"] == 0
        assert healthy.fields["verdict"] == "ok" and healthy.fields["verdict_code"] == 0
        assert failing.fields["critical_warning"] == 4
        assert failing.fields["health_ok"] is False
        assert failing.fields["verdict"] == "fail" and failing.fields["verdict_code"] == 2
        assert failing.fields["verdict_reasons"] == "smart_overall=FAILED,critical_warning=4"
        assert failing.fields["temperature_c"] == 37
        assert "no-smartctl not found; reading NVMe controllers" in agent.log()
        per_device = collections.Counter(call[-1] for call in fake_nvme.calls())
        assert per_device == {"/dev/nvme0": 1, "/dev/nvme1": 1}
        calls = fake_nvme.calls()
        assert all(call == ["smart-log", "-o", "json", "--", call[-1]] for call in calls)

        _, idle = agent.collect()  # before the interval: no read, no process
        assert idle.metrics == [] and idle.agent_fields["exec_calls"] == 0
        agent.clock.now += agent.config.interval
        points, collection = agent.collect()
        assert set(points) == {"nvme0", "nvme1"}
        per_device = collections.Counter(call[-1] for call in fake_nvme.calls())
        assert per_device == {"/dev/nvme0": 2, "/dev/nvme1": 2}
    finally:
        agent.collector.close()


def test_garbage_or_empty_output_is_an_error_point_not_a_traceback(
    tmp_path: Path, fake_nvme: FakeNvme, sys_root: Path
) -> None:
    add_controller(sys_root, "nvme2", "M2", "SERIAL2")
    fake_nvme.add("nvme0", fixture_text("id-ctrl-intel-ssdped.txt"))
    fake_nvme.add("nvme1", "")
    fake_nvme.add("nvme2", "\x00\x01\x02{{{ not json")
    agent = Agent(tmp_path, sys_root)
    try:
        points, collection = agent.collect()
        assert collection.errors == 3
        assert set(points) == {"nvme0", "nvme1", "nvme2"}
        for point in points.values():
            assert point.fields == {"exit_status": -1}  # no health fields, no verdict
        assert points["nvme0"].tags["serial"] == "S5GXNF0R123456A"
        log = agent.log()
        assert log.count("nvme smart-log gave no smart log") == 3
        assert "Traceback" not in log and "JSONDecodeError" not in log
        assert "NotSmartLog" not in log  # handled by the reader, not the collector's catch-all
        assert len(fake_nvme.calls()) == 3
    finally:
        agent.collector.close()


def test_permission_warning_names_nvme_not_smartctl(
    tmp_path: Path, fake_nvme: FakeNvme, sys_root: Path
) -> None:
    fake_nvme.add("nvme0", behaviour="permission")
    fake_nvme.add("nvme1", fixture_text("smart-log-v2.3.json"))
    agent = Agent(tmp_path, sys_root)
    try:
        points, collection = agent.collect()
        assert collection.errors == 1
        assert collection.agent_fields == {"exec_calls": 2, "exec_failures": 1, "reads_skipped": 0}
        assert points["nvme0"].fields == {"exit_status": -1}
        assert points["nvme1"].fields["verdict"] == "ok"
        warning = next(line for line in agent.log().splitlines() if "no permission" in line)
        assert f"cap_dac_read_search+ep {FAKE_NVME}" in warning and "diskprobe sudoers" in warning
    finally:
        agent.collector.close()


FAKE_SMARTCTL = """\
#!/usr/bin/python3 -IS
import json, os, sys
with open(os.environ["FAKE_SMARTCTL_CALLS"], "a") as log:
    log.write(json.dumps(sys.argv[1:]) + "\\n")
if sys.argv[1:] == ["--version"]:
    print("smartctl 7.3 2022-02-28 r5338 [x86_64-linux-6.1.0] (local build)")
elif sys.argv[1:] == ["--scan-open"]:
    print("/dev/nvme0 -d nvme # /dev/nvme0, NVMe device")
else:
    print(json.dumps({"smartctl": {"exit_status": 0}, "device": {"protocol": "NVMe"},
                      "model_name": "FROM SMARTCTL", "serial_number": "SMARTCTL1",
                      "nvme_smart_health_information_log": {"critical_warning": 0}}))
"""


@pytest.mark.parametrize("source", ["nvme-cli", "smartctl"])
def test_nvme_source_chooses_the_tool_when_smartctl_is_installed(
    tmp_path: Path,
    fake_nvme: FakeNvme,
    sys_root: Path,
    monkeypatch: pytest.MonkeyPatch,
    source: str,
) -> None:
    smartctl = tmp_path / "smartctl"
    smartctl.write_text(FAKE_SMARTCTL)
    smartctl.chmod(0o755)
    smartctl_calls = tmp_path / "smartctl-calls.log"
    monkeypatch.setenv("FAKE_SMARTCTL_CALLS", str(smartctl_calls))
    fake_nvme.add("nvme0", fixture_text("smart-log-v2.11.json"))
    agent = Agent(tmp_path, sys_root, smartctl_path=str(smartctl), nvme_source=source)
    try:
        points, collection = agent.collect()
        assert collection.errors == 0
        smartctl_argvs = [json.loads(line) for line in smartctl_calls.read_text().splitlines()]
        assert smartctl_argvs[:2] == [["--version"], ["--scan-open"]]  # discovery is smartctl's
        if source == "nvme-cli":
            assert len(smartctl_argvs) == 2
            assert fake_nvme.calls() == [["smart-log", "-o", "json", "--", "/dev/nvme0"]]
            assert points["nvme0"].tags["serial"] == "S5GXNF0R123456A"
            assert points["nvme0"].fields["temperature_c"] == 51
        else:
            assert len(smartctl_argvs) == 3 and smartctl_argvs[2][-1] == "/dev/nvme0"
            assert fake_nvme.calls() == []
            assert points["nvme0"].tags["serial"] == "SMARTCTL1"
        assert collection.agent_fields["exec_calls"] == 3
    finally:
        agent.collector.close()


def test_build_collectors_gives_the_smart_collector_the_host_roots(
    tmp_path: Path, fake_nvme: FakeNvme, sys_root: Path
) -> None:
    fake_nvme.add("nvme0", fixture_text("smart-log-v2.3.json"))
    fake_nvme.add("nvme1", fixture_text("smart-log-v2.11.json"))
    log = Logger(io.StringIO())
    config = AgentConfig(
        io=IoConfig(enabled=False),
        filesystems=FilesystemsConfig(enabled=False),
        smart=SmartConfig(smartctl_path=str(tmp_path / "no-smartctl"), nvme_path=str(FAKE_NVME)),
        pressure=PressureConfig(enabled=False),
        process_io=ProcessIoConfig(enabled=False),
        cgroup_io=CgroupIoConfig(enabled=False),
    )
    state = StateStore(str(tmp_path / "state.json"), log)
    context = CollectorContext(roots=HostRoots(sys=str(sys_root)), log=log, state=state)
    (collector,) = build_collectors(config, context, once=True)
    try:
        metrics = collector.collect().metrics
        serials = sorted(m.tags["serial"] for m in metrics)
        assert serials == ["PHLF7320001X2P0IGN", "S5GXNF0R123456A"]
    finally:
        collector.close()

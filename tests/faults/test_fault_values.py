"""Bad values never crash, spike or silence (issue #11, items 11-13), through the installed command.

Each case runs `diskprobe --trigger stdin --debug` on a fake host with one collector enabled:
every line the test writes is exactly one batch, so a case can change a file between two
samples. The fault is one bad item (a 400-digit diskstats counter, a cgroup io.stat value, a
/proc/<pid>/io value, a PSI total, a NaN in smartctl JSON); every other item of the batch must
still be reported, with one message for the bad item however many batches it stays bad.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from ci import HANG_GUARD_SEC
from faultlib import (
    FAKE_SMARTCTL,
    TESTS,
    FakeHost,
    assert_no_traceback,
    start_diskprobe,
)

COLLECTORS = ("io", "filesystems", "smart", "pressure", "process_io", "cgroup_io")
HUGE = "9" * 400  # a "counter" whose rate would overflow float maths
ZEROS_17 = " ".join(["0"] * 17)


def disk_line(name: str, minor: int, counters: str) -> str:
    return f"   8 {minor:7d} {name} {counters}\n"


def counters_17(reads: int, io_ms: int = 0) -> str:
    values = [reads, 0, reads * 8, reads, 0, 0, 0, 0, 0, io_ms, reads] + [0] * 6
    return " ".join(map(str, values))


class Probe:
    """One diskprobe with only `collector` enabled; batch() asks for one and returns it."""

    def __init__(self, host: FakeHost, collector: str, reap: list[subprocess.Popen[bytes]],
                 options: str = "", env: dict[str, str] | None = None) -> None:  # fmt: skip
        sections = [f"[{name}]\nenabled = {str(name == collector).lower()}\n"
                    + (options if name == collector else "") for name in COLLECTORS]  # fmt: skip
        config = host.root / "diskprobe.toml"
        config.write_text("\n".join(sections))
        args = ["--config", str(config), "--trigger", "stdin", "--debug"]
        self.collector = collector
        self.process = start_diskprobe(args, {**host.env(), **(env or {})})
        reap.append(self.process)

    def batch(self) -> list[str]:
        """The lines of one batch: up to this collector's diskprobe_agent point."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(b"\n")
        self.process.stdin.flush()
        lines = []
        while True:
            raw = self.process.stdout.readline()
            assert raw, "diskprobe exited: " + self.stop()
            line = raw.decode()
            lines.append(line)
            if line.startswith(f"diskprobe_agent,collector={self.collector},"):
                return lines

    def stop(self) -> str:
        """End of stdin (communicate closes it) stops it; its stderr."""
        _out, err = self.process.communicate(timeout=30)
        text = err.decode()
        assert_no_traceback(text)
        return text


def points(lines: list[str], measurement: str) -> dict[str, dict[str, float]]:
    """tag set -> numeric fields, for one measurement (enough for these checks)."""
    found = {}
    for line in lines:
        head, _, rest = line.partition(" ")
        name, _, tags = head.partition(",")
        if name != measurement:
            continue
        fields = {}
        for pair in rest.rsplit(" ", 1)[0].split(","):
            key, _, value = pair.partition("=")
            if re.fullmatch(r"-?[0-9.e+]+i?", value):
                fields[key] = float(value.rstrip("i"))
        found[tags] = fields
    return found


def errors(lines: list[str], collector: str) -> float:
    agent = points(lines, "diskprobe_agent")
    return next(f["errors"] for tags, f in agent.items() if f"collector={collector}" in tags)


def test_a_400_digit_diskstats_counter_drops_only_that_device(
    fake_host: FakeHost, reap: list[subprocess.Popen[bytes]]
) -> None:
    fake_host.write("proc/diskstats", disk_line("sda", 0, counters_17(10))
                    + disk_line("sdb", 16, counters_17(10)))  # fmt: skip
    probe = Probe(fake_host, "io", reap)
    probe.batch()
    bad = counters_17(20).replace("20", HUGE, 1)
    for reads in (20, 30, 40):  # sdb moves on, sda stays broken for three batches
        fake_host.write("proc/diskstats", disk_line("sda", 0, bad)
                        + disk_line("sdb", 16, counters_17(reads)))  # fmt: skip
        batch = probe.batch()
        io = points(batch, "diskprobe_io")
        assert set(io) == {"device=sdb"}, batch
        assert errors(batch, "io") == 0
    stderr = probe.stop()
    assert "E! collector io" not in stderr
    skipped = [line for line in stderr.splitlines() if "skipping" in line and "sda" in line]
    assert len(skipped) == 1 and skipped[0].startswith("D! "), stderr


def test_all_counters_reset_to_zero_is_a_reset_not_a_wrap(
    fake_host: FakeHost, reap: list[subprocess.Popen[bytes]]
) -> None:
    # A driver reload: all 17 counters of sda at 3,000,000,000, then 0.
    before = " ".join(["3000000000"] * 17)
    fake_host.write("proc/diskstats", disk_line("sda", 0, before))
    probe = Probe(fake_host, "io", reap)
    probe.batch()
    fake_host.write("proc/diskstats", disk_line("sda", 0, ZEROS_17))
    reset = points(probe.batch(), "diskprobe_io")
    after = points(probe.batch(), "diskprobe_io")  # 0 -> 0: an idle interval again
    stderr = probe.stop()
    assert "device=sda" not in reset, reset  # skipped once: no rate from a reset
    assert after["device=sda"]["reads_per_sec"] == 0.0
    assert after["device=sda"]["util_percent"] == 0.0
    assert sum("were reset" in line for line in stderr.splitlines()) == 1, stderr


@pytest.mark.parametrize("content", [b"", b"\x00\x8f\xff binary \x01\x02\n\x7fELF\x02\x01"])
def test_empty_or_binary_diskstats_is_said_once_and_so_is_recovery(
    fake_host: FakeHost, reap: list[subprocess.Popen[bytes]], content: bytes
) -> None:
    fake_host.write("proc/diskstats", content)
    probe = Probe(fake_host, "io", reap)
    for _ in range(3):
        assert points(probe.batch(), "diskprobe_io") == {}
    fake_host.write("proc/diskstats", disk_line("sda", 0, counters_17(10)))
    probe.batch()
    assert "device=sda" in points(probe.batch(), "diskprobe_io")
    stderr = probe.stop().splitlines()
    warned = [line for line in stderr if line.startswith("W! io:")]
    recovered = [line for line in stderr if line.startswith("I! io:")]
    assert len(warned) == 1 and "diskstats" in warned[0], stderr
    assert len(recovered) == 1, stderr


def _cgroup_v2(host: FakeHost) -> Path:
    root = host.sys / "fs" / "cgroup"
    (root / "cgroup.controllers").write_text("cpu io memory\n")
    for name in ("good.slice", "bad.slice"):
        (root / name).mkdir()
    return root


def _io_stat(path: Path, rbytes: str) -> None:
    path.write_text(f"8:0 rbytes={rbytes} wbytes=0 rios=1 wios=0 dbytes=0 dios=0\n")


@pytest.mark.parametrize("bad_value", [HUGE, "1e400", "-5"])
def test_one_bad_cgroup_io_stat_value_drops_only_that_cgroup(
    fake_host: FakeHost, reap: list[subprocess.Popen[bytes]], bad_value: str
) -> None:
    root = _cgroup_v2(fake_host)
    for name in ("", "good.slice", "bad.slice"):
        _io_stat(root / name / "io.stat", "1000")
    probe = Probe(fake_host, "cgroup_io", reap)
    probe.batch()
    for step in (1, 2):
        _io_stat(root / "good.slice" / "io.stat", str(1000 + step * 4096))
        _io_stat(root / "io.stat", str(1000 + step * 4096))
        _io_stat(root / "bad.slice" / "io.stat", bad_value if step == 1 else bad_value + " ")
        batch = probe.batch()
        cgroups = points(batch, "diskprobe_cgroup_io")
        assert any("good.slice" in tags for tags in cgroups), batch
        assert not any("bad.slice" in tags for tags in cgroups), batch
        assert errors(batch, "cgroup_io") == 0
    stderr = probe.stop()
    assert "E! collector cgroup_io" not in stderr
    assert sum("bad.slice" in line for line in stderr.splitlines()) == 1, stderr


def _process(host: FakeHost, pid: int, read_bytes: str) -> None:
    """A process for psutil on the fake /proc: this test process's own files, a chosen io."""
    source = Path("/proc/self")
    target = host.proc / str(pid)
    target.mkdir(parents=True, exist_ok=True)
    for name in ("stat", "status", "cmdline", "comm", "cgroup"):
        (target / name).write_bytes((source / name).read_bytes())
    (target / "io").write_text(
        "rchar: 1\nwchar: 0\nsyscr: 1\nsyscw: 0\n"
        f"read_bytes: {read_bytes}\nwrite_bytes: 0\ncancelled_write_bytes: 0\n"
    )


def test_a_malformed_proc_pid_io_drops_only_that_process(
    fake_host: FakeHost, reap: list[subprocess.Popen[bytes]]
) -> None:
    shutil.copyfile("/proc/stat", fake_host.proc / "stat")
    shutil.copyfile("/proc/uptime", fake_host.proc / "uptime")
    _process(fake_host, 100, "0")
    _process(fake_host, 200, "0")
    probe = Probe(fake_host, "process_io", reap)
    probe.batch()
    for step in (1, 2, 3):
        _process(fake_host, 100, str(step * 10_000_000))
        _process(fake_host, 200, "x")
        batch = probe.batch()
        processes = points(batch, "diskprobe_process_io")
        assert [f["pid"] for f in processes.values()] == [100.0], batch
        assert errors(batch, "process_io") == 0
    stderr = probe.stop()
    assert "E! collector process_io" not in stderr
    assert sum("pid 200" in line for line in stderr.splitlines()) == 1, stderr


def test_a_short_proc_pid_stat_drops_only_that_process(
    fake_host: FakeHost, reap: list[subprocess.Popen[bytes]]
) -> None:
    """Issue #25, item 5: a stat of 22 fields made psutil raise IndexError, and the whole
    collector failed (`E! collector process_io: IndexError`) in every batch."""
    shutil.copyfile("/proc/stat", fake_host.proc / "stat")
    shutil.copyfile("/proc/uptime", fake_host.proc / "uptime")
    _process(fake_host, 100, "0")
    _process(fake_host, 200, "0")
    stat = (fake_host.proc / "200" / "stat").read_text().split()
    probe = Probe(fake_host, "process_io", reap)
    probe.batch()
    for step in (1, 2, 3):
        _process(fake_host, 100, str(step * 10_000_000))
        _process(fake_host, 200, str(step * 10_000_000))
        (fake_host.proc / "200" / "stat").write_text(" ".join(stat[:22]) + "\n")
        batch = probe.batch()
        processes = points(batch, "diskprobe_process_io")
        assert [f["pid"] for f in processes.values()] == [100.0], batch
        assert errors(batch, "process_io") == 0
    assert "E! collector process_io" not in probe.stop()


def test_a_bad_psi_line_drops_only_that_line(
    fake_host: FakeHost, reap: list[subprocess.Popen[bytes]]
) -> None:
    probe = Probe(fake_host, "pressure", reap)
    probe.batch()
    for total in (1001, 1002):  # a few µs: plausible however short the interval
        fake_host.write("proc/pressure/io",
                        f"some avg10=1.00 avg60=0.50 avg300=0.10 total={total}\n"
                        f"full avg10=nan avg60=0.00 avg300=0.00 total={HUGE}\n")  # fmt: skip
        batch = probe.batch()
        fields = points(batch, "diskprobe_pressure")[""]
        assert fields["some_avg10"] == 1.0 and "some_stall_us_per_sec" in fields, batch
        assert not any(key.startswith("full_") for key in fields), batch
        assert errors(batch, "pressure") == 0
    stderr = probe.stop()
    assert "E! collector pressure" not in stderr
    assert sum("'full'" in line for line in stderr.splitlines()) == 1, stderr


def test_nan_and_infinity_in_smartctl_json_drop_only_those_fields(
    fake_host: FakeHost, reap: list[subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    source = TESTS / "golden" / "smart-json" / "ata-ssd-samsung-850-pro-128gb"
    case = tmp_path / "smart" / "sda"
    case.mkdir(parents=True)
    shutil.copyfile(source / "device", case / "device")
    text = (source / "response.json").read_text()
    data = json.loads(text)
    data["temperature"]["current"] = "@NAN@"
    data["power_cycle_count"] = "@INF@"
    broken = json.dumps(data).replace('"@NAN@"', "NaN").replace('"@INF@"', "Infinity")
    (case / "response.json").write_text(broken)
    device = (source / "device").read_text().strip()
    options = f'smartctl_path = "{FAKE_SMARTCTL}"\ndevices = ["{device}"]\n'
    probe = Probe(fake_host, "smart", reap, options, {"FAKE_SMARTCTL_DIR": str(case.parent)})
    deadline = time.monotonic() + HANG_GUARD_SEC
    smart: dict[str, dict[str, float]] = {}
    while not smart and time.monotonic() < deadline:  # reads run in the background
        batch = probe.batch()
        smart = points(batch, "diskprobe_smart")
        time.sleep(0.1)
    assert len(smart) == 1, batch
    fields = next(iter(smart.values()))
    assert "temperature_c" not in fields and "power_cycles" not in fields, fields
    assert fields["power_on_hours"] == data["power_on_time"]["hours"], fields
    assert "reallocated_sectors" in fields, fields
    probe.batch()
    stderr = probe.stop()
    unusable = [line for line in stderr.splitlines() if "not numbers" in line]
    assert len(unusable) == 1 and "temperature.current=NaN" in unusable[0], stderr

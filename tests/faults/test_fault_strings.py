"""Bytes that are not UTF-8 in every string diskprobe reads (issue #25, item 1), through the
installed command: the point is always sent, as valid UTF-8, the byte written %XX
(serializers/text.py), in every output format.

- A real process, run as nobody, named b"\\xffwriter" (argv[0] and comm: it is executed
  through a symlink of that name) and writing fast enough to be a top process: before the
  fix `diskprobe --once` died with UnicodeEncodeError in the stdout output, exit 1.
- A fake host with every string source bad at once: a disk's name and its udev model and
  serial, a mount point and its filesystem type, a process's comm, command line, cgroup and
  user name (a passwd entry, bind-mounted in a mount namespace of the test's own), a cgroup
  directory, and smartctl's model, serial and firmware strings; run once per output format.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Iterator

import pytest

from ci import skip_or_fail
from faultlib import DISKPROBE, FAKE_SMARTCTL, TESTS, FakeHost, assert_no_traceback

pytestmark = [pytest.mark.root, pytest.mark.slow]

BAD = b"\xff"
PID = 4242
UID = 4242
GOLDEN_JSON = TESTS / "golden" / "smart-json" / "ata-ssd-dell-intel-ssdsckjb240g7r"
COUNTERS = "100 0 800 50 100 0 800 50 0 100 100 0 0 0 0 0 0"
# What each source becomes in every output, once escaped.
EXPECTED = {
    "device": "sd%FFb",
    "model": "Bad%FFModel",
    "serial": "SN%FF1",
    "mount": "/mnt/%FFdata",
    "fstype": "ext%FF4",
    "process": "%FFwriter",
    "user": "%FFuser",
    "cgroup": "/bad%FF.slice",
    "smart_model": "Drive%FFModel",
    "smart_serial": "DRV%FF9",
    "firmware": "FW%FF2",
}


def _bad_host(host: FakeHost) -> None:
    """Every string source with a 0xFF byte in it (see the module docstring)."""
    lines = (Path(host.proc) / "diskstats").read_bytes()
    bad_disk = b"   8      16 sd" + BAD + b"b " + COUNTERS.encode() + b"\n"
    host.write("proc/diskstats", lines + bad_disk)
    block = host.sys / "class" / "block"
    (block / os.fsdecode(b"sd" + BAD + b"b")).mkdir(parents=True)
    (block / os.fsdecode(b"sd" + BAD + b"b") / "dev").write_text("8:16\n")
    host.write("run/udev/data/b8:16",
               b"E:ID_MODEL=Bad" + BAD + b"Model\nE:ID_SERIAL_SHORT=SN" + BAD + b"1\n")  # fmt: skip
    mounts = (Path(host.proc) / "1" / "mountinfo").read_bytes()
    bad_mount = b"40 22 8:16 / /mnt/" + BAD + b"data rw,relatime - ext" + BAD + b"4 /dev/sdb rw\n"
    for who in ("1", "self"):
        host.write(f"proc/{who}/mountinfo", mounts + bad_mount)
    # The host's root, as a container mounts it (HOST_MOUNT_PREFIX): statfs finds the mount
    os.makedirs(os.fsencode(host.root / "hostfs") + b"/mnt/" + BAD + b"data")
    cgroup = host.sys / "fs" / "cgroup"
    (cgroup / "cgroup.controllers").write_text("io\n")
    (cgroup / os.fsdecode(b"bad" + BAD + b".slice")).mkdir()
    _process(host)


def _process(host: FakeHost) -> None:
    """Pid 4242: this process's own files, renamed b"\\xffwriter", of uid 4242."""
    target = host.proc / str(PID)
    target.mkdir(parents=True, exist_ok=True)
    own = Path("/proc/self")
    stat = (own / "stat").read_bytes()
    name_end = stat.rindex(b")")
    (target / "stat").write_bytes(b"%d (" % PID + BAD + b"writer" + stat[name_end:])
    status = (own / "status").read_text().splitlines()
    status = [f"Uid:\t{UID}\t{UID}\t{UID}\t{UID}" if line.startswith("Uid:") else line
              for line in status]  # fmt: skip
    (target / "status").write_text("\n".join(status) + "\n")
    (target / "comm").write_bytes(BAD + b"writer\n")
    (target / "cmdline").write_bytes(BAD + b"writer\0--fast\0")
    (target / "cgroup").write_bytes(b"0::/bad" + BAD + b".slice\n")
    shutil.copyfile("/proc/stat", host.proc / "stat")
    shutil.copyfile("/proc/uptime", host.proc / "uptime")


def _bump(host: FakeHost, step: int) -> None:
    """New counters for the process and the cgroup: rates between --once's two samples.
    Replaced whole (rename), as the kernel's files never show half a write."""
    _replace(host.proc / str(PID) / "io",
             "rchar: 1\nwchar: 0\nsyscr: 1\nsyscw: 0\n"
             f"read_bytes: {step * 50_000_000}\nwrite_bytes: 0\ncancelled_write_bytes: 0\n")
    stat = host.sys / "fs" / "cgroup" / os.fsdecode(b"bad" + BAD + b".slice") / "io.stat"
    _replace(stat, f"8:16 rbytes={step * 50_000_000} wbytes=0 rios={step} wios=0\n")


def _replace(path: Path, text: str) -> None:
    temp = path.with_name(path.name + ".new")
    temp.write_text(text)
    os.replace(temp, path)


@pytest.fixture
def bumping(fake_host: FakeHost) -> Iterator[FakeHost]:
    """The bad host, its counters moving every 0.1 s while a test runs."""
    _bad_host(fake_host)
    stop = threading.Event()

    def run() -> None:
        step = 1
        while not stop.wait(0.1):
            _bump(fake_host, step)
            step += 1

    _bump(fake_host, 0)
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    yield fake_host
    stop.set()
    thread.join()


def _smart_case(root: Path) -> Path:
    """A fake smartctl that finds one drive whose strings hold 0xFF bytes."""
    case = root / "smart" / "bad-strings"
    case.mkdir(parents=True)
    (case / "device").write_text((GOLDEN_JSON / "device").read_text())
    data = json.loads((GOLDEN_JSON / "response.json").read_text())
    data["model_name"], data["serial_number"], data["firmware_version"] = "@M@", "@S@", "@F@"
    text = json.dumps(data).encode()
    for mark, raw in ((b"@M@", b"Drive" + BAD + b"Model"), (b"@S@", b"DRV" + BAD + b"9"),
                      (b"@F@", b"FW" + BAD + b"2")):  # fmt: skip
        text = text.replace(mark, raw)  # raw bytes, as a vendor string can hold them
    (case / "response.json").write_bytes(text)
    return case.parent


def _passwd(root: Path) -> Path:
    passwd = root / "passwd"
    passwd.write_bytes(Path("/etc/passwd").read_bytes()
                       + BAD + b"user:x:%d:%d::/:/usr/sbin/nologin\n" % (UID, UID))  # fmt: skip
    return passwd


def _config(root: Path, output: str) -> Path:
    config = root / "diskprobe.toml"
    config.write_text(
        f'state_file = "{root / "state.json"}"\n'
        '[filesystems]\nignore_fs = []\n'
        '[process_io]\nmin_bytes_per_sec = 0\ntop = 1000\n'
        f'[smart]\nsmartctl_path = "{FAKE_SMARTCTL}"\nnvme_path = "/nonexistent/nvme"\n'
        f"[output]\n{output}"
    )
    return config


def _once(host: FakeHost, output: str) -> subprocess.CompletedProcess[bytes]:
    """`diskprobe --once` on the bad host, with the bad passwd entry bind-mounted."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        skip_or_fail("needs root and unshare: /etc/passwd is bind-mounted in a namespace")
    config, passwd = _config(host.root, output), _passwd(host.root)
    smart = _smart_case(host.root)
    script = 'mount --bind "$1" /etc/passwd && shift && exec "$@"'
    env = {**os.environ, **host.env(), "FAKE_SMARTCTL_DIR": str(smart),
           "HOST_MOUNT_PREFIX": str(host.root / "hostfs")}  # fmt: skip
    done = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh",
         str(passwd), str(DISKPROBE), "--once", "--config", str(config)],
        env=env, capture_output=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    stderr = done.stderr.decode("utf-8")  # strict: logs are valid UTF-8 too
    assert_no_traceback(stderr)
    assert "E! " not in stderr, stderr
    return done


def _assert_escaped(text: str, names: tuple[str, ...]) -> None:
    missing = [name for name in names if EXPECTED[name] not in text]
    assert not missing, (missing, text)


EVERYWHERE = tuple(EXPECTED)


def test_line_protocol_on_stdout(bumping: FakeHost) -> None:
    done = _once(bumping, 'kind = "stdout"\nformat = "influx"\n')
    text = done.stdout.decode("utf-8")  # strict
    _assert_escaped(text, EVERYWHERE)
    assert f"diskprobe_process_io,process={EXPECTED['process']},user={EXPECTED['user']} " in text


def test_prometheus_textfile(bumping: FakeHost) -> None:
    target = bumping.root / "diskprobe.prom"
    _once(bumping, f'kind = "textfile"\nformat = "prometheus"\npath = "{target}"\n')
    text = target.read_bytes().decode("utf-8")
    _assert_escaped(text, EVERYWHERE)
    assert f'process="{EXPECTED["process"]}"' in text


def test_collectd_identifiers(bumping: FakeHost) -> None:
    done = _once(bumping, 'kind = "stdout"\nformat = "collectd"\n')
    text = done.stdout.decode("utf-8")
    # collectd carries the series tags only, each byte outside [A-Za-z0-9_.] as %XX
    identifiers = sorted({line.split("/")[1] for line in text.splitlines()})
    for needle in ("io-sd%FFb", "fs-mnt-%FFdata", "process_io-%FFwriter-%FFuser",
                   "cgroup_io-bad%FF.slice-"):  # fmt: skip
        near = [name for name in identifiers if needle[:5] in name]
        assert any(needle in name for name in identifiers), (needle, near)


def test_influxdb_output(
    bumping: FakeHost, write_api: tuple[str, list[tuple[str, bytes]]]
) -> None:
    url, bodies = write_api
    token = bumping.root / "token"
    token.write_text("t\n")
    _once(bumping, f'kind = "influxdb"\nformat = "influx"\nurl = "{url}"\nbucket = "b"\n'
                   f'token_file = "{token}"\nspool_dir = "{bumping.root / "spool"}"\n')  # fmt: skip
    text = b"".join(body for _, body in bodies).decode("utf-8")
    _assert_escaped(text, EVERYWHERE)


@pytest.fixture
def writer_as_nobody() -> Iterator[int]:
    """dd run as nobody through a symlink named b"\\xffwriter": argv[0] and comm both hold
    the byte; it writes (direct I/O) until the test ends. In a folder of its own under /tmp
    (root's pytest tmp is 0700: nobody could not reach it)."""
    if os.geteuid() != 0:
        skip_or_fail("needs root to run the writer as nobody")
    work = Path(tempfile.mkdtemp(prefix="diskprobe-writer-"))
    work.chmod(0o777)
    link = os.fsencode(work) + b"/" + BAD + b"writer"
    os.symlink(shutil.which("dd") or "/bin/dd", link)
    writer = subprocess.Popen(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", link,
         "if=/dev/zero", f"of={work / 'out'}", "bs=1M", "count=100000", "oflag=direct",
         "status=none"],
    )  # fmt: skip
    try:
        yield writer.pid
    finally:
        writer.kill()
        writer.wait()
        shutil.rmtree(work, ignore_errors=True)


def test_a_real_process_named_with_a_byte_that_is_not_utf8(
    writer_as_nobody: int, tmp_path: Path
) -> None:
    config = tmp_path / "diskprobe.toml"
    config.write_text(f'state_file = "{tmp_path / "state.json"}"\n[smart]\nenabled = false\n'
                      "[process_io]\ntop = 1000\n")  # fmt: skip
    done = subprocess.run(
        [str(DISKPROBE), "--once", "--config", str(config)],
        capture_output=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    text = done.stdout.decode("utf-8")
    line = next((line for line in text.splitlines()
                 if line.startswith("diskprobe_process_io,process=%FFwriter,")), None)  # fmt: skip
    assert line is not None, text
    assert f"pid={writer_as_nobody}i" in line and "user=nobody" in line
    assert 'cmdline="' in line and "%FFwriter if=/dev/zero" in line

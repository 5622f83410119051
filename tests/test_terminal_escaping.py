"""Names that hold control characters, in the text a person reads (issue 37, item 3).

A path or a process name may hold ESC, BEL and newlines: printed raw, `ESC]0;...BEL` sets the
terminal's title, `ESC[2J` clears the screen, and a newline followed by `bottleneck: compute`
forges a verdict line. Every text report (`diagnose`, `doctor`) writes such names with every
control character as %XX and `%` as %25 (serializers/text.readable_text), the report's own
words as they are; every log line escapes control characters (log.terminal_safe); the JSON
keeps the names (json escapes them itself); `sudoers` refuses such a path, never escapes it.

Through the installed command: a real job on a slow loop device whose dataset directory and
process name hold them (diagnose), a mount point that holds them in a HOST_PROC mountinfo
(doctor), a smartctl path that holds them (sudoers).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from diagnose_host import DatasetHost, dataset_host
from diskprobe.log import Logger

from ci import skip_or_fail
from helpers import installed_command

TESTS = Path(__file__).resolve().parent
JOB = TESTS / "diagnose_job.py"
# A directory name and a process name (15 bytes at most: the kernel's comm) as a hostile
# job would choose them: set the title, clear the screen, start a line of its own.
HOSTILE_DIR = "d\x1b]0;pwned\x07\x1b[2J\nbottleneck: compute 100%"
SHOWN_DIR = "d%1B]0;pwned%07%1B[2J%0Abottleneck: compute 100%25"
HOSTILE_COMM = "a) (b\nc\x1b[2J"
SHOWN_COMM = "a) (b%0Ac%1B[2J"
CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]")  # every one but the newline
WATCH_SEC = 4.0


@pytest.fixture(scope="module")
def host() -> Iterator[DatasetHost]:
    with dataset_host(skip_or_fail, delay_ms=4.0) as slow:
        yield slow


def _diagnose(pid: int, output_format: str) -> str:
    done = subprocess.run(
        [*installed_command(), "diagnose", "--pid", str(pid), "--seconds", str(WATCH_SEC),
         "--format", output_format], capture_output=True, timeout=WATCH_SEC + 60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout.decode("utf-8")  # strict: valid UTF-8 either way


@pytest.mark.root
@pytest.mark.slow
def test_a_job_named_to_forge_lines_gets_them_escaped_in_the_text_only(host: DatasetHost) -> None:
    data = host.mountpoint / HOSTILE_DIR
    host.small.rename(data)  # 32 files of 256 KiB, on the slow device (this module's own)
    job = subprocess.Popen(
        [sys.executable, str(JOB), "files", str(data), "2"], stdout=subprocess.PIPE, text=True,
        start_new_session=True, env={**os.environ, "DIAGNOSE_JOB_COMM": HOSTILE_COMM},
    )  # fmt: skip
    try:
        assert job.stdout is not None and job.stdout.readline().strip() == "ready"
        time.sleep(1.0)  # the workers run before the watch starts
        text, raw = _diagnose(job.pid, "text"), _diagnose(job.pid, "json")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(job.pid, signal.SIGKILL)
        job.wait(10)
        data.rename(host.small)
    assert not CONTROL.search(text), repr(text)
    lines = text.splitlines()
    assert [line for line in lines if line.startswith("bottleneck:")] == ["bottleneck: disk"]
    assert lines[1] == "bottleneck: disk", text
    waited = [line for line in lines if line.startswith("files waited on: ")]
    assert len(waited) == 1 and f"/{SHOWN_DIR}/sample-" in waited[0], text
    table = lines.index("processes (share of the main thread's time; cpu in cores):")
    rows = lines[table + 1 : next(i for i, line in enumerate(lines) if line.startswith("advice"))]
    assert rows and all(SHOWN_COMM in row and " threads " in row for row in rows), rows
    report = json.loads(raw)  # the JSON as it was: the names themselves, json-escaped
    assert "%1B" not in raw and "\\u001b" in raw
    assert report["paths"] and all(p.startswith(f"{data}/") for p in report["paths"])
    assert {process["comm"] for process in report["processes"]} == {HOSTILE_COMM}


def test_doctor_escapes_a_mount_point_that_forges_a_line(tmp_path: Path) -> None:
    """HOST_PROC's mountinfo holds a mount point with ESC, BEL, a newline and a `%` (the
    kernel writes the newline `\\012`); the directory exists, so its statfs answers."""
    point = tmp_path / "data\x1b]0;pwned\x07\x1b[2J\nFAIL  forged 100%"
    point.mkdir()
    proc = tmp_path / "proc"
    (proc / "1").mkdir(parents=True)
    shutil.copyfile("/proc/diskstats", proc / "diskstats")
    octal = os.fsencode(point).replace(b"\\", b"\\134").replace(b" ", b"\\040")
    octal = octal.replace(b"\n", b"\\012")
    (proc / "1" / "mountinfo").write_bytes(
        b"22 1 254:1 / / rw - ext4 /dev/vda1 rw\n"
        b"36 22 7:9 / " + octal + b" rw - ext4 /dev/loop9 rw\n")  # fmt: skip
    config = tmp_path / "diskprobe.toml"
    config.write_text(f'state_file = "{tmp_path / "state.json"}"\n[smart]\nenabled = false\n')
    done = subprocess.run(
        [*installed_command(), "doctor", "--config", str(config)], capture_output=True,
        timeout=120, env={**os.environ, "HOST_PROC": str(proc)},
    )  # fmt: skip
    out = done.stdout.decode("utf-8")
    assert not CONTROL.search(out), repr(out)
    lines = out.splitlines()
    assert all(line[:5].rstrip() in ("OK", "INFO", "WARN", "FAIL") for line in lines), out
    assert not any(line.startswith("FAIL  forged") for line in lines), out
    shown = str(tmp_path) + "/data%1B]0;pwned%07%1B[2J%0AFAIL  forged 100%25"
    assert any(line.startswith("OK   filesystems: ") and line.endswith(f" {shown}")
               for line in lines), out  # fmt: skip


def test_every_log_line_escapes_control_characters_after_its_prefix() -> None:
    stream = io.StringIO()
    log = Logger(stream)
    log.warn("mount /m\x1b]0;t\x07\x1b[2J\nE! forged\tline\r\x9b \udcffname 100%")
    log.error("plain")
    assert stream.getvalue() == ("W! mount /m%1B]0;t%07%1B[2J%0AE! forged%09line%0D%C2%9B "
                                 "%FFname 100%\nE! plain\n")  # fmt: skip


def test_sudoers_refuses_a_program_path_with_control_characters(tmp_path: Path) -> None:
    """A smartctl reached through a path with ESC, BEL and a newline: no rule for it, escaped
    or not (a rule names exactly the file sudo runs), and one W! line saying why."""
    smartctl = tmp_path / "smart\x1b]0;x\x07ctl\nFAIL"
    smartctl.symlink_to(TESTS / "fake_smartctl" / "smartctl")
    config = tmp_path / "diskprobe.toml"
    config.write_text(f'[smart]\nsmartctl_path = {json.dumps(str(smartctl))}\n'
                      'devices = ["/dev/sdzz"]\n')  # fmt: skip
    done = subprocess.run([*installed_command(), "sudoers", "--config", str(config)],
                          capture_output=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    out, err = done.stdout.decode("utf-8"), done.stderr.decode("utf-8")
    assert str(tmp_path) not in out and "DISKPROBE_SMARTCTL" not in out and "%1B" not in out
    assert not CONTROL.search(out + err), repr(out + err)
    assert err.count("\n") == 1 and err.startswith("W! sudoers: left out 3 command line(s): ")
    assert err.rstrip().endswith("holds a control character: refused, not escaped"), err

"""Files diskprobe owns, under a hostile local user and an unlucky disk (issue #11, items 1, 9).

- a temp file swapped for a symlink must never make diskprobe (root) chmod or write the
  link's target (deterministic in-process case, then a real race by `nobody`);
- a spool batch that is a symlink is never read nor sent; a spool directory others can
  plant files in is refused;
- a textfile directory that is missing or full: one E! line, the process keeps running,
  one I! when writing works again, never a traceback.
"""

from __future__ import annotations

import errno
import io
import os
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
from stoplib import Probe, many_devices

from diskprobe.log import Logger
from diskprobe.outputs.spool import Spool
from diskprobe.outputs.textfile import TextfileOutput

from ci import skip_or_fail
from faultlib import DISKPROBE, FakeHost, wait_for

NOBODY = 65534
SYSTEM_PYTHON = "/usr/bin/python3"
SECRET = b"root:$6$not-for-your-eyes:19000:0:99999:7:::\n"
CONFIG = """
state_file = "{state}"
[smart]
enabled = false
[process_io]
enabled = false
"""


def _config(tmp_path: Path) -> Path:
    config = tmp_path / "diskprobe.toml"
    config.write_text(CONFIG.format(state=tmp_path / "state" / "state.json"))
    return config


def _secret(tmp_path: Path) -> Path:
    secret = tmp_path / "shadow"
    secret.write_bytes(SECRET)
    secret.chmod(0o600)
    return secret


def _assert_untouched(secret: Path) -> None:
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600, "diskprobe chmod-ed a link's target"
    assert secret.read_bytes() == SECRET


# -- the temp file swapped for a symlink -------------------------------------------------------


def test_textfile_temp_swapped_for_a_symlink_is_never_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The swap happens right after diskprobe created its temp file: the worst moment."""
    secret, shared = _secret(tmp_path), tmp_path / "textfile"
    shared.mkdir()
    real_open = os.open

    def open_then_swap(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        fd = real_open(path, flags, *args, **kwargs)
        name = os.fspath(path)
        if flags & os.O_CREAT and os.path.basename(name).startswith(".diskprobe."):
            os.symlink(secret, name + ".link")
            os.replace(name + ".link", name)  # what another user can do in a shared directory
        return fd

    monkeypatch.setattr(os, "open", open_then_swap)
    output = TextfileOutput(str(shared / "x.prom"))  # (the old signature: fails for the fault)
    output.write("diskprobe_up 1\n")
    monkeypatch.undo()
    _assert_untouched(secret)


ATTACKER = r"""
import os, sys, time
directory, target, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
deadline, swaps = time.monotonic() + seconds, 0
while time.monotonic() < deadline:
    for name in os.listdir(directory):
        if name.startswith(".diskprobe."):
            link = os.path.join(directory, "link.%d" % swaps)
            try:
                os.symlink(target, link)
                os.replace(link, os.path.join(directory, name))
                swaps += 1
            except OSError:
                try:
                    os.unlink(link)
                except OSError:
                    pass
print(swaps)
"""


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A textfile directory group-writable by `nobody`'s group, reachable by `nobody`."""
    if os.geteuid() != 0:
        skip_or_fail("needs root (runs the attacker as nobody)")
    base = Path(tempfile.mkdtemp(prefix="diskprobe-shared-", dir="/tmp"))
    try:
        base.chmod(0o755)
        shared = base / "textfile"
        shared.mkdir()
        os.chown(shared, 0, NOBODY)
        shared.chmod(0o775)
        (base / "attack.py").write_text(ATTACKER)
        yield shared
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.root
@pytest.mark.slow
def test_local_user_racing_the_textfile_cannot_chmod_a_root_file(
    fake_host: FakeHost, tmp_path: Path, shared_dir: Path
) -> None:
    secret = _secret(tmp_path)
    # Big batches (~1 MB of text): a write long enough for a polling attacker to catch.
    fake_host.write("proc/diskstats", many_devices(1000))
    args = ["--config", str(_config(tmp_path)), "--format", "prometheus",
            "--textfile", str(shared_dir / "x.prom"), "--interval", "50ms"]  # fmt: skip
    probe = Probe(fake_host, args, stdout=subprocess.DEVNULL)
    try:
        # Debian's python3: nobody may not be able to reach the venv's (a checkout under a
        # 0700 directory, root's home); the attack needs only the standard library.
        attack = subprocess.run(
            ["runuser", "-u", "nobody", "--", SYSTEM_PYTHON,
             str(shared_dir.parent / "attack.py"), str(shared_dir), str(secret), "6"],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert attack.returncode == 0, attack.stderr
        assert int(attack.stdout) > 0, "the attacker never caught a temp file"
        assert probe.process.poll() is None, probe.text_err()
        _assert_untouched(secret)
    finally:
        if probe.process.poll() is None:
            probe.stop("SIGTERM")
        else:
            probe.process.wait(5)
    _assert_untouched(secret)


# -- the spool ---------------------------------------------------------------------------------


def test_spool_batch_that_is_a_symlink_is_never_read_nor_sent(tmp_path: Path) -> None:
    secret, spool_dir = _secret(tmp_path), tmp_path / "spool"
    spool_dir.mkdir(mode=0o700)
    (spool_dir / f"{1:020d}.lp").symlink_to(secret)
    log = io.StringIO()
    spool = Spool(str(spool_dir), 10**6, Logger(log))
    try:
        spool.append(b"m v=1i 1\n")
        sent = b"".join(data for _, data in spool.take(10**6))
    finally:
        spool.close()
    assert SECRET not in sent and sent == b"m v=1i 1\n"
    warnings = [line for line in log.getvalue().splitlines() if line.startswith("W! ")]
    assert len(warnings) == 1 and f"{1:020d}.lp" in warnings[0], log.getvalue()
    _assert_untouched(secret)


def test_spool_directory_writable_by_every_user_is_refused(tmp_path: Path) -> None:
    spool_dir = tmp_path / "spool"
    spool_dir.mkdir()
    spool_dir.chmod(0o777)  # anyone could plant a batch (or a link) to be sent
    with pytest.raises(OSError, match="writable by every user"):
        Spool(str(spool_dir), 10**6, Logger(io.StringIO()))


# -- a textfile directory that is missing or full ----------------------------------------------


def _errors(probe: Probe) -> list[str]:
    return [line for line in probe.stderr if line.startswith("E! ")]


def _textfile_fails_then_recovers(
    fake_host: FakeHost, tmp_path: Path, target: Path, check_broken: Callable[[], None],
    repair: Callable[[], None],
) -> Probe:
    """Run the daemon writing `target` while it cannot be written: one E!, still running;
    then `repair()`: one I!, and the file is written. Returns the stopped probe."""
    args = ["--config", str(_config(tmp_path)), "--format", "prometheus",
            "--textfile", str(target), "--interval", "50ms"]  # fmt: skip
    probe = Probe(fake_host, args, stdout=subprocess.DEVNULL)
    try:
        probe.wait_log("E! textfile: ")
        assert wait_for(lambda: probe.process.poll() is not None, 1.0) is False, probe.text_err()
        check_broken()
        repair()
        probe.wait_log("I! textfile: ")
        assert wait_for(lambda: target.exists() and target.stat().st_size > 0, 5.0)
    finally:
        code, _ = probe.stop("SIGTERM")
    assert code == 0
    assert len(_errors(probe)) == 1, probe.text_err()
    return probe


def test_missing_textfile_directory_is_reported_once_and_recovers(
    fake_host: FakeHost, tmp_path: Path
) -> None:
    target = tmp_path / "later" / "x.prom"
    probe = _textfile_fails_then_recovers(
        fake_host, tmp_path, target, lambda: None, target.parent.mkdir
    )
    assert str(target) in _errors(probe)[0], probe.text_err()


@pytest.fixture
def tiny_tmpfs(tmp_path: Path) -> Iterator[Path]:
    if os.geteuid() != 0:
        skip_or_fail("needs root to mount a tmpfs")
    mount_point = tmp_path / "tiny"
    mount_point.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount_point)],
                   check=True)  # fmt: skip
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


def _fill(directory: Path) -> Path:
    filler = directory / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while True:
            os.write(fd, b"\0" * 1024)
    except OSError as error:
        assert error.errno == errno.ENOSPC
    finally:
        os.close(fd)
    return filler


@pytest.mark.root
@pytest.mark.slow
def test_full_textfile_filesystem_is_reported_once_and_recovers(
    fake_host: FakeHost, tmp_path: Path, tiny_tmpfs: Path
) -> None:
    target = tiny_tmpfs / "x.prom"
    filler = _fill(tiny_tmpfs)

    def nothing_left_behind() -> None:
        # The daemon tries again every 50 ms: one attempt's temp file exists for a moment,
        # and is gone by the next look. A temp file left behind stays, and fails this.
        clean = wait_for(lambda: sorted(os.listdir(tiny_tmpfs)) == ["filler"], 2.0)
        assert clean, f"a temp file was left behind: {sorted(os.listdir(tiny_tmpfs))}"

    probe = _textfile_fails_then_recovers(
        fake_host, tmp_path, target, nothing_left_behind, filler.unlink
    )
    assert "No space left" in _errors(probe)[0], probe.text_err()
    assert stat.S_IMODE(target.stat().st_mode) == 0o644


def test_world_writable_spool_directory_is_a_config_error_at_start(tmp_path: Path) -> None:
    spool_dir = tmp_path / "spool"
    spool_dir.mkdir()
    spool_dir.chmod(0o777)
    config = tmp_path / "influx.toml"
    config.write_text(f'[output]\nkind = "influxdb"\nurl = "http://127.0.0.1:9"\n'
                      f'bucket = "b"\nspool_dir = "{spool_dir}"\n')  # fmt: skip
    result = subprocess.run([DISKPROBE, "--config", str(config), "--once"],
                            capture_output=True, text=True, timeout=30)  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines() == [
        f"E! config: {config}: [output]: 'spool_dir': {spool_dir} is writable by every user "
        "(no sticky bit)"
    ]

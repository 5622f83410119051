"""The package as users get it: `python -m build` (an sdist, then the wheel built from that
sdist), `twine check --strict`, and the wheel installed into a fresh venv from Debian's python3
and with pipx, each running `diskprobe --version`, `--once` and `doctor`."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from dataclasses import dataclass
from email.message import Message
from email.parser import HeaderParser
from pathlib import Path

import pytest

import diskprobe

from ci import skip_or_fail
from lineproto import parse_lines

# One worker for the whole file under xdist: its module fixture is set up once (lanes.py).
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("test_packaging")]

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "plugin" / "diskprobe"
SYSTEM_PYTHON = Path("/usr/bin/python3")  # fleets install into a venv of Debian's python3
LICENSE = "plugin/LICENSE"
# Collectors that need nothing special: SMART is off, so no drive, smartctl or sudo is asked.
CONFIG = 'state_file = "{state}"\ninterval = "1s"\n\n[smart]\nenabled = false\n'


@dataclass(frozen=True)
class Dist:
    wheel: Path
    sdist: Path

    def metadata(self) -> Message:
        with zipfile.ZipFile(self.wheel) as wheel:
            (name,) = [n for n in wheel.namelist() if n.endswith(".dist-info/METADATA")]
            return HeaderParser().parsestr(wheel.read(name).decode("utf-8"))


def _run(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    """stdout of `argv`; the test fails with the tail of its output when it exits non-zero."""
    # PYTHONPATH or a venv of the test run would let the installed copy import the checkout.
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    done = subprocess.run(
        argv, cwd=cwd, env={**clean, **(env or {})}, capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, f"{argv} exited {done.returncode}:\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Dist:
    for module in ("build", "twine"):
        if importlib.util.find_spec(module) is None:
            skip_or_fail(f"{module} is not installed (pip install -e '.[test]')")
    out = tmp_path_factory.mktemp("dist")
    _run([sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)], cwd=out)
    (wheel,) = out.glob("*.whl")
    (sdist,) = out.glob("*.tar.gz")
    return Dist(wheel, sdist)


def test_twine_check_strict_accepts_both(dist: Dist) -> None:
    output = _run([sys.executable, "-m", "twine", "check", "--strict", str(dist.wheel),
                   str(dist.sdist)], cwd=dist.wheel.parent)  # fmt: skip
    assert output.count("PASSED") == 2, output


def test_metadata_has_one_version_and_an_spdx_license(dist: Dist) -> None:
    metadata = dist.metadata()
    assert metadata["Version"] == diskprobe.__version__
    assert metadata["License-Expression"] == "MIT"
    assert metadata["License"] is None  # the deprecated free-text field is gone
    assert metadata.get_all("License-File") == [LICENSE]
    assert metadata["Description-Content-Type"] == "text/markdown"


def test_sdist_holds_what_a_build_needs_and_the_wheel_the_whole_package(dist: Dist) -> None:
    sources = {
        path.relative_to(PACKAGE.parent).as_posix()
        for path in PACKAGE.rglob("*")
        # Modules, py.typed and the package data (smart/afr_table.toml, read at start-up;
        # sources/bpf/latency.bt, the program [latency] gives bpftrace).
        if path.suffix in (".py", ".typed", ".toml", ".bt") and "__pycache__" not in path.parts
    }
    with tarfile.open(dist.sdist) as sdist:
        in_sdist = {name.split("/", 1)[1] for name in sdist.getnames() if "/" in name}
    assert {"pyproject.toml", "README.md", LICENSE} <= in_sdist
    assert {f"plugin/{name}" for name in sources} <= in_sdist
    with zipfile.ZipFile(dist.wheel) as wheel:
        in_wheel = set(wheel.namelist())
    # The wheel is built from the sdist: every module, py.typed and data file made it through.
    assert {name for name in in_wheel if name.startswith("diskprobe/")} == sources
    dist_info = f"diskprobe-{diskprobe.__version__}.dist-info"
    assert f"{dist_info}/licenses/{LICENSE}" in in_wheel


def test_wheel_in_a_fresh_venv_runs_once_and_doctor(dist: Dist, tmp_path: Path) -> None:
    if not SYSTEM_PYTHON.exists():
        skip_or_fail(f"{SYSTEM_PYTHON} is missing (Debian packages python3, python3-venv)")
    venv = tmp_path / "venv"
    _run([str(SYSTEM_PYTHON), "-m", "venv", str(venv)], cwd=tmp_path)
    _run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", f"{dist.wheel}[web]"],
         cwd=tmp_path)  # fmt: skip
    _check_installed(venv / "bin" / "diskprobe", dist, tmp_path)
    # With the web extra, a /metrics config with TLS-less basic auth loads (doctor checks it)
    done = _web_config_check(venv / "bin" / "diskprobe", tmp_path)
    assert done.returncode == 0, done.stderr


def test_pipx_install_of_the_wheel_runs_once_and_doctor(dist: Dist, tmp_path: Path) -> None:
    pipx = shutil.which("pipx")
    if pipx is None:
        skip_or_fail("pipx is not installed (Debian package pipx)")
    env = {"PIPX_HOME": str(tmp_path / "pipx"), "PIPX_BIN_DIR": str(tmp_path / "bin")}
    _run([pipx, "install", str(dist.wheel)], cwd=tmp_path, env=env)
    _check_installed(tmp_path / "bin" / "diskprobe", dist, tmp_path)
    # Without the web extra, the same config is one E! naming it, and exit status 2
    done = _web_config_check(tmp_path / "bin" / "diskprobe", tmp_path)
    errors = done.stderr.splitlines()
    assert done.returncode == 2 and len(errors) == 1, done.stderr
    assert errors[0].startswith("E! config: ") and "pip install 'diskprobe[web]'" in errors[0]


# alice / secret, bcrypt cost 4: a web config with basic auth
WEB_CONFIG = ("basic_auth_users:\n"
              "  alice: $2b$04$ywbhgga4n9v.RlgX0zrlwuRlrfGmPwtJpW.5AcZyV4Iyuz.VHiUme\n")


def _web_config_check(executable: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """`doctor` on a config serving /metrics with that web config: it loads it at start."""
    (tmp_path / "web.yml").write_text(WEB_CONFIG)
    config = tmp_path / "http.toml"
    output = ('[output]\nkind = "http"\nformat = "prometheus"\nlisten = "127.0.0.1:0"\n'
              f'web_config_file = "{tmp_path / "web.yml"}"\n')  # fmt: skip
    config.write_text(CONFIG.format(state=tmp_path / "state.json") + output)
    return subprocess.run([str(executable), "doctor", "--config", str(config)],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120)  # fmt: skip


def _check_installed(executable: Path, dist: Dist, tmp_path: Path) -> None:
    """--version says the wheel's version; --once prints a batch; doctor finds no problem."""
    version = _run([str(executable), "--version"], cwd=tmp_path)
    assert version.strip() == f"diskprobe {dist.metadata()['Version']}"
    config = tmp_path / "diskprobe.toml"
    config.write_text(CONFIG.format(state=tmp_path / "state.json"))
    batch = _run([str(executable), "--config", str(config), "--once"], cwd=tmp_path)
    measurements = {point.measurement for point in parse_lines(batch)}
    assert "diskprobe_agent" in measurements and "diskprobe_io" in measurements, measurements
    assert not any(name.startswith("diskprobe_smart") for name in measurements)
    report = _run([str(executable), "doctor", "--config", str(config)], cwd=tmp_path)
    assert report.splitlines()[-1].startswith("INFO 0 problem(s)"), report

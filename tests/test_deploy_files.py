"""The deployment files under telegraf/ are held to the code, to the README and to each other.

- telegraf/diskprobe.toml (and the copy in the Kubernetes ConfigMap) is `--sample-config`;
- the Telegraf snippets parse as TOML and point at the binary the README's install creates;
- the sudoers files pass `visudo -c`, and sudo itself lists exactly their commands, allows
  every command line diskprobe builds and refuses others (in a private mount namespace, so
  the machine's sudoers and user database are never touched);
- the systemd drop-in passes `systemd-analyze verify`, and its capabilities (and the setcap
  recipe) really let an unprivileged user open a root-only device node;
- the DaemonSet carries the mounts and environment diskprobe reads; the Dockerfile copies
  only files that exist here, and they are enough to install diskprobe.

Regenerate the copies of the sample config after changing the config spec:
    python tests/test_deploy_files.py
"""

from __future__ import annotations

import importlib
import json
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any, Iterator, Sequence

import pytest

from diskprobe.config import AgentConfig, SmartConfig, load_config_text
from diskprobe.config.listen import parse_listen
from diskprobe.config.output import DEFAULT_LISTEN, DEFAULT_PORT
from diskprobe.config.sample import render_sample_config
from diskprobe.durations import parse_duration
from diskprobe.roots import HostRoots
from diskprobe.smart.devices import DriveSpec
from diskprobe.smart.reader import json_args
from diskprobe.smart.runner import CommandRunner
from sudo_probe import hostile_lines, probe_sudo

from ci import skip_or_fail

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
TELEGRAF = ROOT / "telegraf"
EXECD_CONF = TELEGRAF / "diskprobe.conf"
EXEC_CONF = TELEGRAF / "diskprobe-exec.conf"
SAMPLE_TOML = TELEGRAF / "diskprobe.toml"
SUDOERS = TELEGRAF / "sudoers.d" / "diskprobe"
SUDOERS_REGEX = TELEGRAF / "sudoers.d" / "diskprobe.regex"
DROP_IN = TELEGRAF / "systemd" / "telegraf.service.d" / "diskprobe.conf"
SYSTEMD_README = TELEGRAF / "systemd" / "README.md"
DAEMONSET = TELEGRAF / "kubernetes" / "daemonset.yaml"
PROMETHEUS_DAEMONSET = TELEGRAF / "kubernetes" / "daemonset-prometheus.yaml"
DOCKERFILE = TELEGRAF / "Dockerfile"
DOCKERIGNORE = TELEGRAF / "Dockerfile.dockerignore"
REGENERATE = "run `python tests/test_deploy_files.py` to regenerate it"


def _module(name: str, package: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except ImportError:
        skip_or_fail(f"Python package {package} is not installed (pip install {package})")


def _tool(name: str, package: str) -> str:
    path = shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin")
    if path is None:
        skip_or_fail(f"{name} is not installed (Debian package {package})")
    return path


def _need_root(why: str) -> None:
    if os.geteuid() != 0:
        skip_or_fail(f"needs root: {why}")


# -- the sample config and its copies -------------------------------------------------------


def test_diskprobe_toml_is_the_sample_config() -> None:
    assert SAMPLE_TOML.read_text() == render_sample_config(), (
        f"telegraf/diskprobe.toml differs from `diskprobe --sample-config`: {REGENERATE}"
    )


def test_diskprobe_toml_loads_as_the_defaults() -> None:
    assert load_config_text(SAMPLE_TOML.read_text(), str(SAMPLE_TOML)) == AgentConfig()


# -- Telegraf snippets ------------------------------------------------------------------------


def _readme() -> str:
    return (ROOT / "README.md").read_text()


def _installed_binary() -> str:
    """The diskprobe the README's install command creates: <venv>/bin/diskprobe."""
    install = re.findall(r"```sh\n(.*?)\n```", _readme(), re.S)[0]
    venv = re.search(r"python3 -m venv (\S+)", install)
    assert venv, f"no `python3 -m venv DIR` in the README's install command: {install!r}"
    return f"{venv.group(1)}/bin/diskprobe"


def _execd(text: str) -> dict[str, Any]:
    blocks = tomllib.loads(text)["inputs"]["execd"]
    assert len(blocks) == 1
    block: dict[str, Any] = blocks[0]
    return block


def _option(argv: list[str], name: str) -> str:
    assert name in argv, f"{name} missing from {argv}"
    return argv[argv.index(name) + 1]


EXECD_KEYS = {"command", "environment", "signal", "restart_delay", "buffer_size", "data_format"}


def test_execd_conf_is_telegraf_toml_for_the_installed_binary() -> None:
    execd = _execd(EXECD_CONF.read_text())
    assert set(execd) <= EXECD_KEYS, f"not inputs.execd options: {set(execd) - EXECD_KEYS}"
    command = execd["command"]
    assert command[0] == _installed_binary()
    assert _option(command, "--config") == "/etc/diskprobe/diskprobe.toml"
    assert "--trigger" not in command  # signal = "none": diskprobe keeps its own schedule
    assert execd["signal"] == "none"
    assert parse_duration(execd["restart_delay"]) > 0
    assert execd["data_format"] == "influx"


def test_execd_conf_is_in_sample_conf_style() -> None:
    """`##` prose, `# key = default` settings that are valid once uncommented, active keys."""
    inside = EXECD_CONF.read_text().split("[[inputs.execd]]\n", 1)[1]
    commented = []
    for line in inside.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("## ") or stripped == "##":
            continue
        assert line.startswith("  "), f"not indented under [[inputs.execd]]: {line!r}"
        if stripped.startswith("# "):
            commented.append(stripped[2:])
        else:
            assert re.match(r"[a-z_]+ = ", stripped), f"not `key = value`: {line!r}"
    assert commented, "no `# key = default` line"
    for setting in commented:
        key = tomllib.loads(setting)
        assert set(key) <= EXECD_KEYS, setting


def test_readme_snippet_and_execd_conf_agree() -> None:
    snippet = next(
        block
        for block in re.findall(r"```toml\n(.*?)```", _readme(), re.S)
        if "inputs.execd" in block
    )
    readme, conf = _execd(snippet), _execd(EXECD_CONF.read_text())
    for key in ("signal", "data_format", "restart_delay"):
        assert readme[key] == conf[key], f"README says {key} = {readme[key]!r}, conf {conf[key]!r}"
    assert readme["command"][0] == conf["command"][0]


def _exec_blocks() -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = tomllib.loads(EXEC_CONF.read_text())["inputs"]["exec"]
    return blocks


def test_exec_conf_runs_once_with_a_timeout_below_its_interval() -> None:
    (block,) = _exec_blocks()
    (command,) = block["commands"]
    argv = shlex.split(command)
    assert argv[0] == _installed_binary() and "--once" in argv
    assert _option(argv, "--config") == _option(_execd(EXECD_CONF.read_text())["command"],
                                                "--config")  # fmt: skip
    interval, timeout = parse_duration(block["interval"]), parse_duration(block["timeout"])
    assert interval >= 60, "the forecast stores at most one point a minute"
    assert 1 + SmartConfig().timeout <= timeout < interval
    assert block["data_format"] == "influx"


def test_exec_conf_smart_only_block_and_its_config() -> None:
    """The commented second block parses once uncommented, and the TOML its comment writes
    enables [smart] only."""
    lines = EXEC_CONF.read_text().splitlines()
    start = lines.index("# [[inputs.exec]]")
    block = [line.removeprefix("# ") for line in lines[start:] if line.startswith("# ")]
    smart_only = tomllib.loads("\n".join(block))["inputs"]["exec"][0]
    interval = parse_duration(smart_only["interval"])
    assert interval >= 3600 and parse_duration(smart_only["timeout"]) < interval
    written = re.search(r"printf '([^']*)' \\\n##\s+> (\S+)\n", EXEC_CONF.read_text())
    assert written, "no `printf '...' > FILE` writing the SMART-only config"
    config = load_config_text(written.group(1).replace("\\n", "\n"), "smart-only")
    assert not config.io.enabled and not config.filesystems.enabled and config.smart.enabled
    assert _option(shlex.split(smart_only["commands"][0]), "--config") == written.group(2)


def test_exec_conf_command_prints_one_batch_and_keeps_the_forecast_window(
    tmp_path: Path,
) -> None:
    """The exec command as written, with this checkout's diskprobe and a private state file."""
    (block,) = _exec_blocks()
    argv = shlex.split(block["commands"][0])
    config = tmp_path / "diskprobe.toml"
    state = tmp_path / "state" / "state.json"
    state.parent.mkdir()
    config.write_text(f'state_file = "{state}"\n' + SAMPLE_TOML.read_text())
    argv[argv.index("--config") + 1] = str(config)
    run = [sys.executable, "-m", "diskprobe", *argv[1:]]
    result = subprocess.run(
        run, capture_output=True, text=True, timeout=parse_duration(block["timeout"])
    )
    assert result.returncode == 0, result.stderr
    measurements = {line.split(",", 1)[0] for line in result.stdout.splitlines()}
    assert {"diskprobe_io", "diskprobe_agent"} <= measurements
    saved = json.loads(state.read_text())  # written at exit: the next run continues the window
    assert "fs_forecast" in saved["sections"]


# -- sudoers ----------------------------------------------------------------------------------


@pytest.mark.parametrize("path", [SUDOERS, SUDOERS_REGEX], ids=lambda p: p.name)
def test_sudoers_file_passes_visudo(path: Path) -> None:
    visudo = _tool("visudo", "sudo")
    result = subprocess.run([visudo, "-c", "-f", str(path)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def _sudoers_commands(path: Path) -> list[str]:
    """Every command of every Cmnd_Alias in the file, as sudo prints them."""
    text = re.sub(r"\\\n\s*", " ", path.read_text())
    commands: list[str] = []
    for line in text.splitlines():
        alias = re.match(r"Cmnd_Alias \w+ = (.*)", line)
        if alias:
            commands += [c.strip() for c in alias.group(1).split(", ")]
    return commands


def _diskprobe_command_lines() -> list[list[str]]:
    """Every command line diskprobe's [smart] collector runs through `sudo -n`, built by the
    code itself: smartctl discovery, the JSON read, the text path and nvme-cli."""
    from diskprobe.smart.nvme_cli import smart_log_args
    from diskprobe.smart.text_path import OneReadSmartctl

    smartctl = CommandRunner("smartctl", 1.0, use_sudo=True)
    nvme = CommandRunner("nvme", 1.0, use_sudo=True)
    specs = [
        DriveSpec("/dev/sda"),
        DriveSpec("/dev/sdb", "sat"),
        DriveSpec("/dev/bus/0", "megaraid,5"),
        DriveSpec("/dev/sdc", "sat+megaraid,0"),
        DriveSpec("/dev/nvme0", "nvme"),
        DriveSpec("/dev/disk/by-id/ata-Example_SSD_S3Z1NB0K123456X"),
    ]
    modes = SmartConfig.__dataclass_fields__["nocheck"].metadata["choices"]
    lines = [smartctl.command(["--version"]), smartctl.command(["--scan-open"])]
    for spec in specs:
        for mode in modes:
            lines.append(smartctl.command(json_args(spec, mode)))
            lines.append(smartctl.command(OneReadSmartctl(spec, smartctl, mode).args))
    for spec in (DriveSpec("/dev/nvme0", "nvme"), DriveSpec("/dev/nvme1n1")):
        lines.append(nvme.command(smart_log_args(spec)))
    return [line[2:] for line in lines]  # without "sudo -n"


SMARTCTL, NVME = "/usr/sbin/smartctl", "/usr/sbin/nvme"
SHIPPED_USERS = ["telegraf", "diskprobe"]
SHIPPED_COMMANDS = [[SMARTCTL, "--version"], [SMARTCTL, "--scan-open"]]


def test_shipped_sudoers_is_what_diskprobe_sudoers_prints_for_no_drives() -> None:
    """The default file is `diskprobe sudoers` output (after its own prologue) for a host with
    no drive yet: discovery only, exact lines, no wildcard anywhere."""
    from diskprobe.sudoers import render

    text = SUDOERS.read_text()
    assert text.endswith(render(SHIPPED_USERS, SHIPPED_COMMANDS, [])), (
        "telegraf/sudoers.d/diskprobe does not end with diskprobe.sudoers.render(...)"
    )
    assert "*" not in "".join(line for line in text.splitlines() if not line.startswith("#"))


@pytest.mark.root
@pytest.mark.parametrize("path", [SUDOERS, SUDOERS_REGEX], ids=lambda p: p.name)
def test_sudo_lists_exactly_the_files_commands_and_refuses_options(path: Path) -> None:
    """The regex file allows every line diskprobe builds; the shipped exact file allows only
    discovery (each drive's lines come from `diskprobe sudoers`: test_fault_sudoers.py).
    Both refuse every hostile line: the issue's, and diskprobe's with options slipped in."""
    expected = _sudoers_commands(path)
    assert {c.split()[0] for c in expected} == ({SMARTCTL} if path == SUDOERS else {SMARTCTL, NVME})
    assert f"{SMARTCTL} {'^--version$' if path == SUDOERS_REGEX else '--version'}" in expected
    # A program that is not installed stays a bare name; an installed one must be where the
    # files say, since sudo compares full paths.
    built = [line for line in _diskprobe_command_lines() if os.path.isabs(line[0])]
    for line in built:
        assert line[0] in (SMARTCTL, NVME), f"diskprobe runs {line[0]}; the files name /usr/sbin"
    if not any(line[0] == SMARTCTL for line in built):
        skip_or_fail("smartctl is not installed (Debian package smartmontools)")
    allowed_lines = built if path == SUDOERS_REGEX else SHIPPED_COMMANDS
    refused = [line for line in hostile_lines(SMARTCTL, NVME, built) if os.path.exists(line[0])]
    refused += [line for line in built if line not in allowed_lines]
    listing, allowed = probe_sudo(path, allowed_lines + refused)

    body = " ".join(listing.split("may run the following commands on", 1)[1].split(":", 1)[1]
                    .split())  # fmt: skip
    assert body == "(root) NOPASSWD: " + ", ".join(expected), listing
    assert "!requiretty" in listing
    verdicts = dict(zip(map(shlex.join, allowed_lines + refused), allowed))
    for line in allowed_lines:
        assert verdicts[shlex.join(line)], f"sudo refuses a command diskprobe runs: {line}"
    for line in refused:
        assert not verdicts[shlex.join(line)], f"sudo allows {line}"


# -- systemd ----------------------------------------------------------------------------------


def _unit_entries(text: str) -> list[tuple[str, str, str]]:
    """(section, key, value) for every assignment of a systemd unit file, in order."""
    entries, section = [], ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        header = re.fullmatch(r"\[(\w+)\]", line)
        if header:
            section = header.group(1)
            continue
        key, sep, value = line.partition("=")
        assert sep and section, f"not `Key=value` in a section: {raw!r}"
        entries.append((section, key.strip(), value.strip()))
    return entries


def _drop_in(key: str) -> list[str]:
    values = [v for s, k, v in _unit_entries(DROP_IN.read_text()) if (s, k) == ("Service", key)]
    return " ".join(values).split()


def test_drop_in_grants_smart_capabilities_that_survive_no_new_privileges() -> None:
    entries = _unit_entries(DROP_IN.read_text())
    assert {section for section, _, _ in entries} == {"Service"}
    ambient, bounding = set(_drop_in("AmbientCapabilities")), set(_drop_in("CapabilityBoundingSet"))
    assert {"CAP_SYS_RAWIO", "CAP_SYS_ADMIN"} <= ambient
    assert ambient <= bounding, "ambient capabilities outside the bounding set are dropped"
    assert not any(v.startswith("~") for v in bounding), "a ~ line would remove, not add"
    keys = {key for _, key, _ in entries}
    assert "NoNewPrivileges" not in keys and "User" not in keys  # never weakens the unit
    assert _drop_in("StateDirectory") == [Path(AgentConfig().state_file).parent.name]
    assert Path(AgentConfig().state_file).parent == Path("/var/lib") / _drop_in("StateDirectory")[0]


def test_drop_in_passes_systemd_analyze_verify(tmp_path: Path) -> None:
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        skip_or_fail("systemd-analyze is not installed (Debian package systemd)")
    known = subprocess.run([analyze, "capability"], capture_output=True, text=True).stdout
    for cap in _drop_in("AmbientCapabilities") + _drop_in("CapabilityBoundingSet"):
        assert re.search(rf"^{cap.lower()}\s", known, re.M), f"systemd does not know {cap}"
    # A model of a hardened telegraf.service, with the drop-in, and the drop-in's commented
    # options switched on so that their syntax is checked too.
    (tmp_path / "telegraf.service").write_text(
        "[Unit]\nDescription=Telegraf (hardened model)\n[Service]\nType=notify\n"
        "User=telegraf\nExecStart=/bin/true\nNoNewPrivileges=yes\n"
        "CapabilityBoundingSet=CAP_NET_RAW\nProtectSystem=strict\nProcSubset=pid\n"
    )
    drop_in_dir = tmp_path / "telegraf.service.d"
    drop_in_dir.mkdir()
    uncommented = re.sub(r"^#([A-Z]\w+=)", r"\1", DROP_IN.read_text(), flags=re.M)
    (drop_in_dir / "diskprobe.conf").write_text(uncommented)
    result = subprocess.run(
        [analyze, "verify", str(tmp_path / "telegraf.service")],
        capture_output=True, text=True, cwd=tmp_path,
        env={**os.environ, "SYSTEMD_UNIT_PATH": f"{tmp_path}:", "SYSTEMD_LOG_LEVEL": "info"},
    )  # fmt: skip
    complaints = [line for line in result.stderr.splitlines() if "diskprobe.conf" in line]
    assert result.returncode == 0 and not complaints, result.stderr


# -- capabilities, for real -------------------------------------------------------------------


@pytest.fixture
def device_node() -> Iterator[Path]:
    """A 0600 root-owned character device (/dev/null's numbers) that `nobody` can reach."""
    _need_root("mknod and setpriv --reuid")
    base = Path(tempfile.mkdtemp(prefix="diskprobe-caps-"))
    try:
        base.chmod(0o755)
        flags = os.statvfs(base).f_flag
        if flags & (os.ST_NODEV | os.ST_NOSUID):
            pytest.skip(f"{base} is mounted nodev or nosuid (the machine's mount)")
        node = base / "drive"
        os.mknod(node, stat.S_IFCHR | 0o600, os.makedev(1, 3))
        yield node
    finally:
        shutil.rmtree(base)


def _smartctl() -> str:
    return _tool("smartctl", "smartmontools")


def _as_nobody(program: str, node: Path, ambient: Sequence[str] = (), nnp: bool = False,
               bounding: Sequence[str] | None = None,
               arguments: Sequence[str] | None = None) -> str:  # fmt: skip
    """smartctl's output when `nobody` asks it to open `node`, with these capabilities.

    As under Telegraf, smartctl is started by a process that holds no permitted capabilities
    of its own (a shell here, diskprobe there): only ambient or file capabilities can reach
    it, and no_new_privs limits the latter to what that process had, i.e. nothing."""
    setpriv = _tool("setpriv", "util-linux")
    argv = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"]
    caps = ",".join(f"+{cap.lower().removeprefix('cap_')}" for cap in ambient)
    if ambient:
        argv += [f"--inh-caps=-all,{caps}", f"--ambient-caps=-all,{caps}"]
    if bounding is not None:
        allowed = ",".join(f"+{cap.lower().removeprefix('cap_')}" for cap in bounding)
        argv.append(f"--bounding-set=-all,{allowed}")
    if nnp:
        argv.append("--no-new-privs")
    rest = ["-d", "scsi", "-i", str(node)] if arguments is None else list(arguments)
    result = subprocess.run([*argv, "/bin/sh", "-c", 'exec "$0" "$@"', program, *rest],
                            capture_output=True, text=True, timeout=60)  # fmt: skip
    return result.stdout + result.stderr


def _opened(output: str, node: Path) -> bool:
    refused = f"open device: {node} failed: Permission denied"
    assert "Inquiry" in output or refused in output, output  # smartctl got that far either way
    return refused not in output


@pytest.mark.root
def test_drop_in_capabilities_open_a_root_only_device_under_no_new_privileges(
    device_node: Path,
) -> None:
    ambient = _drop_in("AmbientCapabilities")
    bounding = sorted(set(_drop_in("CapabilityBoundingSet")) | {"CAP_NET_RAW"})
    smartctl = _smartctl()
    assert _opened(_as_nobody(smartctl, device_node, ambient, True, bounding), device_node)
    # RAWIO and ADMIN alone do not open it: why the drop-in also grants DAC_READ_SEARCH.
    two = ["CAP_SYS_RAWIO", "CAP_SYS_ADMIN"]
    assert not _opened(_as_nobody(smartctl, device_node, two, True, bounding), device_node)
    assert not _opened(_as_nobody(smartctl, device_node), device_node)


@pytest.mark.root
def test_drop_in_lets_nobody_read_what_roots_job_waits_on_under_no_new_privileges() -> None:
    """[jobs] and diagnose read a job's /proc/<tid>/syscall and fd links: with the drop-in's
    ambient capabilities `nobody` may (CAP_SYS_PTRACE), without them it may not."""
    _need_root("setpriv --reuid")
    job = subprocess.Popen(["sleep", "600"])  # a root-owned "job", blocked in clock_nanosleep
    try:
        ambient = _drop_in("AmbientCapabilities")
        bounding = sorted(set(_drop_in("CapabilityBoundingSet")) | {"CAP_NET_RAW"})
        script = ["-c", READ, "sh", f"/proc/{job.pid}/syscall", f"/proc/{job.pid}/fd/0"]
        granted = _as_nobody("/bin/sh", Path("/"), ambient, True, bounding, script)
        refused = _as_nobody("/bin/sh", Path("/"), (), True, bounding, script)
    finally:
        job.kill()
        job.wait()
    assert granted.split() == ["read", "read"], granted
    assert refused.split() == ["refused", "refused"], refused
    assert "CAP_SYS_PTRACE" in ambient


READ = 'for f; do if cat "$f" >/dev/null 2>&1 || readlink "$f" >/dev/null; then echo read; ' \
    'else echo refused; fi; done'  # fmt: skip


@pytest.mark.root
def test_setcap_recipe_opens_a_root_only_device_and_no_new_privileges_undoes_it(
    device_node: Path,
) -> None:
    setcap = _tool("setcap", "libcap2-bin")
    recipe = re.search(r"^setcap (\S+) (\S+)$", SYSTEMD_README.read_text(), re.M)
    assert recipe, "no setcap line in telegraf/systemd/README.md"
    capabilities = recipe.group(1)
    assert capabilities.endswith("+ep") and "cap_sys_rawio" in capabilities
    copy = device_node.parent / "smartctl"
    shutil.copyfile(_smartctl(), copy)
    copy.chmod(0o755)
    for caps, opens in ((capabilities, True), ("cap_sys_rawio,cap_sys_admin+ep", False)):
        result = subprocess.run([setcap, caps, str(copy)], capture_output=True, text=True)
        if result.returncode != 0:
            pytest.skip(f"setcap does not work on {copy} (filesystem): {result.stderr.strip()}")
        assert _opened(_as_nobody(str(copy), device_node), device_node) is opens, caps
    subprocess.run([setcap, capabilities, str(copy)], check=True)
    assert not _opened(_as_nobody(str(copy), device_node, nnp=True), device_node)


# -- Kubernetes -------------------------------------------------------------------------------


def _manifest() -> dict[str, dict[str, Any]]:
    yaml = _module("yaml", "PyYAML")
    documents = [d for d in yaml.safe_load_all(DAEMONSET.read_text()) if d]
    by_kind = {document["kind"]: document for document in documents}
    assert sorted(by_kind) == ["ConfigMap", "DaemonSet"] and len(documents) == 2
    return by_kind


def _container() -> tuple[dict[str, Any], dict[str, Any]]:
    pod = _manifest()["DaemonSet"]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    return pod, container


def _host_mounts() -> dict[str, tuple[str, bool]]:
    """mountPath -> (host path, read-only) for every hostPath volume mount."""
    pod, container = _container()
    host = {v["name"]: v["hostPath"]["path"] for v in pod["volumes"] if "hostPath" in v}
    return {
        m["mountPath"]: (host[m["name"]], bool(m.get("readOnly")))
        for m in container["volumeMounts"] if m["name"] in host
    }  # fmt: skip


def test_daemonset_env_names_the_mounted_host_paths() -> None:
    _, container = _container()
    env = {e["name"]: e["value"] for e in container["env"] if "value" in e}
    roots = HostRoots.from_env(env)  # what diskprobe makes of this environment
    mounts = _host_mounts()
    assert roots.mount_prefix and mounts[roots.mount_prefix][0] == "/"
    assert mounts[roots.proc][0] == "/proc"
    assert mounts[roots.sys][0] == "/sys"
    assert mounts[roots.run_path("udev")][0] == "/run/udev"  # diskprobe reads run/udev/data
    assert mounts["/dev"][0] == "/dev"  # smartctl opens /dev/sdX
    for name in ("HOST_PROC", "HOST_SYS", "HOST_RUN"):
        assert env[name].startswith(roots.mount_prefix + "/"), name


def test_daemonset_host_mounts_are_read_only_except_the_state_directory() -> None:
    state_dir = str(Path(AgentConfig().state_file).parent)
    for path, (_, read_only) in _host_mounts().items():
        assert read_only is (path != state_dir), path
    assert _host_mounts()[state_dir] == (state_dir, False)
    _, container = _container()
    root = next(m for m in container["volumeMounts"] if m["mountPath"] == "/hostfs")
    assert root["mountPropagation"] == "HostToContainer"  # mounts made later are seen
    assert not container.get("terminationMessagePath", "/dev/termination-log").startswith("/dev/")


def test_daemonset_has_only_the_capabilities_smart_and_jobs_need() -> None:
    """SMART: SYS_RAWIO, SYS_ADMIN; [jobs] and process_io: SYS_PTRACE (reads, no attach)."""
    pod, container = _container()
    context = container["securityContext"]
    assert context["capabilities"]["drop"] == ["ALL"]
    assert sorted(context["capabilities"]["add"]) == ["SYS_ADMIN", "SYS_PTRACE", "SYS_RAWIO"]
    assert context.get("privileged") is not True
    assert context.get("allowPrivilegeEscalation") is not False  # rejected with SYS_ADMIN
    assert context.get("runAsUser") == 0 and context.get("readOnlyRootFilesystem") is True
    assert not pod.get("hostPID") and not pod.get("hostNetwork")
    assert pod.get("automountServiceAccountToken") is False
    # The image's entrypoint would drop to the telegraf user and lose the capabilities.
    assert container["command"][0] == "telegraf"


def test_daemonset_configmap_holds_the_telegraf_and_diskprobe_files() -> None:
    data = _manifest()["ConfigMap"]["data"]
    assert data["diskprobe.toml"] == render_sample_config(), (
        f"the ConfigMap's diskprobe.toml is not `diskprobe --sample-config`: {REGENERATE}"
    )
    assert data["diskprobe.conf"] == EXECD_CONF.read_text(), (
        f"the ConfigMap's diskprobe.conf is not telegraf/diskprobe.conf: {REGENERATE}"
    )
    telegraf = tomllib.loads(data["telegraf.conf"])
    assert "inputs" not in telegraf and telegraf["outputs"]  # diskprobe comes from the .d dir
    _, container = _container()
    command = container["command"]
    files = {m["mountPath"]: m["subPath"] for m in container["volumeMounts"] if "subPath" in m}
    assert files[_option(command, "--config")] == "telegraf.conf"
    conf_dir = _option(command, "--config-directory")
    assert files[f"{conf_dir}/diskprobe.conf"] == "diskprobe.conf"
    assert files[_option(_execd(data["diskprobe.conf"])["command"], "--config")] == (
        "diskprobe.toml"
    )


def test_daemonset_fits_the_kubernetes_schema() -> None:
    try:
        validate = importlib.import_module("kubernetes_validate")
    except ImportError:
        skip_or_fail("kubernetes-validate is not installed (the test extra has it)")
    for document in _manifest().values():
        for version in ("1.25.0", validate.latest_version()):
            validate.validate(document, version, strict=True)  # raises on any error


def _prometheus_pod() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    yaml = _module("yaml", "PyYAML")
    (document,) = [d for d in yaml.safe_load_all(PROMETHEUS_DAEMONSET.read_text()) if d]
    assert document["kind"] == "DaemonSet"
    template = document["spec"]["template"]
    (container,) = template["spec"]["containers"]
    return template["metadata"], template["spec"], container


def test_prometheus_daemonset_is_scraped_where_diskprobe_listens() -> None:
    metadata, _, container = _prometheus_pod()
    annotations = metadata["annotations"]
    command = container["command"]
    assert command[0] == "/opt/diskprobe/bin/diskprobe"  # where telegraf/Dockerfile puts it
    assert _option(command, "--listen") == DEFAULT_LISTEN
    (port,) = container["ports"]
    assert port["containerPort"] == DEFAULT_PORT and annotations["prometheus.io/port"] == str(
        DEFAULT_PORT
    )
    assert annotations["prometheus.io/scrape"] == "true"
    assert annotations["prometheus.io/path"] == "/metrics"
    assert container["readinessProbe"]["httpGet"] == {"path": "/metrics", "port": port["name"]}
    config = load_config_text(SAMPLE_TOML.read_text(), "image")  # --config: the image's copy
    assert _option(command, "--config") == "/etc/diskprobe/diskprobe.toml" and config.io.enabled
    parse_listen(_option(command, "--listen"))


def test_prometheus_daemonset_reads_the_host_as_the_telegraf_one_does() -> None:
    telegraf_pod, telegraf = _container()
    _, pod, container = _prometheus_pod()
    assert container["env"] == [e for e in telegraf["env"] if e["name"].startswith("HOST_")]
    assert container["securityContext"] == telegraf["securityContext"]
    assert container["image"] == telegraf["image"]
    mounts = [m for m in telegraf["volumeMounts"] if m["name"] != "telegraf-config"]
    assert container["volumeMounts"] == mounts
    volumes = [v for v in telegraf_pod["volumes"] if "configMap" not in v]
    assert pod["volumes"] == volumes
    for key in ("automountServiceAccountToken", "hostPID", "tolerations", "securityContext"):
        assert pod.get(key) == telegraf_pod.get(key), key


def test_prometheus_daemonset_fits_the_kubernetes_schema() -> None:
    try:
        validate = importlib.import_module("kubernetes_validate")
    except ImportError:
        skip_or_fail("kubernetes-validate is not installed (the test extra has it)")
    yaml = _module("yaml", "PyYAML")
    (document,) = [d for d in yaml.safe_load_all(PROMETHEUS_DAEMONSET.read_text()) if d]
    for version in ("1.25.0", validate.latest_version()):
        validate.validate(document, version, strict=True)


# -- Docker -----------------------------------------------------------------------------------


def _dockerfile() -> list[dict[str, Any]]:
    parse = _module("dockerfile_parse", "dockerfile-parse")
    parser = parse.DockerfileParser(path=str(DOCKERFILE))
    instructions: list[dict[str, Any]] = parser.structure
    assert parser.baseimage.startswith("telegraf:"), parser.baseimage
    assert "alpine" not in parser.baseimage  # the RUN lines use apt-get
    return instructions


def _copies() -> list[tuple[list[str], str]]:
    copies = []
    for instruction in _dockerfile():
        if instruction["instruction"] in ("COPY", "ADD"):
            words = [w for w in shlex.split(instruction["value"]) if not w.startswith("--")]
            assert instruction["instruction"] == "COPY", "ADD fetches and unpacks; use COPY"
            copies.append((words[:-1], words[-1]))
    return copies


def _ignored(path: str) -> bool:
    patterns = [line.strip() for line in DOCKERIGNORE.read_text().splitlines()
                if line.strip() and not line.startswith("#")]  # fmt: skip
    parts = Path(path).parts
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    return any(
        re.fullmatch(re.escape(p).replace(r"\*\*/", "(?:.*/)?").replace(r"\*", "[^/]*"), prefix)
        for p in patterns for prefix in prefixes
    )  # fmt: skip


def test_dockerfile_copies_only_files_of_this_repository() -> None:
    copies = _copies()
    assert copies
    for sources, _ in copies:
        for source in sources:
            assert not source.startswith(("/", "..")) and "*" not in source, source
            assert (ROOT / source).exists(), f"COPY {source}: not in this repository"
            assert not _ignored(source), f"COPY {source}: excluded by {DOCKERIGNORE.name}"
    destination = {Path(src).name: dest for sources, dest in copies for src in sources}
    command = _execd(EXECD_CONF.read_text())["command"]
    assert destination["diskprobe.toml"] == _option(command, "--config")
    assert destination["diskprobe.conf"] == "/etc/telegraf/telegraf.d/diskprobe.conf"


def test_dockerfile_installs_what_diskprobe_runs_with() -> None:
    runs = " ".join(i["value"] for i in _dockerfile() if i["instruction"] == "RUN")
    for package in ("python3", "python3-venv", "smartmontools"):
        assert re.search(rf"\s{re.escape(package)}(\s|$)", runs), package
    venv = str(Path(_installed_binary()).parent.parent)
    assert f"python3 -m venv {venv}" in runs and f"{venv}/bin/pip install" in runs
    assert "install -d -o telegraf" in runs and str(Path(AgentConfig().state_file).parent) in runs


@pytest.mark.slow
def test_dockerfile_copies_are_enough_to_pip_install_diskprobe(tmp_path: Path) -> None:
    """The Dockerfile's COPY and pip steps, outside Docker (no engine here): a venv from
    Debian's python3 (the image's base is Debian too) gets diskprobe from the copied files."""
    rootfs = tmp_path / "rootfs"

    def ignore(directory: str, names: list[str]) -> list[str]:
        relative = os.path.relpath(directory, ROOT)
        return [name for name in names if _ignored(os.path.join(relative, name))]

    for sources, destination in _copies():  # Docker's rules: a directory's contents, a file
        target = rootfs / destination.lstrip("/")
        for source in sources:
            origin = ROOT / source
            if origin.is_dir():
                shutil.copytree(origin, target, ignore=ignore, dirs_exist_ok=True)
            else:
                where = target / origin.name if destination.endswith("/") else target
                where.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(origin, where)
    runs = " ".join(i["value"] for i in _dockerfile() if i["instruction"] == "RUN")
    pip = re.search(r'/bin/pip install (?:--?[\w-]+ )*"?(/[^\s"\[]+)(\[[\w,]+\])?"?', runs)
    assert pip, "no `pip install /path` in the Dockerfile"
    assert pip.group(2) == "[web]", "the image serves /metrics with TLS: it needs the web extra"
    package = rootfs / pip.group(1).lstrip("/")
    python = shutil.which("python3", path="/usr/bin") or sys.executable
    venv = tmp_path / "venv"
    subprocess.run([python, "-m", "venv", str(venv)], check=True)
    install = subprocess.run(
        [str(venv / "bin" / "pip"), "install", "-q", "--no-cache-dir", f"{package}[web]"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert install.returncode == 0, install.stderr[-3000:]
    printed = subprocess.run(
        [str(venv / "bin" / "diskprobe"), "--sample-config"], capture_output=True, text=True
    )
    assert printed.stdout == SAMPLE_TOML.read_text()
    extra = subprocess.run([str(venv / "bin" / "python"), "-c", "import bcrypt, yaml"])
    assert extra.returncode == 0, "the web extra did not come with the image's install"


# -- documents --------------------------------------------------------------------------------


def test_every_repository_path_the_deployment_files_name_exists() -> None:
    named = set()
    ours = [
        p
        for p in TELEGRAF.rglob("*")
        if p.is_file() and "collectd" not in p.parts and p.name != "prometheus.md"
    ]  # other helpers' files
    for path in ours:
        text = path.read_text()
        named |= set(re.findall(r"(?<![\w/.-])((?:telegraf|tests|plugin)/[\w./-]*\w)", text))
    assert named
    missing = sorted(p for p in named if not (ROOT / p).exists() and "*" not in p)
    assert not missing, f"named but not in the repository: {missing}"


# -- regeneration -----------------------------------------------------------------------------


def _replace_block(text: str, key: str, content: str) -> str:
    """Replace the literal block scalar `  key: |` of the ConfigMap with `content`."""
    block = "".join(f"    {line}\n" if line else "\n" for line in content.splitlines())
    pattern = re.compile(rf"^(  {re.escape(key)}: \|\n)((?:    .*\n|\n)*)", re.M)
    assert pattern.search(text), f"no `{key}: |` block in {DAEMONSET}"
    return pattern.sub(lambda match: match.group(1) + block, text, count=1)


def regenerate() -> None:
    sample = render_sample_config()
    SAMPLE_TOML.write_text(sample)
    text = _replace_block(DAEMONSET.read_text(), "diskprobe.conf", EXECD_CONF.read_text())
    DAEMONSET.write_text(_replace_block(text, "diskprobe.toml", sample))


if __name__ == "__main__":
    regenerate()
    print(f"wrote {SAMPLE_TOML.relative_to(ROOT)} and the ConfigMap in "
          f"{DAEMONSET.relative_to(ROOT)}")  # fmt: skip

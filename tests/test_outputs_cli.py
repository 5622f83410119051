"""[output] from the command line (issue #12): the installed `diskprobe --once`, one run per case.

Each kind in the new spelling delivers its batch (InfluxDB: to a loopback stand-in for the write
API); each deprecated top-level key still works and prints exactly one W! line saying what to
write instead; a conflict or a broken cross-field rule is one E! line and exit status 2.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PROM_HEAD = "# HELP diskprobe_"
BASE = "[smart]\nenabled = false\n[process_io]\nenabled = false\n[cgroup_io]\nenabled = false\n"


def _diskprobe() -> list[str]:
    script = Path(sys.executable).parent / "diskprobe"  # the installed console script
    return [str(script)] if script.is_file() else [sys.executable, "-m", "diskprobe"]


def _write_config(tmp_path: Path, top: str, output: dict[str, str]) -> Path:
    """The test's config: `top` (top-level keys), the sections, then [output] from `output`."""
    config = tmp_path / "diskprobe.toml"
    state = json.dumps(str(tmp_path / "state.json"))
    table = "".join(f"{key} = {json.dumps(value)}\n" for key, value in output.items())
    config.write_text(
        f"state_file = {state}\n{top}{BASE}" + (f"[output]\n{table}" if table else "")
    )
    return config


def _run(
    tmp_path: Path, top: str = "", args: tuple[str, ...] = (), **output: str
) -> subprocess.CompletedProcess[str]:
    config = _write_config(tmp_path, top, output)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HOST_", "COLLECTD_"))}
    return subprocess.run(
        [*_diskprobe(), "--config", str(config), "--once", *args],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip


def _marked(result: subprocess.CompletedProcess[str], prefix: str) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith(prefix)]


def test_stdout_in_the_new_spelling(tmp_path: Path) -> None:
    result = _run(tmp_path, kind="stdout", format="influx")
    assert result.returncode == 0, result.stderr
    assert "diskprobe_io," in result.stdout and not _marked(result, "W! ")
    collectd = _run(tmp_path, kind="stdout", format="collectd")
    assert collectd.returncode == 0 and collectd.stdout.startswith("PUTVAL "), collectd.stderr


def test_textfile_in_the_new_spelling(tmp_path: Path) -> None:
    target = tmp_path / "diskprobe.prom"
    result = _run(tmp_path, kind="textfile", path=str(target), format="prometheus")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "" and not _marked(result, "W! ")
    assert target.read_text().startswith(PROM_HEAD) and target.stat().st_mode & 0o777 == 0o644


def test_influxdb_in_the_new_spelling(
    tmp_path: Path, write_api: tuple[str, list[tuple[str, bytes]]]
) -> None:
    url, bodies = write_api
    token = tmp_path / "token"
    token.write_text("cli-token\n")
    result = _run(
        tmp_path, kind="influxdb", format="influx", url=url, org="o", bucket="b",
        token_file=str(token), spool_dir=str(tmp_path / "spool"),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout == "" and not _marked(result, "W! ") and not _marked(result, "E! ")
    assert len(bodies) == 1 and "bucket=b" in bodies[0][0] and "/api/v2/write" in bodies[0][0]
    assert b"diskprobe_io," in bodies[0][1]


def test_deprecated_textfile_and_format_work_with_one_warning(tmp_path: Path) -> None:
    target = tmp_path / "old.prom"
    result = _run(tmp_path, f'format = "prometheus"\ntextfile = {json.dumps(str(target))}\n')
    assert result.returncode == 0, result.stderr
    assert _marked(result, "W! ") == [
        f"W! config: {tmp_path / 'diskprobe.toml'}: top-level 'format' and 'textfile' are "
        f'deprecated; write [output] kind = "textfile", path = "{target}" and '
        'format = "prometheus" instead'
    ]
    assert result.stdout == "" and target.read_text().startswith(PROM_HEAD)


@pytest.mark.parametrize(
    ("toml", "written"),
    [('format = "collectd"\n', '[output] format = "collectd"'),
     ('textfile = ""\n', "remove it")],
    ids=["format", "empty-textfile"],
)  # fmt: skip
def test_each_deprecated_key_alone_gives_exactly_one_warning(
    tmp_path: Path, toml: str, written: str
) -> None:
    result = _run(tmp_path, toml)
    assert result.returncode == 0, result.stderr
    warnings = _marked(result, "W! ")
    assert len(warnings) == 1 and written in warnings[0], result.stderr
    assert warnings[0].startswith(f"W! config: {tmp_path / 'diskprobe.toml'}: top-level ")
    assert result.stdout.startswith("PUTVAL " if "collectd" in toml else "diskprobe_")


def test_textfile_flag_still_works(tmp_path: Path) -> None:
    target = tmp_path / "flag.prom"
    result = _run(tmp_path, args=("--format", "prometheus", "--textfile", str(target)))
    assert result.returncode == 0, result.stderr
    assert result.stdout == "" and not _marked(result, "W! ")
    assert target.read_text().startswith(PROM_HEAD)


@pytest.mark.parametrize(
    ("toml", "keys", "message"),
    [
        ('textfile = "/tmp/a.prom"\n', {"kind": "stdout"},
         "top-level 'textfile' = \"/tmp/a.prom\" disagrees with [output] kind = \"stdout\""),
        ('format = "influx"\n', {"format": "collectd"},
         "top-level 'format' = \"influx\" disagrees with [output] format = \"collectd\""),
        ("", {"kind": "textfile"}, '[output] kind = "textfile" needs path'),
        ("", {"path": "/tmp/a.prom"}, '[output] path is for kind = "textfile" only'),
        ("", {"kind": "influxdb", "url": "http://127.0.0.1:9", "bucket": "b",
              "format": "prometheus"},
         '[output] kind = "influxdb" writes format = "influx" only, not format = "prometheus"'),
    ],
    ids=["conflict-textfile", "conflict-format", "textfile-no-path", "path-stdout",
         "influxdb-prometheus"],
)  # fmt: skip
def test_refused_output_configs_are_one_error_line(
    tmp_path: Path, toml: str, keys: dict[str, str], message: str
) -> None:
    result = _run(tmp_path, toml, (), **keys)
    config = tmp_path / "diskprobe.toml"
    assert result.returncode == 2 and result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"E! config: {config}: {message}"), lines

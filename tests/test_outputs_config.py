"""[output] is the one place that says where batches go and in which format (issue #12).

Loading: the new spelling per kind, the deprecated top-level `format` / `textfile` (moved into
[output], one deprecation line, a ConfigError when they disagree with [output]), the cross-field
rules, flags through the same checks, and the token file checked at load. The command line
(the installed `diskprobe --once`) is in test_outputs_cli.py.
"""

from __future__ import annotations

import inspect
import os
import re
from pathlib import Path

import pytest

from diskprobe import outputs
from diskprobe.config import ConfigError, OutputConfig, load_config_text
from diskprobe.config import load_text_with_deprecations as load
from diskprobe.config.sample import render_sample_config
from diskprobe.log import Logger
from diskprobe.outputs import OutputFailed, open_output
from diskprobe.outputs.influxdb import InfluxDBOutput
from diskprobe.outputs.stdout import StreamOutput
from diskprobe.outputs.textfile import TextfileOutput

ROOT = Path(__file__).resolve().parent.parent
PROM = "/var/lib/prometheus/node-exporter/diskprobe.prom"
INFLUX = '[output]\nkind = "influxdb"\nurl = "http://influxdb:8086"\nbucket = "b"\n'


def test_each_kind_in_the_new_spelling_loads_without_deprecations() -> None:
    stdout = load('[output]\nkind = "stdout"\nformat = "collectd"\n', "d.toml")
    textfile = load(f'[output]\nkind = "textfile"\npath = "{PROM}"\nformat = "prometheus"\n', "")
    influx = load(INFLUX, "d.toml")
    assert (stdout.config.output.kind, stdout.config.output.format) == ("stdout", "collectd")
    assert textfile.config.output == OutputConfig(kind="textfile", path=PROM, format="prometheus")
    assert influx.config.output.kind == "influxdb" and influx.config.output.format == "influx"
    assert stdout.deprecations == textfile.deprecations == influx.deprecations == ()
    assert load("", "").config.output == OutputConfig()  # stdout, influx


@pytest.mark.parametrize(
    ("text", "output", "deprecation"),
    [
        ('format = "prometheus"\n', OutputConfig(format="prometheus"),
         "top-level 'format' is deprecated; write [output] format = \"prometheus\" instead"),
        (f'textfile = "{PROM}"\n', OutputConfig(kind="textfile", path=PROM),
         f"top-level 'textfile' is deprecated; write [output] kind = \"textfile\" and "
         f'path = "{PROM}" instead'),
        (f'format = "prometheus"\ntextfile = "{PROM}"\n',
         OutputConfig(kind="textfile", path=PROM, format="prometheus"),
         "top-level 'format' and 'textfile' are deprecated; write [output] kind = \"textfile\", "
         f'path = "{PROM}" and format = "prometheus" instead'),
        ('textfile = ""\n', OutputConfig(),
         "top-level 'textfile' is deprecated; remove it (an empty 'textfile' means stdout, "
         "the default)"),
        ('format = "influx"\n' + INFLUX, None,  # agrees with [output]: accepted
         "top-level 'format' is deprecated; write [output] format = \"influx\" instead"),
        ('format = "collectd"\n[output]\nformat = "collectd"\n', OutputConfig(format="collectd"),
         "top-level 'format' is deprecated; write [output] format = \"collectd\" instead"),
    ],
    ids=["format", "textfile", "both", "empty-textfile", "agrees-influxdb", "agrees-format"],
)  # fmt: skip
def test_deprecated_top_level_keys_still_work_with_one_deprecation(
    text: str, output: OutputConfig | None, deprecation: str
) -> None:
    loaded = load(text, "old.toml")
    assert output is None or loaded.config.output == output
    assert loaded.deprecations == (f"old.toml: {deprecation}",)
    assert load_config_text(text, "old.toml") == loaded.config  # same config, no lines


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('format = "collectd"\n[output]\nformat = "prometheus"\n',
         "top-level 'format' = \"collectd\" disagrees with [output] format = \"prometheus\""),
        (f'textfile = "{PROM}"\n' + INFLUX,
         f"top-level 'textfile' = \"{PROM}\" disagrees with [output] kind = \"influxdb\""),
        (f'textfile = "{PROM}"\n[output]\npath = "/tmp/other.prom"\n',
         f"top-level 'textfile' = \"{PROM}\" disagrees with [output] path = \"/tmp/other.prom\""),
        ('textfile = "/a"\n[output]\nkind = "stdout"\n', 'disagrees with [output] kind = "stdout"'),
        ('format = "json"\n', "'format': 'json' is not one of influx, collectd, prometheus"),
        ("textfile = 5\n", "'textfile' must be of type str, not int"),
        ('format = "influx"\noutput = 3\n', "'output' must be a table ([output])"),
    ],
    ids=["format", "textfile-kind", "textfile-path", "textfile-stdout", "bad-format",
         "bad-textfile", "output-not-a-table"],
)  # fmt: skip
def test_old_and_new_spelling_in_conflict_is_one_config_error(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load(text, "both.toml")
    assert str(caught.value).startswith("both.toml: ") and "\n" not in str(caught.value)
    assert message in str(caught.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[output]\nkind = "textfile"\n', '[output] kind = "textfile" needs path'),
        (f'[output]\npath = "{PROM}"\n', '[output] path is for kind = "textfile" only, '
         'not kind = "stdout"'),
        (INFLUX + f'path = "{PROM}"\n', 'not kind = "influxdb"'),
        (INFLUX + 'format = "prometheus"\n', '[output] kind = "influxdb" writes format = '
         '"influx" only, not format = "prometheus"'),
        ('format = "collectd"\n' + INFLUX, 'not format = "collectd"'),  # the old spelling too
        ('[output]\nkind = "influxdb"\nbucket = "b"\n', '[output] kind = "influxdb" needs url'),
        ('[output]\nkind = "textfile"\npath = "/a\\u0000b"\n', "'path' must not contain a NUL"),
        ('[output]\nkind = "file"\n', "'file' is not one of stdout, textfile, influxdb"),
    ],
    ids=["textfile-no-path", "path-stdout", "path-influxdb", "influxdb-prometheus",
         "influxdb-old-collectd", "influxdb-no-url", "path-nul", "bad-kind"],
)  # fmt: skip
def test_cross_field_rules_of_output(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load(text, "d.toml")
    assert str(caught.value).startswith("d.toml: ") and message in str(caught.value)


def test_flags_set_output_keys_through_the_same_checks() -> None:
    textfile = [("--textfile", "output.kind", "textfile"), ("--textfile", "output.path", PROM)]
    config = load_config_text(INFLUX, "d.toml", textfile)  # --textfile wins over the file
    assert (config.output.kind, config.output.path) == ("textfile", PROM)
    formatted = load_config_text("", "", [("--format", "output.format", "prometheus")])
    assert formatted.output.format == "prometheus"
    with pytest.raises(ConfigError, match='kind = "textfile" needs path'):
        load_config_text("", "", [("--output", "output.kind", "textfile")])
    with pytest.raises(ConfigError, match='path is for kind = "textfile" only'):
        load_config_text("", "", [*textfile, ("--output", "output.kind", "stdout")])
    with pytest.raises(ConfigError, match=r"^--format: 'json' is not one of"):
        load_config_text("", "", [("--format", "output.format", "json")])


def test_collectd_interval_follows_the_format_in_either_spelling() -> None:
    env = {"COLLECTD_INTERVAL": "2.5"}
    assert load_config_text('[output]\nformat = "collectd"\n', "", env=env).interval == 2.5
    assert load_config_text('format = "collectd"\n', "old.toml", env=env).interval == 2.5
    assert load_config_text("", "", env=env).interval == 10.0  # influx: collectd is not the host


def test_token_file_is_read_at_load(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("secret-token\n")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    binary = tmp_path / "binary"
    binary.write_bytes(b"\xff\xfe\n")
    load_config_text(INFLUX + f'token_file = "{token}"\n', "d.toml")
    refused = [(tmp_path, "is not a regular file"), (fifo, "is not a regular file"),
               (tmp_path / "missing", "No such file"), (binary, "not UTF-8 text")]  # fmt: skip
    for path, problem in refused:
        with pytest.raises(ConfigError) as caught:  # a FIFO: refused, never waited on
            load_config_text(INFLUX + f'token_file = "{path}"\n', "d.toml")
        assert str(caught.value).startswith("d.toml: [output]: 'token_file': ")
        assert problem in str(caught.value) and "secret" not in str(caught.value)


def _influxdb(tmp_path: Path, token_file: str = "") -> OutputConfig:
    spool = str(tmp_path / "spool")
    return OutputConfig(kind="influxdb", url="http://x", bucket="b", spool_dir=spool,
                        token_file=token_file)  # fmt: skip


def test_opening_can_fail_only_as_an_output_failure(tmp_path: Path) -> None:
    """Config is checked at load; what fails when the output opens is OutputFailed (exit 1)."""
    gone = _influxdb(tmp_path, token_file=str(tmp_path / "gone"))  # removed after the load
    with pytest.raises(OutputFailed, match=r"cannot read the token_file .*gone: No such file"):
        InfluxDBOutput(gone, Logger(), env={}, start=False)
    first = InfluxDBOutput(_influxdb(tmp_path), Logger(), env={}, start=False)
    try:
        with pytest.raises(OutputFailed, match=r"spool_dir .* in use by another diskprobe"):
            InfluxDBOutput(_influxdb(tmp_path), Logger(), env={}, start=False)
    finally:
        first.close()
    package = Path(outputs.__file__).parent
    for module in package.glob("*.py"):  # no config rule is checked, or raised, in an output
        assert "ConfigError" not in module.read_text(), module.name


def test_open_output_picks_the_kind(tmp_path: Path) -> None:
    log, path = Logger(), str(tmp_path / "x.prom")
    stdout = open_output(OutputConfig(), log, stopping=lambda: False)
    textfile = open_output(OutputConfig(kind="textfile", path=path), log, stopping=lambda: False)
    influx = open_output(_influxdb(tmp_path), log, stopping=lambda: False)
    try:
        assert isinstance(stdout, StreamOutput) and isinstance(textfile, TextfileOutput)
        assert isinstance(influx, InfluxDBOutput) and textfile.path == path
    finally:
        influx.close()
    assert "ConfigError" not in inspect.getsource(open_output)


def test_sample_config_spells_everything_about_the_output_in_output() -> None:
    text = render_sample_config()
    top, _, rest = text.partition("\n[")
    assert "# format =" not in top and "# textfile =" not in top
    output = rest[rest.index("output]") :]
    keys = re.findall(r"^  # (\w+) = ", output, re.M)
    assert keys[:3] == ["kind", "format", "path"] and "url" in keys and "textfile" not in keys
    assert '"stdout"' in output and '"textfile"' in output and '"influxdb"' in output


def test_prometheus_doc_config_block_is_the_new_spelling() -> None:
    text = (ROOT / "telegraf" / "prometheus.md").read_text()
    blocks = re.findall(r"```toml\n(.*?)```", text, re.S)
    assert blocks, "telegraf/prometheus.md has no toml block"
    for block in blocks:
        loaded = load(block, "prometheus.md")
        assert loaded.deprecations == () and loaded.config.output.kind == "textfile"
        assert loaded.config.output.format == "prometheus"

"""The web config (exporter-toolkit's --web.config.file): the toolkit's own files load as the
toolkit reads them, everything else is one ValueError "PATH:LINE: what", never a traceback.

The YAML files quoted below are exporter-toolkit's (github.com/prometheus/exporter-toolkit),
byte for byte: docs/web-config.yml @3f030d10 and web/testdata/*.yml at the commits named.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from diskprobe.config.web_config import MAX_BYTES, TlsSettings, WebConfig, load_web_config

ALICE = "$2y$10$mDwo.lAisC94iLAyP81MCesa29IzH37oigHC/42V2pdJlUprsJPze"
BOB = "$2y$10$hLqFl9jSjoAAy95Z/zw8Ye8wkdMBM8c5Bn1ptYqP/AXyV0.oy0S8m"
# docs/web-config.yml @3f030d10aa2c98614c1879583e92296363fa54db
DOCS_SAMPLE = f"""\
# TLS and basic authentication configuration example.
#
# Additionally, a certificate and a key file are needed.
tls_server_config:
  cert_file: server.crt
  key_file: server.key

# Usernames and passwords required to connect.
# Passwords are hashed with bcrypt: https://github.com/prometheus/exporter-toolkit/blob/master/docs/web-configuration.md#about-bcrypt.
basic_auth_users:
  alice: {ALICE}
  bob: {BOB}
"""
# web/testdata/web_config_headers.good.yml @5ee3e9c1
HEADERS_GOOD = """\
http_server_config:
  headers:
    X-Frame-Options: deny
    Strict-Transport-Security: max-age=31536000; includeSubDomains
    X-Content-Type-Options: nosniff
    X-XSS-Protection: 1
    Content-Security-Policy: "default-src 'self' *.test.example.net"
"""
# web/testdata/tls_config_noAuth.requireandverifyclientcert.good.yml @3702b71b
VERIFY_GOOD = """\
tls_server_config:
  cert_file: "server.crt"
  key_file: "server.key"
  client_auth_type: "RequireAndVerifyClientCert"
  client_ca_file: "client_selfsigned.pem"
"""
# web/testdata/tls_config_noAuth_someCurves.good.yml @283b4c29: "key :" spacing, a sequence
# at its key's indentation, and curve_preferences, which diskprobe refuses.
SOME_CURVES = """\
tls_server_config :
  cert_file : "server.crt"
  key_file : "server.key"
  client_auth_type : "VerifyClientCertIfGiven"
  client_ca_file : "tls-ca-chain.pem"
  min_version: TLS13
  curve_preferences:
  - CurveP521
"""
# The toolkit's .bad.yml files: the toolkit refuses them, and so does diskprobe.
TOOLKIT_BAD = {
    # web/testdata/tls_config_noAuth_wrongTLSVersion.bad.yml @3702b71b
    "wrong_tls_version": ('tls_server_config :\n  cert_file : "server.crt"\n  key_file : '
                          '"server.key"\n  client_auth_type : "VerifyClientCertIfGiven"\n'
                          "  min_version: TLS111\n", 5, "unknown TLS version 'TLS111'"),
    # web/testdata/web_config_auth_user_list_invalid.bad.yml @07336a0a
    "user_list_invalid": ('tls_server_config:\n  cert_file: "server.crt"\n  key_file: '
                          '"server.key"\nbasic_auth_users:\n  john: doe\n', 5,
                          "the password of 'john' is not a bcrypt hash"),
    # web/testdata/web_config_headers_extra_header.bad.yml @5ee3e9c1
    "extra_header": ("http_server_config:\n  headers:\n    Content-Type: foo\n", 3,
                     "unknown key 'Content-Type' in headers"),
    # web/testdata/web_config_headers_frame_options.bad.yml @5ee3e9c1 (its value: "foo")
    "frame_options": ("http_server_config:\n  headers:\n    X-Frame-Options: foo\n", 3,
                      "invalid value for X-Frame-Options: expected one of deny, sameorigin"),
}  # fmt: skip


def write(tmp_path: Path, text: str | bytes, name: str = "web.yml") -> str:
    path = tmp_path / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return str(path)


def refused(path: str) -> str:
    with pytest.raises(ValueError) as caught:
        load_web_config(path)
    assert type(caught.value) is ValueError  # not a subclass leaking the parser's internals
    message = str(caught.value)
    assert "\n" not in message, message
    return message


def test_the_docs_sample_loads_with_paths_next_to_the_file(tmp_path: Path) -> None:
    config = load_web_config(write(tmp_path, DOCS_SAMPLE))
    tls = TlsSettings(cert_file=str(tmp_path / "server.crt"), key_file=str(tmp_path / "server.key"))
    assert config == WebConfig(tls=tls, users={"alice": ALICE, "bob": BOB}, headers={})
    assert ALICE not in repr(config)  # a hash is still a secret: never in a log line


def test_the_toolkits_header_file_loads_every_header(tmp_path: Path) -> None:
    config = load_web_config(write(tmp_path, HEADERS_GOOD))
    assert config.tls is None and config.users == {}
    assert config.headers == {
        "X-Frame-Options": "deny",
        "Strict-Transport-Security": "max-age=31536000; includeSubDomains",
        "X-Content-Type-Options": "nosniff",
        "X-XSS-Protection": "1",
        "Content-Security-Policy": "default-src 'self' *.test.example.net",
    }


def test_client_verification_from_the_toolkits_file(tmp_path: Path) -> None:
    tls = load_web_config(write(tmp_path, VERIFY_GOOD)).tls
    assert tls is not None
    assert (tls.client_auth_type, tls.client_ca_file) == (
        "RequireAndVerifyClientCert", str(tmp_path / "client_selfsigned.pem"))  # fmt: skip
    assert (tls.min_version, tls.max_version, tls.prefer_server_cipher_suites) == (
        "TLS12", "TLS13", True)  # the toolkit's defaults  # fmt: skip


def test_the_toolkits_layout_parses_up_to_the_unsupported_key(tmp_path: Path) -> None:
    """ "key :" and "key:\\n- item" parse (the error is about the curves, on their line)."""
    message = refused(write(tmp_path, SOME_CURVES))
    assert message.startswith(f"{tmp_path / 'web.yml'}:7: tls_server_config.curve_preferences")
    assert "not supported by diskprobe" in message
    without = load_web_config(write(tmp_path, SOME_CURVES.replace("  curve_preferences:\n  - "
                                                                  "CurveP521\n", "")))  # fmt: skip
    assert without.tls is not None and without.tls.min_version == "TLS13"


@pytest.mark.parametrize("name", sorted(TOOLKIT_BAD))
def test_the_toolkits_bad_files_are_refused_on_their_line(tmp_path: Path, name: str) -> None:
    text, line, fragment = TOOLKIT_BAD[name]
    path = write(tmp_path, text)
    message = refused(path)
    assert message.startswith(f"{path}:{line}: "), message
    assert fragment in message
    assert " doe" not in message.split("john")[-1]  # the bad hash itself is never shown


# (YAML, line of the error, part of the message): every key and value the toolkit refuses,
# and every one diskprobe refuses because Python's ssl cannot do it.
TLS_ON = "tls_server_config:\n  cert_file: s.crt\n  key_file: s.key\n"
REFUSED = [
    (
        "tls_server_config:\n  cert_file: a\n  key_file: b\n  certfile: c\n",
        4,
        "unknown key 'certfile'",
    ),
    ("basic_auth_user:\n  a: b\n", 1, "unknown key 'basic_auth_user' in the web config"),
    ("basic_auth_excluded_paths:\n- /x\n", 1, "unknown key 'basic_auth_excluded_paths'"),
    ("http_server_config:\n  http3: true\n", 2, "unknown key 'http3'"),
    ("http_server_config:\n  http2: yes\n", 2, "http2: expected true or false"),
    ("http_server_config:\n  http2: 'true'\n", 2, "http2: expected true or false"),
    (
        "http_server_config:\n  headers:\n    X-Content-Type-Options: sniff\n",
        3,
        "expected one of nosniff",
    ),
    (
        "http_server_config:\n  headers:\n    x-frame-options: deny\n",
        3,
        "unknown key 'x-frame-options'",
    ),
    (
        'http_server_config:\n  headers:\n    X-XSS-Protection: "1\\r\\nSet-Cookie: a=b"\n',
        3,
        "control characters",
    ),
    ("rate_limit:\n  interval: 1s\n  burst: 10\n", 2, "rate_limit is not supported by diskprobe"),
    ("rate_limit:\n  interval: 0\n  burst: many\n", 3, "rate_limit.burst: expected an integer"),
    ("rate_limit:\n  every: 1s\n", 2, "unknown key 'every' in rate_limit"),
    ("auth_excluded_paths:\n- /health\n", 1, "auth_excluded_paths is not supported"),
    ("auth_excluded_paths: [/health]\n", 1, "auth_excluded_paths is not supported"),
    (
        TLS_ON + "  cipher_suites: [TLS_AES_128_GCM_SHA256]\n",
        4,
        "not supported by diskprobe; the system's OpenSSL defaults apply",
    ),
    (TLS_ON + "  curve_preferences:\n    - X25519\n", 4, "curve_preferences is not supported"),
    (
        TLS_ON + "  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.pem\n"
        "  client_allowed_sans:\n  - one\n",
        6,
        "client_allowed_sans is not supported",
    ),
    (
        TLS_ON + "  client_auth_type: RequireAnyClientCert\n",
        4,
        "cannot ask for a client certificate without verifying it",
    ),
    (TLS_ON + "  client_auth_type: RequestClientCert\n", 4, "RequestClientCert is not supported"),
    (TLS_ON + "  client_auth_type: RequireClientCert\n", 4, "RequireClientCert is not supported"),
    (
        TLS_ON + "  client_auth_type: VerifyClientCert\n",
        4,
        "invalid client_auth_type 'VerifyClientCert'",
    ),
    (TLS_ON + "  client_ca_file: ca.pem\n", 4, "a client CA is set without a client_auth_type"),
    (
        TLS_ON + "  client_auth_type: NoClientCert\n  client_ca: x\n",
        5,
        "a client CA is set without",
    ),
    (
        TLS_ON + "  client_auth_type: RequireAndVerifyClientCert\n",
        4,
        "needs client_ca_file or client_ca",
    ),
    (TLS_ON + "  cert: PEM\n", 4, "cert and cert_file are both set"),
    (TLS_ON + "  key: PEM\n", 4, "key and key_file are both set"),
    (
        TLS_ON
        + "  client_auth_type: RequireAndVerifyClientCert\n  client_ca: a\n  client_ca_file: b\n",
        6,
        "client_ca and client_ca_file are both set",
    ),
    (TLS_ON + "  min_version: TLS14\n", 4, "unknown TLS version 'TLS14' for min_version"),
    (TLS_ON + "  max_version: SSL3\n", 4, "unknown TLS version 'SSL3' for max_version"),
    (TLS_ON + '  min_version: ""\n', 4, "unknown TLS version ''"),
    (
        TLS_ON + "  min_version: TLS13\n  max_version: TLS12\n",
        4,
        "min_version TLS13 is above max_version TLS12",
    ),
    (TLS_ON + "  prefer_server_cipher_suites: 1\n", 4, "expected true or false"),
    ("tls_server_config:\n  key_file: s.key\n", 1, "missing one of cert or cert_file"),
    ("tls_server_config:\n  cert_file: s.crt\n", 1, "missing one of key or key_file"),
    (
        "tls_server_config:\n  client_auth_type: NoClientCert\n",
        1,
        "missing one of cert or cert_file",
    ),
    ("tls_server_config: s.crt\n", 1, "tls_server_config: expected a mapping of keys"),
    (
        "tls_server_config:\n  cert_file: [a, b]\n  key_file: k\n",
        2,
        "expected one value, not a list",
    ),
    ("basic_auth_users:\n- alice\n", 2, "basic_auth_users: expected a mapping of keys"),
    (
        f"basic_auth_users:\n  alice: {ALICE[:-1]}\n",
        2,
        "the password of 'alice' is not a bcrypt hash",
    ),
    (f"basic_auth_users:\n  alice: {ALICE.replace('$10$', '$03$')}\n", 2, "cost 04 to 31"),
    (f"basic_auth_users:\n  alice: {ALICE.replace('$2y$', '$2x$')}\n", 2, "not a bcrypt hash"),
    (f"basic_auth_users:\n  alice: {ALICE.replace('$2y$', '$6$')}\n", 2, "not a bcrypt hash"),
    (f"basic_auth_users:\n  'al:ice': {ALICE}\n", 2, "holds a ':'"),
    (f"basic_auth_users:\n  alice:\n    hash: {ALICE}\n", 3, "expected one value"),
    # issue #25: an empty list of users meant no authentication at all, silently
    ("basic_auth_users: {}\n", 1, "basic_auth_users lists no user"),
    ("basic_auth_users:\n", 1, "basic_auth_users lists no user"),
    ("", 1, "the file holds no settings"),
    ("---\n# nothing but comments\n", 1, "the file holds no settings"),
    ("- a\n- b\n", 1, "the web config: expected a mapping of keys"),
]


@pytest.mark.parametrize(("text", "line", "fragment"), REFUSED)
def test_bad_keys_and_values_are_refused_on_their_line(
    tmp_path: Path, text: str, line: int, fragment: str
) -> None:
    path = write(tmp_path, text)
    message = refused(path)
    assert message.startswith(f"{path}:{line}: "), message
    assert fragment in message, message
    assert ALICE[7:] not in message and ALICE[7:-1] not in message  # never a hash


# Refused by diskprobe's own strictness (config/yaml_nodes.py), with the line.
OUTSIDE = [
    ("basic_auth_users:\n  alice: &h x\n", 2, "anchors (&name) are not supported"),
    ("basic_auth_users:\n  alice: *h\n", 2, "aliases (*name) are not supported"),
    ("basic_auth_users:\n  alice: !!str x\n", 2, "tags (!tag) are not supported"),
    ("basic_auth_users:\n  alice: ! x\n", 2, "tags (!tag) are not supported"),
    ("&anchor key: value\n", 1, "anchors (&name) are not supported"),
    ("base: &b {a: b}\nother:\n  <<: *b\n", 1, "anchors (&name) are not supported"),
    ("http_server_config:\n  <<: {headers: {}}\n", 2, "merge keys (<<) are not supported"),
    ("basic_auth_users:\n  alice: a\n  alice: b\n", 3, "duplicate key 'alice' (first on line 2)"),
    ("basic_auth_users:\n  alice: a\n  'alice': b\n", 3, "duplicate key 'alice'"),
    ("[a, b]: value\n", 1, "a key must be plain text, not a list or a mapping"),
    ("a: b\n---\nc: d\n", 2, "expected a single document"),
    ("---\n---\na: b\n", 2, "expected a single document"),
    ("a: b\x00c\n", 1, "control character '\\x00'"),
    ("a: b\x1bc\n", 1, "control character '\\x1b'"),
    ("a:\n" + "".join(f"{'  ' * depth}k:\n" for depth in range(1, 20)), 18, "nested more than"),
    # Not YAML at all: PyYAML's own words, on the line it names
    ("http_server_config:\n\theaders: {}\n", 2, "found character '\\t' that cannot start"),
    ('basic_auth_users:\n  alice: "\\q"\n', 2, "found unknown escape character 'q'"),
    ("basic_auth_users:\n  alice: a: b\n", 2, "mapping values are not allowed here"),
    ("auth_excluded_paths: [a, b\n", 2, "expected ',' or ']'"),
    ("tls_server_config:\n    cert_file: a\n  key_file: b\n", 3, "expected <block end>"),
]


@pytest.mark.parametrize(("text", "line", "fragment"), OUTSIDE)
def test_yaml_beyond_what_is_allowed_is_refused_on_its_line(
    tmp_path: Path, text: str, line: int, fragment: str
) -> None:
    path = write(tmp_path, text)
    message = refused(path)
    assert message.startswith(f"{path}:{line}: "), message
    assert fragment in message, message


def test_block_scalars_and_flow_mappings_are_yaml_and_are_read(tmp_path: Path) -> None:
    """The hand-written subset refused them; PyYAML reads them as Go's yaml does: an inline
    PEM as a `|` block (the toolkit's docs show it), a mapping on one line."""
    path = write(tmp_path, "tls_server_config:\n  cert: |\n    -----BEGIN CERTIFICATE-----\n"
                           "    abc\n  key_file: server.key\n"
                           "http_server_config: {headers: {X-Frame-Options: deny}}\n")  # fmt: skip
    web = load_web_config(str(path))
    assert web.tls is not None and web.tls.cert == "-----BEGIN CERTIFICATE-----\nabc\n"
    assert web.tls.key_file == str(tmp_path / "server.key")
    assert web.headers == {"X-Frame-Options": "deny"}


def test_without_pyyaml_a_web_config_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "yaml", None)  # `import yaml` fails as if absent
    path = write(tmp_path, "basic_auth_users:\n  alice: x\n")
    assert refused(path) == (f"{path}: needs diskprobe's web extra: pip install "
                             "'diskprobe[web]' (PyYAML)")  # fmt: skip


def test_yaml_inside_the_subset_reads_as_yaml_does(tmp_path: Path) -> None:
    """Quoting, escapes, comments, CRLF, a BOM, flow and block lists, nulls: PyYAML agrees."""
    yaml = pytest.importorskip("yaml")  # a test dependency (pyproject's test extra)
    text = (
        "\ufeff--- # a document start\r\n"
        "tls_server_config:   # TLS\r\n"
        "  cert_file: 'it''s a#b.crt'   # comment\r\n"
        '  key_file: "d\\u00e9j\\x41\\t\\"q\\" \\\\ # not a comment"\r\n'
        "  client_ca_file: ~\r\n"
        "  min_version:\r\n"
        "  prefer_server_cipher_suites: False\r\n"
        "  cipher_suites: []\r\n"
        "  curve_preferences:\r\n"
        "auth_excluded_paths: [ ]\r\n"
        "http_server_config: {}\r\n"
    )
    path = write(tmp_path, text.encode("utf-8"))
    tls = load_web_config(path).tls
    expected = yaml.safe_load(text.lstrip("\ufeff"))["tls_server_config"]
    assert tls is not None
    assert tls.cert_file == str(tmp_path / expected["cert_file"]) == str(tmp_path / "it's a#b.crt")
    assert tls.key_file == str(tmp_path / expected["key_file"])
    assert expected["key_file"] == 'déjA\t"q" \\ # not a comment'
    assert (tls.client_ca_file, tls.min_version, tls.prefer_server_cipher_suites) == (
        "",
        "TLS12",
        False,
    )


def test_relative_paths_are_taken_from_the_files_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "etc").mkdir()
    write(tmp_path / "etc", "tls_server_config:\n  cert_file: certs/s.crt\n"
          "  key_file: /abs/s.key\n  client_auth_type: VerifyClientCertIfGiven\n"
          "  client_ca_file: ../ca.pem\n")  # fmt: skip
    monkeypatch.chdir(tmp_path)
    tls = load_web_config("etc/web.yml").tls  # a relative config path: still absolute results
    assert tls is not None
    assert tls.cert_file == str(tmp_path / "etc" / "certs" / "s.crt")
    assert tls.key_file == "/abs/s.key"
    assert tls.client_ca_file == os.path.join(str(tmp_path / "etc"), "../ca.pem")


def test_tls_is_off_without_certificate_key_ca_or_client_auth(tmp_path: Path) -> None:
    """As the toolkit's IsEnabled: versions alone do not turn TLS on (nor do they for it)."""
    for text in ("tls_server_config:\n", "tls_server_config:\n  min_version: TLS13\n"):
        config = load_web_config(write(tmp_path, text + "http_server_config:\n  http2: false\n"))
        assert config == WebConfig()


def test_blank_headers_are_unset_and_inline_pem_is_kept(tmp_path: Path) -> None:
    text = ('tls_server_config:\n  cert: "-----BEGIN CERTIFICATE-----\\nMII\\n"\n'
            "  key: 'k'\nhttp_server_config:\n  headers:\n    X-Frame-Options:\n"
            '    Content-Security-Policy: ""\n')  # fmt: skip
    config = load_web_config(write(tmp_path, text))
    assert config.headers == {}
    assert config.tls is not None and config.tls.cert == "-----BEGIN CERTIFICATE-----\nMII\n"
    assert config.tls.key == "k" and "'k'" not in repr(config.tls)


def test_hostile_files_give_one_value_error(tmp_path: Path) -> None:
    big = write(tmp_path, b"a: " + b"x" * (2 * 1024 * 1024) + b"\n", "big.yml")
    assert refused(big) == f"{big}: larger than {MAX_BYTES} bytes: not a web config"
    deep = write(tmp_path, "".join(" " * level + "a:\n" for level in range(1000)), "deep.yml")
    assert re.match(rf"{re.escape(deep)}:18: nested more than 16 levels deep$", refused(deep))
    wide = write(tmp_path, "a: [" + "b, " * 100000 + "c]\n", "wide.yml")
    assert "unknown key 'a'" in refused(wide)
    binary = write(tmp_path, b"tls_server_config:\n  cert_file: \xff\xfe\x00\n", "bin.yml")
    assert refused(binary) == f"{binary}:2: not UTF-8 text (byte 32)"
    for seed in range(20):
        noise = write(tmp_path, os.urandom(512 + seed), f"noise{seed}.yml")
        refused(noise)  # UTF-8 or a control character: either way one line


def test_links_fifos_and_directories(tmp_path: Path) -> None:
    """An admin's symlink (config management) is followed; a FIFO is refused, never read."""
    real = write(tmp_path, DOCS_SAMPLE, "real.yml")
    (tmp_path / "link.yml").symlink_to(real)
    assert load_web_config(str(tmp_path / "link.yml")).users == {"alice": ALICE, "bob": BOB}
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "to-fifo.yml").symlink_to(tmp_path / "fifo")
    assert refused(str(tmp_path / "to-fifo.yml")).endswith("is not a regular file")
    assert refused(str(tmp_path)).startswith(f"{tmp_path}: cannot read: ")
    (tmp_path / "dangling.yml").symlink_to(tmp_path / "missing")
    assert refused(str(tmp_path / "dangling.yml")).endswith("No such file or directory")


# Lines made of the subset's own pieces (and a few outside it): whatever they combine into,
# the loader answers with a WebConfig or one ValueError.
_PIECES = st.sampled_from([
    "tls_server_config:", "basic_auth_users:", "http_server_config:", "headers:", "- ", "-",
    "cert_file: a", "key_file: 'b'", 'client_ca: "c\\n"', "min_version: TLS13", "[a, b]", "{}",
    "alice: " + ALICE, "X-Frame-Options: deny", "http2: true", "# c", "---", "&a", "*a", "|",
    ": ", "'", '"', "\\", "\t", "#", "?", "~", "rate_limit:", "interval: 0", "[", "]", ",",
])  # fmt: skip
_LINES = st.lists(
    st.tuples(st.integers(0, 6), st.lists(_PIECES, min_size=1, max_size=3)), max_size=12
)


@settings(
    max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(lines=_LINES)
def test_any_combination_gives_a_config_or_one_value_error(
    tmp_path: Path, lines: list[tuple[int, list[str]]]
) -> None:
    text = "".join(" " * indent + " ".join(parts) + "\n" for indent, parts in lines)
    path = write(tmp_path, text)
    try:
        assert isinstance(load_web_config(path), WebConfig)
    except ValueError as error:
        assert type(error) is ValueError and str(error).startswith(f"{path}:"), error

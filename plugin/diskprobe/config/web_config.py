"""The web config file (exporter-toolkit's --web.config.file, as node_exporter reads it): TLS
and basic auth for the /metrics endpoint of output kind "http".

Same keys and checks as the toolkit (yaml.UnmarshalStrict: an unknown key is an error); what
Python's ssl cannot do as the toolkit does is refused at load with the reason, never ignored.
Parsed by PyYAML, strictly (config/yaml_nodes.py: the web extra); tls_server_config is checked
in config/web_tls.py. Errors are one ValueError, "PATH:LINE: what", or "PATH: needs diskprobe's
web extra ..." without PyYAML. Sample (the toolkit's docs/web-config.yml):
    tls_server_config:
      cert_file: server.crt
      key_file: server.key
    basic_auth_users:
      alice: $2y$10$mDwo.lAisC94iLAyP81MCesa29IzH37oigHC/42V2pdJlUprsJPze
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from diskprobe import files
from diskprobe.config.web_tls import TlsSettings, tls_settings
from diskprobe.config.yaml_nodes import (
    Entry,
    MissingExtra,
    Node,
    Scalar,
    YamlError,
    boolean,
    keys,
    parse,
    shown,
    text,
    texts,
)

__all__ = ["TlsSettings", "WebConfig", "load_web_config"]
MAX_BYTES = 1 << 20  # a web config is a few hundred bytes; an inline PEM chain a few kB
# Exactly the toolkit's (web/handler.go extraHTTPHeaders): the values of an enumeration.
HEADERS: dict[str, tuple[str, ...]] = {
    "Content-Security-Policy": (),
    "X-Frame-Options": ("deny", "sameorigin"),
    "X-Content-Type-Options": ("nosniff",),
    "X-XSS-Protection": (),
    "Strict-Transport-Security": (),
}
# Both versions of the toolkit's docs: rate_limit (0.14) and auth_excluded_paths (later).
TOP_KEYS = ("tls_server_config", "http_server_config", "basic_auth_users", "rate_limit",
            "auth_excluded_paths")  # fmt: skip
# "$2y$10$" + 22 characters of salt + 31 of hash, as htpasswd -nBC 10 and Go's bcrypt write
# them; the toolkit's bcrypt.Cost refuses anything else at start.
BCRYPT = re.compile(r"\$2[aby]\$(0[4-9]|[12][0-9]|3[01])\$[./A-Za-z0-9]{53}")
_ZERO_DURATION = re.compile(r"0+(\.0*)?(ns|us|µs|ms|s|m|h)?")  # Go's "0", "0s": no limiter
_NULL: Entry = (0, Scalar(None, 0, True))


@dataclass(frozen=True)
class WebConfig:
    """tls None: plain HTTP. users empty: no basic auth. headers: added to every answer."""

    tls: TlsSettings | None = None
    users: dict[str, str] = field(default_factory=dict, repr=False)  # user -> bcrypt hash
    headers: dict[str, str] = field(default_factory=dict)


def load_web_config(path: str) -> WebConfig:
    """The web config in `path`; ValueError ("PATH:LINE: what") if it is not one diskprobe
    can serve exactly as node_exporter would. Relative file names are taken from the file's
    directory, as the toolkit does."""
    data = _read(path)
    try:
        return _build(parse(data), os.path.dirname(os.path.abspath(path)))
    except YamlError as error:
        raise ValueError(f"{path}:{error.line}: {error.what}") from None
    except MissingExtra as error:
        raise ValueError(f"{path}: {error}") from None


def _read(path: str) -> str:
    try:
        data = files.read_regular(path, MAX_BYTES, private=False)  # a FIFO never blocks
    except files.TooBig:
        raise ValueError(f"{path}: larger than {MAX_BYTES} bytes: not a web config") from None
    except OSError as error:
        raise ValueError(f"{path}: cannot read: {error.strerror or error}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise ValueError(f"{path}:{line}: not UTF-8 text (byte {error.start})") from None


def _build(root: Node | None, directory: str) -> WebConfig:
    if root is None or (isinstance(root, Scalar) and root.value is None):
        # node_exporter serves plain HTTP for it: more likely a failed deploy
        raise YamlError(1, "the file holds no settings (TLS and basic auth would be off)")
    sections = keys((1, root), TOP_KEYS, "the web config")
    tls = None
    if "tls_server_config" in sections:
        tls = tls_settings(sections["tls_server_config"], directory)
    _refuse_unsupported(sections)
    headers = _headers(sections.get("http_server_config", _NULL))
    users = _users(sections.get("basic_auth_users", _NULL))
    if "basic_auth_users" in sections and not users:  # issue #25: it silently meant "no auth"
        raise YamlError(sections["basic_auth_users"][0], "basic_auth_users lists no user, so "
                        "every request would be let in: list the users, or remove the key "
                        "to serve without basic auth")  # fmt: skip
    return WebConfig(tls, users, headers)


def _refuse_unsupported(sections: dict[str, Entry]) -> None:
    limit = keys(sections.get("rate_limit", _NULL), ("interval", "burst"), "rate_limit")
    if "burst" in limit and not re.fullmatch(r"[-+]?[0-9]+", text(limit["burst"], "burst")):
        raise YamlError(limit["burst"][0], "rate_limit.burst: expected an integer")
    interval = text(limit["interval"], "rate_limit.interval") if "interval" in limit else ""
    if interval and not _ZERO_DURATION.fullmatch(interval):
        raise YamlError(limit["interval"][0], "rate_limit is not supported by diskprobe "
                        "(max_clients bounds the scrapes served at once): remove it, or set "
                        "interval: 0")  # fmt: skip
    excluded = sections.get("auth_excluded_paths")
    if excluded is not None and texts(excluded, "auth_excluded_paths"):
        raise YamlError(excluded[0], "auth_excluded_paths is not supported by diskprobe: "
                        "every path asks for the credentials")  # fmt: skip


def _headers(entry: Entry) -> dict[str, str]:
    """http_server_config: the headers added to every answer (http2 is checked, then moot)."""
    server = keys(entry, ("http2", "headers"), "http_server_config")
    if "http2" in server:
        # true (the toolkit's default) or false: either way diskprobe serves HTTP/1.x, which
        # every Prometheus speaks (node_exporter offers HTTP/2 over TLS only).
        boolean(server["http2"], "http_server_config.http2")
    headers = {}
    for name, value in keys(server.get("headers", _NULL), tuple(HEADERS), "headers").items():
        written = text(value, f"headers.{name}")
        if written and HEADERS[name] and written not in HEADERS[name]:
            raise YamlError(value[0], f"invalid value for {name}: expected one of "
                            f"{', '.join(HEADERS[name])}, got {shown(written)}")  # fmt: skip
        if re.search(r"[\x00-\x1f\x7f]", written):  # "\r\n" would end the header: injection
            raise YamlError(value[0], f"headers.{name}: control characters in the value")
        if written:  # blank: unset, as the toolkit's docs say
            headers[name] = written
    return headers


def _users(entry: Entry) -> dict[str, str]:
    users = {}
    for user, value in keys(entry, None, "basic_auth_users").items():
        hashed = text(value, f"basic_auth_users.{shown(user)}")
        if not BCRYPT.fullmatch(hashed):  # never shown: a hash is still a secret
            raise YamlError(value[0], f"basic_auth_users: the password of {shown(user)} is not a "
                            "bcrypt hash ($2y$, $2b$ or $2a$, cost 04 to 31, 60 characters), "
                            "e.g. from: htpasswd -nBC 10 \"\" | tr -d ':\\n'")  # fmt: skip
        if ":" in user:  # basic auth sends "user:password": the first colon ends the name
            raise YamlError(value[0], f"basic_auth_users: {shown(user)} holds a ':', which HTTP "
                            "basic auth cannot send in a user name")  # fmt: skip
        users[user] = hashed
    return users

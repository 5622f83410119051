"""tls_server_config of the web config (config/web_config.py): exporter-toolkit's keys and
checks (web/tls_config.go), and a refusal with the reason for what Python's ssl cannot do as
Go's crypto/tls does. outputs/http_tls.py turns the result into an ssl.SSLContext.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from diskprobe.config.yaml_nodes import (
    Entry,
    Scalar,
    YamlError,
    boolean,
    keys,
    shown,
    text,
    texts,
)

VERIFIED_CLIENT_AUTH = ("NoClientCert", "VerifyClientCertIfGiven", "RequireAndVerifyClientCert")
# Go's RequestClientCert and RequireAnyClientCert (old spelling: RequireClientCert) ask for a
# client certificate without checking it; OpenSSL checks every certificate it asks for.
UNVERIFIED_CLIENT_AUTH = ("RequestClientCert", "RequireAnyClientCert", "RequireClientCert")
TLS_VERSIONS = ("TLS10", "TLS11", "TLS12", "TLS13")  # in order
FILE_KEYS = ("cert_file", "key_file", "client_ca_file")  # relative: from the file's directory
TEXT_KEYS = (*FILE_KEYS, "cert", "key", "client_ca", "client_auth_type", "min_version",
             "max_version")  # fmt: skip
TLS_KEYS = (*TEXT_KEYS, "cipher_suites", "curve_preferences", "client_allowed_sans",
            "prefer_server_cipher_suites")  # fmt: skip
UNSUPPORTED = {
    "cipher_suites": "not supported by diskprobe; the system's OpenSSL defaults apply: remove "
    "the key",
    "curve_preferences": "not supported by diskprobe (Python's ssl takes no curve list); the "
    "system's OpenSSL defaults apply: remove the key",
    "client_allowed_sans": "not supported by diskprobe (Python's ssl cannot match a client "
    "certificate's SANs in the handshake): give a client CA that signs only allowed clients",
}
ENABLING = (*FILE_KEYS, "cert", "key", "client_ca", "client_auth_type")  # IsEnabled's
_PAIRS = (("cert", "cert_file"), ("key", "key_file"), ("client_ca", "client_ca_file"))


@dataclass(frozen=True)
class TlsSettings:
    """What the server's ssl.SSLContext is made of; each PEM from a file or inline, never both."""

    cert_file: str = ""  # absolute path, or "" when `cert` holds the PEM
    key_file: str = ""
    cert: str = ""  # inline PEM
    key: str = field(default="", repr=False)  # an inline private key: never in a repr
    client_ca_file: str = ""
    client_ca: str = ""
    client_auth_type: str = "NoClientCert"  # one of VERIFIED_CLIENT_AUTH
    min_version: str = "TLS12"  # one of TLS_VERSIONS
    max_version: str = "TLS13"
    prefer_server_cipher_suites: bool = True


def tls_settings(entry: Entry, directory: str) -> TlsSettings | None:
    """tls_server_config's settings; None (plain HTTP) when it sets no certificate, key, CA or
    client_auth_type, as the toolkit's TLSConfig.IsEnabled. YamlError if it cannot be served."""
    found = keys(entry, TLS_KEYS, "tls_server_config")
    for name, why in UNSUPPORTED.items():
        if texts(found.get(name), f"tls_server_config.{name}"):
            raise YamlError(found[name][0], f"tls_server_config.{name} is {why}")
    values = {name: text(found[name], name) for name in TEXT_KEYS if name in found}
    for name in FILE_KEYS:
        if values.get(name):  # the toolkit's SetDirectory: "server.crt" is next to the config
            values[name] = os.path.join(directory, values[name])
    for inline, path in _PAIRS:
        if values.get(inline) and values.get(path):
            line = max(found[inline][0], found[path][0])
            raise YamlError(line, f"tls_server_config: {inline} and {path} are both set: give one")
    prefer = "prefer_server_cipher_suites"
    settings = TlsSettings(
        cert_file=values.get("cert_file", ""),
        key_file=values.get("key_file", ""),
        cert=values.get("cert", ""),
        key=values.get("key", ""),
        client_ca_file=values.get("client_ca_file", ""),
        client_ca=values.get("client_ca", ""),
        client_auth_type=_client_auth(found, values.get("client_auth_type", "")),
        min_version=_version(found, "min_version", "TLS12"),
        max_version=_version(found, "max_version", "TLS13"),
        prefer_server_cipher_suites=boolean(found[prefer], prefer) if prefer in found else True,
    )
    if not any(values.get(name) for name in ENABLING):
        return None
    _check(settings, found, entry[0])
    return settings


def _client_auth(found: dict[str, Entry], written: str) -> str:
    if written in UNVERIFIED_CLIENT_AUTH:
        raise YamlError(found["client_auth_type"][0], f"client_auth_type {written} is not "
                        "supported by diskprobe: Python's ssl cannot ask for a client "
                        "certificate without verifying it; use RequireAndVerifyClientCert "
                        "with a client_ca_file")  # fmt: skip
    if written and written not in VERIFIED_CLIENT_AUTH:
        raise YamlError(
            found["client_auth_type"][0],
            f"invalid client_auth_type {shown(written)} "
            f"(known: {', '.join(VERIFIED_CLIENT_AUTH + UNVERIFIED_CLIENT_AUTH)})",
        )
    return written or "NoClientCert"


def _version(found: dict[str, Entry], name: str, default: str) -> str:
    entry = found.get(name)
    if entry is None or (isinstance(entry[1], Scalar) and entry[1].value is None):
        return default  # "min_version:" is Go's zero value: the default
    written = text(entry, name)
    if written not in TLS_VERSIONS:
        raise YamlError(entry[0], f"unknown TLS version {shown(written)} for {name} "
                        f"(known: {', '.join(TLS_VERSIONS)})")  # fmt: skip
    return written


def _check(settings: TlsSettings, found: dict[str, Entry], line: int) -> None:
    """The toolkit's checks of a TLS config that is on (ConfigToTLSConfig), and diskprobe's."""
    if not (settings.cert or settings.cert_file):
        raise YamlError(line, "tls_server_config: missing one of cert or cert_file")
    if not (settings.key or settings.key_file):
        raise YamlError(line, "tls_server_config: missing one of key or key_file")
    has_ca = bool(settings.client_ca or settings.client_ca_file)
    ca_line = max((found[name][0] for name in ("client_ca", "client_ca_file") if name in found),
                  default=line)  # fmt: skip
    if has_ca and settings.client_auth_type == "NoClientCert":
        raise YamlError(ca_line, "tls_server_config: a client CA is set without a client_auth_type "
                        "that verifies clients (RequireAndVerifyClientCert)")  # fmt: skip
    if not has_ca and settings.client_auth_type != "NoClientCert":
        # Go would verify clients against the system's CAs: any public certificate would pass.
        raise YamlError(
            found["client_auth_type"][0],
            f"client_auth_type {settings.client_auth_type} needs client_ca_file or client_ca",
        )
    low, high = (TLS_VERSIONS.index(v) for v in (settings.min_version, settings.max_version))
    if low > high:
        where = found.get("min_version") or found["max_version"]
        raise YamlError(
            where[0],
            f"min_version {settings.min_version} is above "
            f"max_version {settings.max_version}: no TLS version is left",
        )

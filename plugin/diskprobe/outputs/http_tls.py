"""The TLS side of output kind "http": an ssl.SSLContext from the web config's
tls_server_config (config/web_tls.py), made once at start.

Python's ssl loads a certificate and key from files only: an inline PEM (cert, key) is written
to a private directory (0700, the file 0600), loaded and deleted at once. Any problem is one
ValueError line naming the key and the file, never a traceback, never a password prompt.
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import socket
import ssl
import tempfile
import time
import warnings
from typing import Callable, Iterator, NoReturn

from diskprobe import files
from diskprobe.config.web_tls import TlsSettings

__all__ = ["handshake", "server_context"]
VERSIONS = {
    "TLS10": ssl.TLSVersion.TLSv1,
    "TLS11": ssl.TLSVersion.TLSv1_1,
    "TLS12": ssl.TLSVersion.TLSv1_2,
    "TLS13": ssl.TLSVersion.TLSv1_3,
}
# Go's names -> OpenSSL's. VerifyClientCertIfGiven: a certificate sent must verify, none is
# fine; RequireAndVerifyClientCert: one must be sent and verify (the only secure one).
CLIENT_AUTH = {
    "NoClientCert": ssl.CERT_NONE,
    "VerifyClientCertIfGiven": ssl.CERT_OPTIONAL,
    "RequireAndVerifyClientCert": ssl.CERT_REQUIRED,
}
MAX_PEM_BYTES = 1 << 20  # a CA bundle is ~200 kB
# "-----BEGIN ENCRYPTED PRIVATE KEY-----" (PKCS#8), "Proc-Type: 4,ENCRYPTED" (OpenSSL's old PEM)
_ENCRYPTED = re.compile(rb"-----BEGIN ENCRYPTED PRIVATE KEY-----|Proc-Type: *4, *ENCRYPTED")
# "[X509: KEY_VALUES_MISMATCH] key values mismatch (_ssl.c:3917)": the C source is no help
_SOURCE = re.compile(r" \(_ssl\.c:\d+\)$")


def server_context(tls: TlsSettings) -> ssl.SSLContext:
    """A server context as the toolkit's tls.Config: certificate and key, TLS versions,
    client verification against the client CA. ValueError (one line) if it cannot be made."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    with warnings.catch_warnings():  # TLS10, TLS11: deprecated, and the admin's choice
        warnings.simplefilter("ignore", DeprecationWarning)
        # The system's OpenSSL policy still applies: at Debian's security level 2, TLS 1.0
        # and 1.1 handshakes fail whatever min_version says.
        context.minimum_version = VERSIONS[tls.min_version]
        context.maximum_version = VERSIONS[tls.max_version]
    if tls.prefer_server_cipher_suites:  # on by default in Python; Go >= 1.18 ignores it
        context.options |= ssl.OP_CIPHER_SERVER_PREFERENCE
    else:
        context.options &= ~ssl.OP_CIPHER_SERVER_PREFERENCE
    with _pem_files(tls) as (cert, key):
        try:
            context.load_cert_chain(cert, key, password=_encrypted)  # its ValueError: as is
        except OSError as error:  # ssl.SSLError too
            raise ValueError(f"tls_server_config: cannot load the certificate "
                             f"({tls.cert_file or 'cert'}) and key ({tls.key_file or 'key'}): "
                             f"{_reason(error)}") from None  # fmt: skip
    context.verify_mode = CLIENT_AUTH[tls.client_auth_type]
    if tls.client_ca or tls.client_ca_file:
        ca = tls.client_ca or _read(tls.client_ca_file, "client_ca_file").decode("ascii", "replace")
        try:
            context.load_verify_locations(cadata=ca)
        except (ssl.SSLError, ValueError) as error:
            raise ValueError(
                f"tls_server_config: cannot load the client CA "
                f"({tls.client_ca_file or 'client_ca'}): {_reason(error)}"
            ) from None
    return context


@contextlib.contextmanager
def _pem_files(tls: TlsSettings) -> Iterator[tuple[str, str]]:
    """(certificate file, key file): the configured ones, checked; inline PEM as temp files."""
    cert_pem = tls.cert.encode() if tls.cert else _read(tls.cert_file, "cert_file")
    _check_pem(cert_pem, tls.cert_file or "cert", "CERTIFICATE", "certificate")
    key_pem = tls.key.encode() if tls.key else _read(tls.key_file, "key_file")
    _check_pem(key_pem, tls.key_file or "key", "PRIVATE KEY", "private key")
    if _ENCRYPTED.search(key_pem):
        _encrypted()
    if not (tls.cert or tls.key):
        yield tls.cert_file, tls.key_file
        return
    with tempfile.TemporaryDirectory(prefix="diskprobe-tls-") as private:  # mode 0700
        cert = tls.cert_file or _spill(private, "cert.pem", tls.cert)
        key = tls.key_file or _spill(private, "key.pem", tls.key)
        yield cert, key  # loaded by the caller; the directory is removed right after


def _spill(directory: str, name: str, pem: str) -> str:
    path = os.path.join(directory, name)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(pem)
    return path


def _check_pem(pem: bytes, source: str, label: str, what: str) -> None:
    """A clearer error than OpenSSL's "[SSL] PEM lib" for a file that holds no PEM at all."""
    if not re.search(rb"-----BEGIN ([A-Z0-9 ]+ )?" + label.encode() + rb"-----", pem):
        raise ValueError(f"tls_server_config: {source} holds no {what} in PEM "
                         f"('-----BEGIN {label}-----')")  # fmt: skip


def _read(path: str, name: str) -> bytes:
    """The file's bytes; a FIFO given as key_file never blocks the start (files.read_regular)."""
    try:
        return files.read_regular(path, MAX_PEM_BYTES, private=False)
    except OSError as error:  # files.TooBig and UnsafeFile say what they are in str()
        reason = str(error) if isinstance(error, files.TooBig) else error.strerror or str(error)
        raise ValueError(f"tls_server_config: {name} {path}: {reason}") from None


def _encrypted() -> NoReturn:
    # Also load_cert_chain's password callback: without one, OpenSSL would prompt on the
    # terminal and wait. The toolkit (Go's X509KeyPair) takes no password either.
    raise ValueError(
        "tls_server_config: the key is encrypted (diskprobe takes no password): "
        "give one without, e.g. from: openssl pkey -in encrypted.pem -out key.pem"
    )


def _reason(error: Exception) -> str:
    if isinstance(error, ssl.SSLError) and error.reason == "KEY_VALUES_MISMATCH":
        return "the key is not the certificate's"
    if isinstance(error, ssl.SSLError) and "PEM lib" in str(error):  # "[SSL] PEM lib (_ssl.c:3917)"
        return "a certificate or key in it is not valid PEM"
    if isinstance(error, OSError) and not isinstance(error, ssl.SSLError) and error.strerror:
        return error.strerror
    return _SOURCE.sub("", str(error.args[1] if len(error.args) > 1 else error))


def handshake(
    client: socket.socket,
    context: ssl.SSLContext,
    seconds: float,
    wrapped_as: Callable[[ssl.SSLSocket], None] = lambda _: None,
) -> ssl.SSLSocket:
    """The client's socket after a TLS handshake finished within `seconds` in all (a socket
    timeout restarts with every byte: a client dripping its hello would stay for hours).
    `wrapped_as` gets the TLS socket, which takes over the descriptor from `client`, before
    the handshake's first byte. OSError (ssl.SSLError, TimeoutError) if it did not finish."""
    deadline = time.monotonic() + seconds
    wrapped = context.wrap_socket(client, server_side=True, do_handshake_on_connect=False)
    try:
        wrapped_as(wrapped)
        wrapped.setblocking(False)
        while True:
            try:
                wrapped.do_handshake()
                break
            except ssl.SSLWantReadError:
                readable, writable = [wrapped], []
            except ssl.SSLWantWriteError:
                readable, writable = [], [wrapped]
            left = deadline - time.monotonic()
            if left <= 0 or not any(select.select(readable, writable, [], left)[:2]):
                raise socket.timeout("the TLS handshake took too long")
        wrapped.setblocking(True)
    except BaseException:
        wrapped.close()  # it owns the descriptor now: the caller's socket is detached
        raise
    return wrapped

"""Basic auth (the bcrypt package, from the web extra) and the TLS server context of output
kind "http": real bcrypt hashes made here, real TLS handshakes against certificates made here."""

from __future__ import annotations

import base64
import datetime
import http.client
import ipaddress
import os
import secrets
import socket
import ssl
import stat
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path
from typing import Any, Callable

import pytest

from diskprobe.config.web_config import load_web_config
from diskprobe.config.web_tls import TlsSettings
from diskprobe.outputs import http_auth
from diskprobe.outputs.http_auth import DECOY, BasicAuth, bcrypt_problem, crypt, verify
from diskprobe.outputs.http_tls import server_context

from ci import HANG_GUARD_SEC, guarded, skip_or_fail

# One worker for the whole file under xdist: its module fixture is set up once (lanes.py).
pytestmark = pytest.mark.xdist_group("test_http_auth_tls")

BCRYPT_ALPHABET = "./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


@pytest.fixture(scope="module", autouse=True)
def _bcrypt() -> None:
    """Skipped (failed under CI) only without the bcrypt package (the web extra, and the test
    extra); a bcrypt that computes but verifies wrongly fails the tests below."""
    try:
        crypt(b"", "$2b$04$" + "." * 22)
    except OSError as error:
        skip_or_fail(f"no bcrypt here: {error}")


def make_hash(password: bytes, cost: int = 4) -> str:
    """A bcrypt hash made here: a random salt, its last character one that uses no spare bits."""
    salt = "".join(secrets.choice(BCRYPT_ALPHABET) for _ in range(21)) + secrets.choice(".Oeu")
    hashed = crypt(password, f"$2b${cost:02d}${salt}")
    assert hashed is not None and len(hashed) == 60 and hashed.startswith(f"$2b${cost:02d}${salt}")
    return hashed


def basic(user: bytes, password: bytes) -> str:
    return "Basic " + base64.b64encode(user + b":" + password).decode()


class Counting:
    """http_auth.verify, counting its calls and the most that ran at once."""

    def __init__(self, pause: float = 0.0) -> None:
        self.calls: list[tuple[bytes, str]] = []
        self.running = self.most = 0
        self.pause = pause
        self.lock = threading.Lock()

    def __call__(self, password: bytes, hashed: str) -> bool:
        with self.lock:
            self.calls.append((password, hashed))
            self.running += 1
            self.most = max(self.most, self.running)
        time.sleep(self.pause)
        try:
            return verify(password, hashed)
        finally:
            with self.lock:
                self.running -= 1


def test_crypt_gives_the_reference_vector_and_the_toolkits_decoy() -> None:
    # Openwall crypt_blowfish's published vector: an implementation independent of this one.
    vector = "$2a$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW"
    assert crypt(b"U*U", vector) == vector
    assert verify(b"fakepassword", DECOY) and not verify(b"fakepassword ", DECOY)
    assert crypt(b"x", "$2b$04$short") is None and crypt(b"x", "$6$x$") != DECOY
    assert not verify(b"x", "not a hash") and not verify(b"", "")


def test_bcrypt_problem_is_none_here_and_names_the_extra_without_bcrypt(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert bcrypt_problem() is None
    monkeypatch.setitem(sys.modules, "bcrypt", None)  # `import bcrypt` fails as if absent
    problem = bcrypt_problem()
    assert problem == http_auth.EXTRA and "pip install 'diskprobe[web]'" in problem
    with pytest.raises(OSError):
        BasicAuth({"a": DECOY}).allows(basic(b"a", b"fakepassword"))


def test_a_salt_with_spare_bits_set_still_verifies() -> None:
    """A salt's last character with its unused bits set: Go's bcrypt accepts the hash, pyca's
    refuses the salt; crypt() makes it canonical, and the checksum is what is compared."""
    hashed = make_hash(b"pw")
    odd = hashed[:28] + BCRYPT_ALPHABET[BCRYPT_ALPHABET.index(hashed[28]) + 1] + hashed[29:]
    assert crypt(b"pw", odd) != odd and verify(b"pw", odd) and not verify(b"pX", odd)


def test_right_wrong_and_unknown() -> None:
    auth = BasicAuth({"alice": make_hash(b"s3cret"), "bob": make_hash("pässword".encode())})
    assert auth.allows(basic(b"alice", b"s3cret"))
    assert auth.allows("basic  " + basic(b"alice", b"s3cret")[6:])  # RFC 7617: case-insensitive
    assert auth.allows(basic(b"bob", "pässword".encode()))
    assert not auth.allows(basic(b"alice", b"s3cret!"))
    assert not auth.allows(basic(b"alice", b"S3CRET"))
    assert not auth.allows(basic(b"bob", b"s3cret"))
    assert not auth.allows(basic(b"carol", b"s3cret"))
    assert not auth.allows(basic(b"carol", b"fakepassword"))  # the decoy's own password
    assert not BasicAuth({}).allows(basic(b"", b""))


GOOD = b"alice:s3cret!"  # 13 bytes: its base64 ends in "=="


@pytest.mark.parametrize(
    "header",
    [
        None,
        "",
        "Basic",
        "Basic ",
        "Bearer " + base64.b64encode(GOOD).decode(),
        "Basic !!!!",
        "Basic " + base64.b64encode(GOOD).decode().rstrip("="),  # no padding
        "Basic " + base64.b64encode(GOOD).decode() + " extra",
        "Basic " + base64.b64encode(GOOD).decode() + "==",
        "Basic " + base64.b64encode(GOOD.replace(b":", b"")).decode(),  # no colon
        basic(b"\xffalice", b"s3cret!"),  # a user name that is not UTF-8
        basic(b"alice", b"s3cret!\x00trailing"),  # C would stop at the NUL: "s3cret!"
        "Basic " + "é" * 8,  # http.server decodes headers as Latin-1
        "Basic " + "A" * 100_000,
    ],
)
def test_malformed_headers_are_refused_without_an_exception(header: str | None) -> None:
    auth = BasicAuth({"alice": make_hash(b"s3cret!"), "\ufffdalice": make_hash(b"s3cret!")})
    assert auth.allows(header) is False
    assert auth.allows("Basic " + base64.b64encode(GOOD).decode())  # the well-formed one


def test_the_cache_spares_a_second_bcrypt_and_remembers_failures() -> None:
    counting = Counting()
    auth = BasicAuth({"alice": make_hash(b"s3cret")}, verify=counting)
    for _ in range(3):
        assert auth.allows(basic(b"alice", b"s3cret"))
    assert len(counting.calls) == 1
    for _ in range(3):
        assert not auth.allows(basic(b"alice", b"wrong"))
    assert len(counting.calls) == 2
    assert not auth.allows(basic(b"mallory", b"wrong"))  # unknown: one bcrypt all the same
    assert not auth.allows(basic(b"mallory", b"wrong"))
    assert len(counting.calls) == 3
    assert [password for password, _hashed in counting.calls] == [b"s3cret", b"wrong", b"wrong"]


def test_the_cache_is_bounded_and_keeps_the_recent() -> None:
    counting = Counting()
    auth = BasicAuth({"alice": make_hash(b"s3cret")}, verify=counting)
    assert auth.allows(basic(b"alice", b"s3cret"))
    for guess in range(http_auth.CACHE_SIZE + 50):
        assert not auth.allows(basic(b"alice", b"guess%d" % guess))
    assert len(auth._cache) <= http_auth.CACHE_SIZE  # the bound itself
    before = len(counting.calls)
    assert not auth.allows(basic(b"alice", b"guess%d" % (http_auth.CACHE_SIZE + 49)))
    assert len(counting.calls) == before  # the latest guess is still cached
    assert auth.allows(basic(b"alice", b"s3cret"))
    assert len(counting.calls) == before + 1  # the first was evicted: checked again, still right


def test_passwords_are_never_cache_keys() -> None:
    auth = BasicAuth({"alice": make_hash(b"s3cret")})
    auth.allows(basic(b"alice", b"s3cret"))
    assert all(b"s3cret" not in key and len(key) == 32 for key in auth._cache)


def test_unknown_users_cost_the_users_bcrypt() -> None:
    counting = Counting()
    BasicAuth({"a": make_hash(b"x", cost=4)}, verify=counting).allows(basic(b"zed", b"x"))
    assert counting.calls[-1][1].startswith("$2y$04$")  # the users' cost, not the decoy's 10
    toolkit_cost = BasicAuth({"a": DECOY}, verify=counting)
    assert not toolkit_cost.allows(basic(b"zed", b"fakepassword"))  # the decoy's own password
    assert counting.calls[-1] == (b"fakepassword", DECOY)  # cost 10: the toolkit's decoy itself
    assert toolkit_cost.allows(basic(b"a", b"fakepassword"))  # the same check, a known user
    assert not BasicAuth({"a": make_hash(b"x", cost=4)}).allows(basic(b"zed", b"x"))


def test_every_check_costs_the_same_whoever_asks() -> None:
    """Issue #25, item 6: users of different costs (here 4 and 5). Before, a wrong password of
    a known cost-4 user cost one cost-4 bcrypt and an unknown user one at 5: the time told
    which names exist. Now every check, right or wrong, known or not, a password over bcrypt's
    72 bytes included, runs one bcrypt at each cost, in the same order: counted, not timed."""
    users = {"low": make_hash(b"pw-low", cost=4), "high": make_hash(b"pw-high", cost=5)}
    counting = Counting()
    auth = BasicAuth(users, verify=counting)
    asked = [(b"low", b"wrong"), (b"high", b"wrong"), (b"nobody", b"wrong"),
             (b"low", b"pw-low" + b"x" * 80), (b"low", b"pw-low"),
             (b"high", b"pw-high")]  # fmt: skip
    results, costs = [], []
    for user, password in asked:
        before = len(counting.calls)
        results.append(auth.allows(basic(user, password)))
        costs.append([hashed[4:6] for _, hashed in counting.calls[before:]])
    assert results == [False, False, False, False, True, True]
    assert all(cost == ["04", "05"] for cost in costs), costs


def test_a_password_longer_than_bcrypt_reads_fails() -> None:
    """bcrypt reads 72 bytes: a longer password whose first 72 are right must not pass (Go's
    bcrypt refuses it outright); it fails at the same cost as any other failure."""
    password = b"p" * 72
    auth = BasicAuth({"alice": make_hash(password, cost=4)})
    assert auth.allows(basic(b"alice", password))
    assert not auth.allows(basic(b"alice", password + b"extra"))


def test_one_bcrypt_at_a_time() -> None:
    counting = Counting(pause=0.02)
    auth = BasicAuth({"alice": make_hash(b"s3cret")}, verify=counting)
    results: list[bool] = []
    threads = [
        threading.Thread(target=lambda n=n: results.append(auth.allows(basic(b"alice", b"%d" % n))))
        for n in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert results == [False] * 8 and len(counting.calls) == 8 and counting.most == 1


# -- TLS ----------------------------------------------------------------------------------------


class Pki:
    """A CA, a server certificate for 127.0.0.1 and localhost, and two client certificates:
    one the CA signed, one self-signed. PEM files in `directory`."""

    def __init__(self, directory: Path) -> None:
        try:
            from cryptography import x509
            from cryptography.hazmat.primitives import hashes, serialization
            from cryptography.hazmat.primitives.asymmetric import ec
            from cryptography.x509.oid import NameOID
        except ImportError:
            skip_or_fail("the cryptography package (to make test certificates) is not installed")
        self.x509, self.hashes, self.ec, self.oid = x509, hashes, ec, NameOID
        self.serialization = serialization
        self.directory = directory
        ca_key, ca = self._issue("diskprobe test CA", None, ca=True)
        self.ca = self._write("ca.pem", ca, None)
        names = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
        key, cert = self._issue("server", (ca_key, ca), sans=names)
        self.server_cert, self.server_key = self._write("server.crt", cert, key, "server.key")
        key, cert = self._issue("client", (ca_key, ca))
        self.client_cert, self.client_key = self._write("client.crt", cert, key, "client.key")
        key, cert = self._issue("stranger", None)
        self.stranger_cert, self.stranger_key = self._write("other.crt", cert, key, "other.key")
        self.encrypted_key = str(directory / "encrypted.key")
        Path(self.encrypted_key).write_bytes(key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(b"pw")))  # fmt: skip

    def _issue(self, name: str, issuer: Any, ca: bool = False, sans: Any = None) -> Any:
        x509 = self.x509
        key = self.ec.generate_private_key(self.ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(self.oid.COMMON_NAME, name)])
        now = datetime.datetime.now(datetime.timezone.utc)
        builder = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(issuer[1].subject if issuer else subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        )
        # Key identifiers and a CA's key usage: Python 3.13's default client context checks
        # certificates strictly (VERIFY_X509_STRICT) and refuses chains without them.
        builder = builder.add_extension(
            x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False
        ).add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(
                issuer[0].public_key() if issuer else key.public_key()
            ),
            critical=False,
        )
        if ca:
            usage = dict.fromkeys(
                (
                    "content_commitment",
                    "key_encipherment",
                    "data_encipherment",
                    "key_agreement",
                    "encipher_only",
                    "decipher_only",
                ),
                False,
            )
            builder = builder.add_extension(
                x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True, **usage),
                critical=True,
            )
        if sans:
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        return key, builder.sign(issuer[0] if issuer else key, self.hashes.SHA256())

    def _write(self, name: str, cert: Any, key: Any, key_name: str = "") -> Any:
        pem = self.serialization
        (self.directory / name).write_bytes(cert.public_bytes(pem.Encoding.PEM))
        if key is None:
            return str(self.directory / name)
        (self.directory / key_name).write_bytes(key.private_bytes(
            pem.Encoding.PEM, pem.PrivateFormat.PKCS8, pem.NoEncryption()))  # fmt: skip
        return str(self.directory / name), str(self.directory / key_name)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return Pki(tmp_path_factory.mktemp("pki"))


def handshake(server: ssl.SSLContext, client: ssl.SSLContext) -> dict[str, Any]:
    """One TLS connection over loopback: what each side saw (a server-side error, the
    client's version and peer certificate, the bytes the client read)."""
    seen: dict[str, Any] = {}
    with socket.create_server(("127.0.0.1", 0)) as listener:
        listener.settimeout(10)

        def serve() -> None:
            conn, _ = listener.accept()
            conn.settimeout(10)
            try:
                with server.wrap_socket(conn, server_side=True) as tls:
                    seen["client_cert"] = tls.getpeercert()
                    tls.sendall(b"hello\n")
            except (ssl.SSLError, OSError) as error:
                seen["server_error"] = error

        thread = threading.Thread(target=serve)
        thread.start()
        try:
            with (
                socket.create_connection(listener.getsockname(), timeout=10) as raw,
                client.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
            ):
                seen["version"] = tls.version()
                seen["read"] = tls.recv(100)
        except (ssl.SSLError, OSError) as error:
            seen["client_error"] = error
        thread.join(10)
    return seen


def client_context(pki: Pki, cert: tuple[str, str] | None = None) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=pki.ca)  # verifies the server and its name
    if cert is not None:
        context.load_cert_chain(*cert)
    return context


def test_a_real_handshake_with_files(pki: Pki) -> None:
    server = server_context(TlsSettings(cert_file=pki.server_cert, key_file=pki.server_key))
    seen = handshake(server, client_context(pki))
    assert seen.get("read") == b"hello\n", seen
    assert seen["version"] == "TLSv1.3" and seen["client_cert"] is None


def test_inline_pem_goes_through_a_private_file_removed_at_once(
    pki: Pki, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # our own: CI runs alongside
    modes: list[tuple[int, int]] = []
    original = ssl.SSLContext.load_cert_chain

    def spy(self: ssl.SSLContext, certfile: str, keyfile: str, **kwargs: Any) -> None:
        modes.append((os.stat(os.path.dirname(keyfile)).st_mode, os.stat(keyfile).st_mode))
        original(self, certfile, keyfile, **kwargs)

    monkeypatch.setattr(ssl.SSLContext, "load_cert_chain", spy)
    settings = TlsSettings(
        cert=Path(pki.server_cert).read_text(), key=Path(pki.server_key).read_text()
    )
    server = server_context(settings)
    assert [(stat.S_IMODE(d), stat.S_IMODE(f)) for d, f in modes] == [(0o700, 0o600)]
    assert list(tmp_path.iterdir()) == []  # deleted once loaded
    assert handshake(server, client_context(pki)).get("read") == b"hello\n"


def test_min_version_is_enforced(pki: Pki) -> None:
    settings = TlsSettings(cert_file=pki.server_cert, key_file=pki.server_key, min_version="TLS13")
    old_client = client_context(pki)
    old_client.maximum_version = ssl.TLSVersion.TLSv1_2
    seen = handshake(server_context(settings), old_client)
    assert "read" not in seen and isinstance(seen.get("client_error"), ssl.SSLError), seen
    assert isinstance(seen.get("server_error"), ssl.SSLError)
    assert handshake(server_context(settings), client_context(pki)).get("version") == "TLSv1.3"
    capped = TlsSettings(cert_file=pki.server_cert, key_file=pki.server_key, max_version="TLS12")
    assert handshake(server_context(capped), client_context(pki)).get("version") == "TLSv1.2"


def test_old_tls_versions_are_allowed_without_a_warning(pki: Pki) -> None:
    """min_version TLS10 is the admin's choice: set silently (Python deprecates the names)."""
    settings = TlsSettings(cert_file=pki.server_cert, key_file=pki.server_key, min_version="TLS10")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        server = server_context(settings)
    assert server.minimum_version == ssl.TLSVersion.TLSv1
    assert handshake(server, client_context(pki)).get("version") == "TLSv1.3"


def test_require_and_verify_client_cert(pki: Pki) -> None:
    settings = TlsSettings(
        cert_file=pki.server_cert,
        key_file=pki.server_key,
        client_auth_type="RequireAndVerifyClientCert",
        client_ca_file=pki.ca,
    )
    server = server_context(settings)
    without = handshake(server, client_context(pki))
    assert "read" not in without and isinstance(without.get("server_error"), ssl.SSLError)
    stranger = handshake(server, client_context(pki, (pki.stranger_cert, pki.stranger_key)))
    assert "read" not in stranger and isinstance(stranger.get("server_error"), ssl.SSLError)
    signed = handshake(server, client_context(pki, (pki.client_cert, pki.client_key)))
    assert signed.get("read") == b"hello\n", signed
    assert dict(item[0] for item in signed["client_cert"]["subject"]) == {"commonName": "client"}


def test_verify_client_cert_if_given(pki: Pki) -> None:
    ca_pem = Path(pki.ca).read_text()
    settings = TlsSettings(
        cert_file=pki.server_cert,
        key_file=pki.server_key,
        client_auth_type="VerifyClientCertIfGiven",
        client_ca=ca_pem,
    )
    server = server_context(settings)
    assert handshake(server, client_context(pki)).get("read") == b"hello\n"
    stranger = handshake(server, client_context(pki, (pki.stranger_cert, pki.stranger_key)))
    assert "read" not in stranger and isinstance(stranger.get("server_error"), ssl.SSLError)


def test_a_web_config_file_to_a_handshake(pki: Pki, tmp_path: Path) -> None:
    """Relative names in the file, found next to it, as the toolkit resolves them."""
    for name in ("server.crt", "server.key", "ca.pem"):
        (tmp_path / name).write_bytes((Path(pki.directory) / name).read_bytes())
    (tmp_path / "web.yml").write_text(
        "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
        "  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.pem\n"
        "  min_version: TLS12\n")  # fmt: skip
    tls = load_web_config(str(tmp_path / "web.yml")).tls
    assert tls is not None
    seen = handshake(server_context(tls), client_context(pki, (pki.client_cert, pki.client_key)))
    assert seen.get("read") == b"hello\n", seen


def test_tls_connections_before_their_request_hold_no_slot_and_close_at_header_timeout(
    pki: Pki, tmp_path: Path
) -> None:
    """Issue #37, item 2, over TLS: the handshake counts as before the request. With a single
    client slot, a connection that never starts its handshake and one that finished it but
    sends no request leave the slot to a scrape; both are closed at header_timeout (handshake
    and headers together), not before (the clock read before they connect)."""
    from diskprobe.outputs.http import HttpOutput

    web = tmp_path / "web.yml"
    web.write_text(f"tls_server_config:\n  cert_file: {pki.server_cert}\n"
                   f"  key_file: {pki.server_key}\n")  # fmt: skip
    timeout = 2.0
    output = HttpOutput("127.0.0.1:0", max_clients=1, header_timeout=timeout,
                        web_config_file=str(web))  # fmt: skip
    output.write("up 1\n")
    start = time.monotonic()
    silent = socket.create_connection(output.address, timeout=HANG_GUARD_SEC)
    raw = socket.create_connection(output.address, timeout=HANG_GUARD_SEC)
    shaken = client_context(pki).wrap_socket(raw, server_hostname="127.0.0.1")
    try:
        scrape = http.client.HTTPSConnection(*output.address, timeout=HANG_GUARD_SEC,
                                             context=client_context(pki))  # fmt: skip
        scrape.request("GET", "/metrics")
        response = guarded(scrape.getresponse, "a scrape beside them")
        assert (response.status, response.read()) == (200, b"up 1\n")
        scrape.close()
        for sock in (silent, shaken):  # never closed: a socket timeout at the hang guard
            assert sock.recv(100) == b"", "answered, not closed"
        assert time.monotonic() - start >= timeout, "closed before header_timeout"
    finally:
        silent.close()
        shaken.close()
        output.close()


@pytest.mark.parametrize(
    ("settings", "fragment"),
    [
        (lambda p: TlsSettings(cert_file=p.server_cert, key_file=p.client_key),
         "and key ({client_key}): the key is not the certificate's"),
        (lambda p: TlsSettings(cert_file=p.server_cert + ".missing", key_file=p.server_key),
         "cert_file {server_cert}.missing: No such file or directory"),
        (lambda p: TlsSettings(cert_file=p.server_key, key_file=p.server_key),
         "{server_key} holds no certificate in PEM"),
        (lambda p: TlsSettings(cert_file=p.server_cert, key_file=p.server_cert),
         "{server_cert} holds no private key in PEM"),
        (lambda p: TlsSettings(cert_file=p.server_cert, key_file=p.encrypted_key),
         "the key is encrypted (diskprobe takes no password)"),
        (lambda p: TlsSettings(cert_file=p.server_cert, key_file=p.server_key,
                               client_auth_type="VerifyClientCertIfGiven", client_ca="junk"),
         "cannot load the client CA (client_ca): "),
        (lambda p: TlsSettings(cert_file=p.server_cert, key_file=p.directory.as_posix()),
         "key_file {directory}: is not a regular file"),
    ],
)  # fmt: skip
def test_unusable_certificates_and_keys_are_one_line(
    pki: Pki, settings: Callable[[Pki], TlsSettings], fragment: str
) -> None:
    with pytest.raises(ValueError) as caught:
        server_context(settings(pki))
    message = str(caught.value)
    assert message.startswith("tls_server_config: ") and "\n" not in message
    assert fragment.format(**vars(pki)) in message, message
    assert "_ssl.c" not in message

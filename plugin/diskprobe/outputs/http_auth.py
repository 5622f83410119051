"""HTTP basic auth for /metrics as exporter-toolkit does it (web/handler.go, web/cache.go):
bcrypt hashes from the web config's basic_auth_users, checked one at a time, results cached.

bcrypt is the `bcrypt` package (pyca), brought by diskprobe's `web` extra
(`pip install 'diskprobe[web]'`); bcrypt_problem() says when it is missing, so that a config
asking for basic auth is refused at start, in one line naming the extra.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import secrets
import threading
from typing import Any, Callable, Iterable, Mapping

# exporter-toolkit's hash of "fakepassword": an unknown user costs one bcrypt as a known one
# does, so the time of an answer does not tell which user names exist.
DECOY = "$2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi"
CACHE_SIZE = 100  # the toolkit's; when full, the oldest tenth goes
MAX_PASSWORD = 72  # bcrypt reads no further; Go's refuses longer ones, and so does this
EXTRA = "basic auth needs diskprobe's web extra: pip install 'diskprobe[web]' (bcrypt)"
# Openwall crypt_blowfish's test vector (the $2a$ reference, identical for $2b$ and $2y$).
_KNOWN = ("$2a$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW", b"U*U")
_SALTED = 29  # "$2y$10$" and 22 characters of salt: the checksum follows
_BASIC = re.compile(r"[Bb][Aa][Ss][Ii][Cc] +([A-Za-z0-9+/]*={0,2})")  # "Basic YWxpY2U6cHc="
_ALPHABET = "./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"  # bcrypt's base64
_SETTING = re.compile(r"\$2[aby]\$[0-9]{2}\$[./A-Za-z0-9]{22}")


def _bcrypt() -> Any:
    """The bcrypt package; OSError naming the extra when it is not installed."""
    try:
        import bcrypt
    except ImportError:
        raise OSError(EXTRA) from None
    return bcrypt


def crypt(phrase: bytes, setting: str) -> str | None:
    """The bcrypt hash of `phrase` with the cost and salt of `setting` ("$2b$04$" and a salt,
    or a whole hash), or None if `setting` is no bcrypt setting. OSError without bcrypt."""
    bcrypt = _bcrypt()
    if b"\0" in phrase or not _SETTING.match(setting):  # C ends a string at NUL: "pw\0x"
        return None
    # The salt's last character carries 2 bits, its other 4 unused: Go's bcrypt takes any
    # character there, pyca's only the canonical one ("...eFzPf" is "...eFzPe"), so make it so.
    last = _ALPHABET[_ALPHABET.index(setting[_SALTED - 1]) & 0x30]
    salt = setting[: _SALTED - 1] + last
    try:
        hashed: bytes = bcrypt.hashpw(phrase[:MAX_PASSWORD], salt.encode("ascii"))
    except ValueError:  # a cost out of 4..31
        return None
    return hashed.decode("ascii")


def verify(password: bytes, hashed: str) -> bool:
    """Whether `password` is the one bcrypt `hashed` was made from, in one bcrypt's time (a
    `hashed` that is a bare setting, "$2y$12$" and salt, costs it too, then is False). The
    checksum alone is compared: the salt's unused bits may be written either way."""
    found = crypt(password, hashed)  # a password over 72 bytes costs as much, and fails
    if found is None or len(found) != len(hashed) or len(hashed) <= _SALTED:
        return False
    same = hmac.compare_digest(found[_SALTED:].encode(), hashed[_SALTED:].encode())
    return same and len(password) <= MAX_PASSWORD


def bcrypt_problem() -> str | None:
    """None if bcrypt ($2a$, $2b$ and $2y$) can be verified here, else why not."""
    try:
        hashed, password = _KNOWN
        for prefix in ("$2a$", "$2b$", "$2y$"):
            setting = prefix + hashed[4:]
            if not verify(password, setting) or verify(password + b"!", setting):
                return f"bcrypt here does not verify {prefix} hashes"
    except OSError as error:
        return str(error)
    return None


def parse_basic(header: str | None) -> tuple[str, bytes] | None:
    """ "Basic base64(user:password)" -> (user, password); None unless exactly that, with a
    UTF-8 user name. The password stays bytes: bcrypt hashes bytes, as Go's does."""
    found = _BASIC.fullmatch(header.strip()) if header else None
    if found is None:
        return None
    try:
        decoded = base64.b64decode(found.group(1), validate=True)
        user, colon, password = decoded.partition(b":")
        return (user.decode("utf-8"), password) if colon else None
    except (binascii.Error, UnicodeDecodeError):  # bad padding; a user name not in UTF-8
        return None


class BasicAuth:
    """allows(Authorization header) for the users of basic_auth_users (user -> bcrypt hash).

    Every check costs the same whoever asks: one bcrypt at each cost the users' hashes have,
    the asking user's own hash at its cost and the decoy at the others (an unknown user, or
    a password over bcrypt's 72 bytes, gets the decoy at every cost and fails). Before, an
    unknown user cost one bcrypt at the highest cost and a known cost-10 user one at 10: the
    answer's time told which names exist. One bcrypt at a time (the toolkit's bcryptMtx: a
    flood of guesses costs one core, the 8 client slots bound the queue); each result,
    failures too, cached under a keyed hash of (user, password), never the password itself.
    `verify` is the check (tests count its calls). allows() raises OSError only without
    bcrypt (the web extra): bcrypt_problem() at start refuses such a config first."""

    def __init__(
        self, users: Mapping[str, str], *, verify: Callable[[bytes, str], bool] = verify
    ) -> None:
        self._users = dict(users)
        self._verify = verify
        self._decoys = {cost: decoy_at(cost) for cost in costs(self._users.values())}
        self._secret = secrets.token_bytes(32)  # cache keys mean nothing outside this process
        self._cache: dict[bytes, bool] = {}
        self._cache_lock = threading.Lock()
        self._bcrypt_lock = threading.Lock()

    def allows(self, authorization: str | None) -> bool:
        credentials = parse_basic(authorization)
        if credentials is None:
            return False
        user, password = credentials
        key = self._key(user, password)
        with self._cache_lock:
            cached = self._cache.get(key)
        if cached is None:
            with self._bcrypt_lock:
                with self._cache_lock:  # the same credentials may have been checked meanwhile
                    cached = self._cache.get(key)
                if cached is None:
                    cached = self._check(user, password)
                    self._remember(key, cached)
        return cached

    def _check(self, user: str, password: bytes) -> bool:
        """One bcrypt per configured cost, whoever `user` is (see the class docstring)."""
        hashed = self._users.get(user)
        own = cost_of(hashed) if hashed is not None and len(password) <= MAX_PASSWORD else None
        allowed = False
        for cost, decoy in self._decoys.items():
            if cost == own:
                allowed = self._verify(password, hashed)  # type: ignore[arg-type]
            else:
                self._verify(password, decoy)  # the same work, its answer unused
        return allowed

    def _key(self, user: str, password: bytes) -> bytes:
        parts = (user.encode("utf-8"), password)
        message = b"".join(len(part).to_bytes(8, "big") + part for part in parts)  # unambiguous
        return hmac.new(self._secret, message, hashlib.sha256).digest()

    def _remember(self, key: bytes, result: bool) -> None:
        with self._cache_lock:
            if len(self._cache) >= CACHE_SIZE:  # in bulk: a flood of guesses evicts rarely
                for old in list(self._cache)[: CACHE_SIZE // 10]:
                    del self._cache[old]
            self._cache[key] = result


def cost_of(hashed: str) -> int | None:
    """A bcrypt hash's cost ("$2y$10$..." -> 10), None if it has none."""
    return int(hashed[4:6]) if hashed[4:6].isdigit() and hashed[6:7] == "$" else None


def costs(hashes: Iterable[str]) -> list[int]:
    """The distinct costs of the users' hashes, lowest first (10, the toolkit's, if none)."""
    found = {cost for cost in map(cost_of, hashes) if cost is not None}
    return sorted(found) or [10]


def decoy_at(cost: int) -> str:
    """The toolkit's DECOY, at `cost`: a check against it costs what a real one at `cost` does."""
    return DECOY if cost == 10 else f"{DECOY[:4]}{cost:02d}{DECOY[6:_SALTED]}"

"""`listen = "ADDRESS:PORT"` ([output] kind = "http"), as exporters' --web.listen-address.

":9100" is every interface; "127.0.0.1:9100", "[::1]:9100" and "localhost:9100" one address.
Checked at start (a config error, exit 2) and used by outputs.http to bind: one parser, so a
value the check accepts is one the output can bind.
"""

from __future__ import annotations

import re
import socket

_LISTEN = re.compile(r"(\[[^\]]*\]|[A-Za-z0-9._-]*):([0-9]{1,5})")  # "[::1]:9100", ":9100"


def parse_listen(text: str) -> tuple[str, int]:
    """ "ADDRESS:PORT" -> (host, port), host "" for every interface; ValueError if malformed.

    ":9100", "127.0.0.1:9100", "[::1]:9100" (IPv6 in brackets, as in URLs), "localhost:9100";
    port 0 is any free port."""
    match = _LISTEN.fullmatch(text)
    host = match.group(1) if match else ""
    if host.startswith("["):  # "[fe80::1%eth0]": an IPv6 address, maybe with a zone
        host = host[1:-1]
        valid = _is_ip(socket.AF_INET6, host.split("%")[0])
    else:  # "300.1.1.1" is caught here, not by a DNS lookup at bind time
        valid = not re.fullmatch(r"[0-9.]+", host) or _is_ip(socket.AF_INET, host)
    if match is None or not valid or int(match.group(2)) > 65535:
        raise ValueError(
            f"listen {text!r}: expected ADDRESS:PORT with a port from 0 to 65535, e.g. ':9100' "
            "(every interface), '127.0.0.1:9100', '[::1]:9100' or 'localhost:9100'"
        )
    return host, int(match.group(2))


def _is_ip(family: int, text: str) -> bool:
    try:
        socket.inet_pton(family, text)
    except OSError:
        return False
    return True

"""Whether a standalone master (``spark://host:port``) can be reached, before a session
waits for it.

A driver whose master does not answer waits for Spark's application client to give up
(three registrations 20 s apart, fixed in Spark: no setting shortens them) and then fails
with a long trace. :func:`check_master` asks only what the URL names, with a short
timeout each: does the host's name resolve, and does its port accept a TCP connection.
A port that accepts connections but is not a Spark master is not found here.
"""

from __future__ import annotations

import socket
import threading

__all__ = ["MasterError", "check_master", "master_addresses"]

PREFIX = "spark://"
DEFAULT_PORT = 7077
RESOLVE_SECONDS = 10.0  # a resolver that does not answer
CONNECT_SECONDS = 5.0


class MasterError(ValueError):
    """A ``--master`` that cannot be used (one line naming it and why)."""


def master_addresses(master: str) -> list[tuple[str, int]] | None:
    """The (host, port) pairs of a standalone master URL (several for a standby list,
    ``spark://h1:7077,h2:7077``); None for another kind of master (``local[*]``, ...)."""
    if not master.startswith(PREFIX):
        return None
    out = []
    for part in master[len(PREFIX):].split(","):
        host, colon, port = part.strip().rpartition(":")
        if not colon:
            host, port = port, str(DEFAULT_PORT)
        host = host.strip("[]")  # an IPv6 address in brackets
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise MasterError(f"--master {master}: {part!r} is not host:port; accepted: "
                              f"spark://HOST:PORT, e.g. spark://127.0.0.1:{DEFAULT_PORT}")
        out.append((host, int(port)))
    return out


def _resolve(host: str, port: int) -> list[tuple]:
    """The addresses of ``host`` (getaddrinfo, given up after :data:`RESOLVE_SECONDS`)."""
    found: list = []
    failed: list[BaseException] = []

    def look_up() -> None:
        try:
            found.extend(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))
        except OSError as exc:
            failed.append(exc)

    thread = threading.Thread(target=look_up, name="drsim-resolve", daemon=True)
    thread.start()
    thread.join(RESOLVE_SECONDS)
    if thread.is_alive():
        raise TimeoutError(f"its name did not resolve within {RESOLVE_SECONDS:.0f} s")
    if failed:
        raise failed[0]
    return found


def _reach(host: str, port: int) -> str | None:
    """Why ``host:port`` cannot be reached (None: a TCP connection was accepted)."""
    try:
        addresses = _resolve(host, port)
    except TimeoutError as exc:
        return f"the host {host} is not known ({exc})"
    except OSError as exc:
        return f"the host {host} is not known ({exc.strerror or exc})"
    why = f"nothing accepts connections at {host}:{port}"
    for family, kind, proto, _, address in addresses:
        try:
            with socket.socket(family, kind, proto) as sock:
                sock.settimeout(CONNECT_SECONDS)
                sock.connect(address)
            return None
        except TimeoutError:
            why = f"{host}:{port} did not answer within {CONNECT_SECONDS:.0f} s"
        except OSError as exc:
            why = f"nothing accepts connections at {host}:{port} ({exc.strerror or exc})"
    return why


def check_master(master: str | None) -> None:
    """Return if ``master`` is not a standalone URL or one of its masters accepts a TCP
    connection; else raise :class:`MasterError`, one line naming it and why."""
    addresses = master_addresses(master) if master else None
    if not addresses:
        return
    problems = []
    for host, port in addresses:
        why = _reach(host, port)
        if why is None:
            return
        problems.append(why)
    raise MasterError(f"--master {master}: {'; '.join(problems)}; start the cluster (drsim "
                      "cluster up) or give its master's URL (drsim cluster status)")

"""Ports that ``serve --workers N`` shares: held by the parent, served by the workers.

For each shared address the supervising parent binds one TCP socket with
``SO_REUSEPORT`` and never listens on it. That socket

- turns port 0 into one concrete port, chosen once, which every worker then binds with
  ``SO_REUSEPORT`` (a worker restarted later binds the same port);
- keeps the port taken while workers come and go, so no other program slips in between;
- fails loudly (``OSError``) when another program already holds the port without
  ``SO_REUSEPORT`` (a one-worker ``serve``, say), and makes such a program fail later.

The kernel hands connections only to listening sockets, so the parent's socket never
receives one: they are spread over the workers' listening sockets.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass

from pilothouse.addresses import join_host_port, parse_host_port


@dataclass(frozen=True)
class Reservation:
    """A bound, non-listening ``SO_REUSEPORT`` socket and the address it holds."""

    sock: socket.socket
    host: str
    port: int

    @property
    def address(self) -> str:
        return join_host_port(self.host, self.port)

    def close(self) -> None:
        self.sock.close()


def reserve(address: str) -> Reservation:
    """Hold ``host:port`` (port 0: a free one) for workers; raises OSError or ValueError
    (:class:`~pilothouse.addresses.AddressError`)."""
    parsed = parse_host_port(address, "a shared address")
    host = parsed.host
    infos = socket.getaddrinfo(host, parsed.port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, kind, proto, _, where = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind(where)
    except BaseException:
        sock.close()
        raise
    bound_host, bound_port = sock.getsockname()[:2]
    return Reservation(sock, host or str(bound_host), int(bound_port))

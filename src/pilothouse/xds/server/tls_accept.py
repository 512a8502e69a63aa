"""The TLS port's listening sockets and its accept loop, which rides out running out of
file descriptors.

asyncio's own server, when ``accept()`` fails with EMFILE (or ENFILE, ENOBUFS,
ENOMEM), logs a traceback for every accept it tries (up to its backlog, a hundred, on
each loop turn) and schedules a retry for each: a client holding thousands of idle
connections turned that into 172,146 tracebacks in one log. So the TLS front accepts
for itself: one :class:`Acceptor` task per listening socket takes connections with
``loop.sock_accept`` and hands each to a callback. When ``accept()`` fails for want of
resources, it stops accepting for a pause that doubles from :data:`FIRST_PAUSE` up to
``longest_pause`` (the next accept that succeeds starts over) and logs one warning per
``log_interval`` carrying how many accepts failed since the previous one. Clients
meanwhile wait in the kernel's listen backlog, and the connections already open carry
on. A connection that went away before it was accepted is skipped; any other error is
logged the same throttled way and paused on, so that nothing spins.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
import time
from collections.abc import Callable
from typing import Any, Final

from pilothouse.logthrottle import LogThrottle

log = logging.getLogger("pilothouse.xds")

FIRST_PAUSE: Final = 0.05
"""Seconds ``accept`` rests after the first failure for want of resources."""
BACKLOG: Final = 1024
"""Connections the kernel holds for the TLS port before they are accepted."""
OUT_OF_RESOURCES: Final = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})

Accepted = Callable[[socket.socket, Any], None]
"""Takes one accepted (non-blocking) socket and the client's address."""


async def listening_sockets(host: str, port: int, *, reuse_port: bool) -> list[socket.socket]:
    """Non-blocking sockets listening on ``host:port`` (every address it resolves to; all
    interfaces when ``host`` is empty), as asyncio's servers bind them; with port 0 they
    share the port the first one got. Raises OSError."""
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(
        host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )
    sockets: list[socket.socket] = []
    try:
        for family, kind, proto, _, address in dict.fromkeys(infos):
            sock = socket.socket(family, kind, proto)
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if reuse_port:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            if port == 0 and len(sockets) > 1:
                address = (address[0], sockets[0].getsockname()[1], *address[2:])
            sock.bind(address)
            sock.listen(BACKLOG)
            sock.setblocking(False)
    except BaseException:
        for sock in sockets:
            sock.close()
        raise
    return sockets


class Acceptor:
    """Accepts connections on listening sockets until cancelled, pausing when the
    process is out of file descriptors."""

    def __init__(
        self,
        accepted: Accepted,
        *,
        longest_pause: float = 1.0,
        log_interval: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._accepted = accepted
        self._longest_pause = max(longest_pause, FIRST_PAUSE)
        self._throttle = LogThrottle(log_interval, 1, clock=clock)
        self.paused = 0
        """Times ``accept`` was paused since start (for tests and the curious)."""

    async def run(self, listener: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        pause = 0.0
        while True:
            try:
                conn, address = await loop.sock_accept(listener)
            except (ConnectionAbortedError, BlockingIOError, InterruptedError):
                continue  # the client left before it was accepted
            except OSError as problem:
                pause = min(max(pause * 2, FIRST_PAUSE), self._longest_pause)
                self.paused += 1
                self._report(problem, pause)
                await asyncio.sleep(pause)
                continue
            pause = 0.0
            try:
                self._accepted(conn, address)
            except Exception:  # one connection's fault; accepting goes on
                log.exception("TLS port: a new connection could not be taken up")
                conn.close()

    def _report(self, problem: OSError, pause: float) -> None:
        short = errno.errorcode.get(problem.errno or 0, str(problem.errno))
        failed = self._throttle.admit(short)
        if failed is None:
            return
        if problem.errno in OUT_OF_RESOURCES:
            what = "out of file descriptors or socket memory"
        else:
            what = "accept failed"
        log.warning(
            "TLS port %s (%s): not accepting connections for %.2f s",
            what,
            problem.strerror or problem,
            pause,
            extra={"errno": short, "failed_since_last_line": failed},
        )

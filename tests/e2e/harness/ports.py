"""Free loopback ports picked at run time, and waiting for a TCP port to accept or refuse.

A port handed to a peer (an Envoy listener, a server's ``--port``) is picked *below* the
kernel's ephemeral range: everything that binds port 0 (upstreams, admin ports, gRPC
servers) and every outgoing connection's source port is drawn from that range, so a port
picked inside it can be taken by one of them in the moment between picking and binding
(CI once saw a gateway's listener port go to an upstream that bound port 0 next).  The
picker checks each candidate by binding it, and never hands out the same port twice in a
process.  Nothing assumes a fixed port.

Under pytest-xdist several worker processes pick at once, and a check by binding cannot
see a port another worker picked a moment ago and has not bound yet.  So each worker
draws from its own share of the range (the ports whose number modulo the worker count is
its index, from ``PYTEST_XDIST_WORKER`` and ``PYTEST_XDIST_WORKER_COUNT``): no two workers
ever hand out the same port.  A process a test starts inherits its worker's share.
"""

from __future__ import annotations

import asyncio
import os
import random
import socket
import time
from collections.abc import Mapping
from contextlib import ExitStack
from pathlib import Path

LOOPBACK = "127.0.0.1"
EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
LOWEST = 10000
"""Candidates start here: above the well-known and most registered service ports."""


class PortPicker:
    """Hands out ports outside the ephemeral range, each at most once per process, and
    only from its ``share`` (index, count): the ports ``p`` with ``p % count == index``."""

    def __init__(
        self,
        ephemeral: tuple[int, int] | None,
        seed: int | None = None,
        given: set[int] | None = None,
        lowest: int = LOWEST,
        room: int = 2000,
        share: tuple[int, int] = (0, 1),
    ) -> None:
        index, count = share
        if not 0 <= index < count:
            raise ValueError(f"share {index} of {count} does not exist")
        self._ephemeral = ephemeral
        self._lowest = lowest
        self._room = room
        self._share = share
        self._given: set[int] = set() if given is None else set(given)
        self._random = random.Random(seed)

    def candidates(self) -> range:
        """Where picked ports come from; empty when the ephemeral range is unknown."""
        if self._ephemeral is None:
            return range(0)
        low, high = self._ephemeral
        if low - self._lowest >= self._room:
            return self._shared(range(self._lowest, low))
        if 65535 - high >= self._room:
            return self._shared(range(high + 1, 65536))
        return range(0)

    def _shared(self, ports: range) -> range:
        index, count = self._share
        return range(ports.start + (index - ports.start) % count, ports.stop, count)

    def pick(self, count: int, host: str) -> list[int]:
        """``count`` distinct ports that were free on ``host`` a moment ago."""
        pool = self.candidates()
        with ExitStack() as stack:
            ports: list[int] = []
            tries = 0
            while len(ports) < count:
                sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
                if not pool or tries > 200:
                    sock.bind((host, 0))
                else:
                    tries += 1
                    port = self._random.choice(pool)
                    if port in self._given:
                        continue
                    try:
                        sock.bind((host, port))
                    except OSError:
                        continue
                port = int(sock.getsockname()[1])
                self._given.add(port)
                ports.append(port)
            return ports


def ephemeral_range() -> tuple[int, int] | None:
    """The kernel's ephemeral port range, or None where it cannot be read."""
    try:
        low, high = EPHEMERAL_RANGE.read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return None


def worker_share(environ: Mapping[str, str] = os.environ) -> tuple[int, int]:
    """This pytest-xdist worker's (index, count) from its environment; (0, 1) outside xdist
    or where the variables do not make sense."""
    name = environ.get("PYTEST_XDIST_WORKER", "")
    try:
        index = int(name.removeprefix("gw"))
        count = int(environ.get("PYTEST_XDIST_WORKER_COUNT", ""))
    except ValueError:
        return (0, 1)
    return (index, count) if name.startswith("gw") and 0 <= index < count else (0, 1)


_PICKER = PortPicker(ephemeral_range(), share=worker_share())


def free_port(host: str = LOOPBACK) -> int:
    """A TCP port that was free on ``host`` a moment ago, outside the ephemeral range."""
    return free_ports(1, host)[0]


def free_ports(count: int, host: str = LOOPBACK) -> list[int]:
    """``count`` distinct free ports (all held open until every one is picked)."""
    return _PICKER.pick(count, host)


def port_accepts(port: int, host: str = LOOPBACK, timeout: float = 0.2) -> bool:
    """Whether a TCP connection to ``host:port`` succeeds now."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


async def wait_for_port(
    port: int, host: str = LOOPBACK, timeout: float = 5.0, interval: float = 0.02
) -> None:
    """Wait until ``host:port`` accepts connections; ``TimeoutError`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            _, writer = await asyncio.wait_for(
                asyncio.open_connection(host, port), timeout=max(interval, 0.2)
            )
        except (TimeoutError, OSError):
            if time.monotonic() >= deadline:
                raise TimeoutError(f"{host}:{port} did not accept within {timeout}s") from None
            await asyncio.sleep(interval)
        else:
            writer.close()
            await writer.wait_closed()
            return


async def wait_for_port_closed(
    port: int, host: str = LOOPBACK, timeout: float = 5.0, interval: float = 0.02
) -> None:
    """Wait until ``host:port`` refuses connections; ``TimeoutError`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while await asyncio.to_thread(port_accepts, port, host, interval * 5):
        if time.monotonic() >= deadline:
            raise TimeoutError(f"{host}:{port} still accepts after {timeout}s")
        await asyncio.sleep(interval)

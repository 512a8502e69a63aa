"""Free loopback ports picked at run time, and waiting for a TCP port to accept or refuse.

A port is picked by binding ``127.0.0.1:0``, reading the port and closing the socket; the
caller hands it to a peer straight away.  Nothing assumes a fixed port.
"""

from __future__ import annotations

import asyncio
import socket
import time
from contextlib import ExitStack

LOOPBACK = "127.0.0.1"


def free_port(host: str = LOOPBACK) -> int:
    """A TCP port that was free on ``host`` a moment ago."""
    return free_ports(1, host)[0]


def free_ports(count: int, host: str = LOOPBACK) -> list[int]:
    """``count`` distinct free ports (all held open until every one is picked)."""
    with ExitStack() as stack:
        ports = []
        for _ in range(count):
            sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            sock.bind((host, 0))
            ports.append(int(sock.getsockname()[1]))
        return ports


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

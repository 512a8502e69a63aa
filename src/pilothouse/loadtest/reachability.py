"""Whether the ADS server can be reached at all, asked when no stream has connected.

A fleet that gets no response keeps retrying until the run's timeout, which is right
for a server that is still starting or syncing (it accepts the connection and refuses
the stream) and wrong for an address where nothing listens. :func:`refused` tells the
two apart with one plain TCP connection per address, so that the driver can stop
within seconds with ``cannot connect to ADDRESS: connection refused``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Sequence
from typing import Final

PROBE_TIMEOUT: Final = 2.0
"""How long one TCP connection attempt may take before the address counts as silent."""


def split_address(address: str) -> tuple[str, int]:
    """``(host, port)`` of ``host:port`` or ``[v6]:port``."""
    host, _, port = address.strip().rpartition(":")
    return host.strip("[]") or "127.0.0.1", int(port)


async def connect_problem(address: str, timeout: float = PROBE_TIMEOUT) -> str | None:
    """Why a TCP connection to ``address`` fails (``connection refused``), or None."""
    try:
        host, port = split_address(address)
    except ValueError:
        return "not a host:port address"
    try:
        async with asyncio.timeout(timeout):
            _, writer = await asyncio.open_connection(host, port)
    except TimeoutError:
        return f"no answer within {timeout:g}s"
    except OSError as error:
        return os.strerror(error.errno).lower() if error.errno else str(error)
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return None


async def refused(servers: Sequence[str]) -> str | None:
    """``cannot connect to ADDRESS: REASON`` for the addresses nothing answers at, or
    None when every one accepts connections."""
    problems = await asyncio.gather(*(connect_problem(address) for address in servers))
    failed = [f"{a}: {p}" for a, p in zip(servers, problems, strict=True) if p is not None]
    return f"cannot connect to {'; '.join(failed)}" if failed else None

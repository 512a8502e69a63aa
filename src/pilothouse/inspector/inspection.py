"""Inspecting one proxy, or a random sample of the connected ones.

One observation reads what pilothouse says the proxy ACKed, the Envoy's config dump,
then the ACKed digests again; when the two readings differ (an ACK arrived in between)
it starts over, at most :data:`ATTEMPTS` times, so that both sides describe the same
moment. The Envoy must be the proxy asked about: the node id in its dump's bootstrap
has to be the one pilothouse knows.

A push on its way (sent, applied by Envoy, its ACK not back yet) looks like a
divergence for a few milliseconds. So a DIVERGED observation is made again after
``recheck`` seconds, and the second one is the verdict: what persists is reported.

``--sample N`` picks N of the connected proxies whose metadata names their Envoy admin
address (:mod:`pilothouse.inspector.admin_address`) at random, and inspects them
:data:`CONCURRENCY` at a time; one that cannot be inspected is a failure of its own
and does not stop the others.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from pilothouse.inspector.admin_address import ENVOY_ADMIN_ADDRESS
from pilothouse.inspector.admin_clients import (
    ConnectedProxy,
    EnvoyAdmin,
    InspectionFailed,
    NotConnected,
    PilothouseAdmin,
)
from pilothouse.inspector.compare import Comparison, Verdict, compare
from pilothouse.inspector.config_dump import dumped_node_id, held_resources
from pilothouse.inspector.message_types import MessageTypes

ATTEMPTS: Final = 5
"""Observations tried until the ACKed digests read before and after the dump agree."""
CONCURRENCY: Final = 4
"""Proxies of a sample inspected at once."""


@dataclass(frozen=True)
class Inspection:
    """The verdict on one proxy and what it was based on."""

    proxy: ConnectedProxy
    envoy_admin: str
    comparison: Comparison
    static: Mapping[str, int]
    """Bootstrap resources per type URL: not compared."""
    unreadable: tuple[str, ...]
    """Resources of the dump that could not be read."""

    @property
    def verdict(self) -> Verdict:
        return self.comparison.verdict


@dataclass(frozen=True)
class Failure:
    """A proxy that could not be inspected."""

    proxy: str
    reason: str
    node_id: str | None = None
    envoy_admin: str | None = None


@dataclass(frozen=True)
class Sample:
    """What ``--sample`` found."""

    connected: int
    eligible: int
    """Connected proxies whose metadata names their Envoy admin address."""
    inspections: tuple[Inspection, ...]
    failures: tuple[Failure, ...]


class Inspector:
    """Inspects proxies connected to one pilothouse."""

    def __init__(
        self,
        pilothouse: PilothouseAdmin,
        envoy: Callable[[str], EnvoyAdmin],
        types: MessageTypes,
        *,
        recheck: float,
    ) -> None:
        """``envoy`` makes the client of an Envoy admin address."""
        self._pilothouse = pilothouse
        self._envoy = envoy
        self._types = types
        self._recheck = recheck

    async def inspect(self, wanted: str, envoy_admin: str | None = None) -> Inspection:
        """Inspect the proxy whose node id or ``pod.namespace`` is ``wanted``, reading
        its Envoy at ``envoy_admin`` (default: the address its metadata names)."""
        proxy = _one(await self._pilothouse.proxies(), wanted, self._pilothouse.url)
        address = envoy_admin or proxy.envoy_admin
        if address is None:
            raise InspectionFailed(
                f"proxy {wanted!r}: no --envoy-admin given, and its node metadata names no "
                f"{ENVOY_ADMIN_ADDRESS}"
            )
        inspection = await self._observe(proxy, address)
        if inspection.verdict is Verdict.DIVERGED and self._recheck > 0:
            await asyncio.sleep(self._recheck)
            inspection = await self._observe(proxy, address)
        return inspection

    async def sample(self, count: int, rng: random.Random) -> Sample:
        """Inspect ``count`` connected proxies with known admin addresses, chosen at random
        (all of them when there are fewer)."""
        connected = await self._pilothouse.proxies()
        eligible = [p for p in connected if p.envoy_admin is not None]
        chosen = rng.sample(eligible, min(count, len(eligible)))
        gate = asyncio.Semaphore(CONCURRENCY)

        async def one(proxy: ConnectedProxy) -> Inspection | Failure:
            async with gate:
                try:
                    return await self.inspect(proxy.node_id, proxy.envoy_admin)
                except InspectionFailed as problem:
                    return Failure(proxy.proxy_id, str(problem), proxy.node_id, proxy.envoy_admin)

        results = await asyncio.gather(*(one(proxy) for proxy in chosen))
        return Sample(
            len(connected),
            len(eligible),
            tuple(r for r in results if isinstance(r, Inspection)),
            tuple(r for r in results if isinstance(r, Failure)),
        )

    async def _observe(self, proxy: ConnectedProxy, address: str) -> Inspection:
        envoy = self._envoy(address)
        dump: Mapping[str, Any] = {}
        acked: dict[str, dict[str, str]] = {}
        for _attempt in range(ATTEMPTS):
            before = await self._pilothouse.acked(proxy.node_id)
            dump = await envoy.config_dump()
            acked = await self._pilothouse.acked(proxy.node_id)
            if acked == before:
                break
        node = dumped_node_id(dump)
        if node != proxy.node_id:
            raise InspectionFailed(
                f"the Envoy at {envoy.url} is node {node!r}, not {proxy.node_id!r}"
            )
        held = held_resources(dump, self._types)
        return Inspection(proxy, address, compare(held.digests, acked), held.static, held.problems)


def _one(proxies: list[ConnectedProxy], wanted: str, where: str) -> ConnectedProxy:
    by_node = {p.node_id: p for p in proxies if p.named(wanted)}
    if not by_node:
        raise NotConnected(f"proxy {wanted!r}: not connected to this pilothouse instance ({where})")
    if len(by_node) > 1:
        raise InspectionFailed(
            f"proxy {wanted!r} names {len(by_node)} nodes; give the node id: {sorted(by_node)}"
        )
    return next(iter(by_node.values()))

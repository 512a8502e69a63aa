"""Several pilothouse replicas' admin APIs read as one, for ``inspect --admin A --admin B``.

Each replica (and, behind one admin port, each ``serve --workers`` worker) knows only
the proxies connected to it. :class:`ReplicaAdmins` lists the proxies of every replica
given (once each), remembers which ones hold each, and asks those what the proxy
acknowledged: a proxy that takes some types from one control plane and the rest from
another acknowledged, per type, what the replica serving that type recorded.
A replica that cannot be read is left out (and named in :attr:`ReplicaAdmins.unreachable`)
as long as another one answers.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import aiohttp

from pilothouse.inspector.admin_clients import (
    ConnectedProxy,
    NotConnected,
    PilothouseAdmin,
    Unreachable,
)


class ReplicaAdmins(PilothouseAdmin):
    """The admin APIs at ``addresses`` as one :class:`PilothouseAdmin`."""

    def __init__(self, session: aiohttp.ClientSession, addresses: Sequence[str]) -> None:
        if not addresses:
            raise ValueError("at least one admin address")
        self._admins = [PilothouseAdmin(session, address) for address in addresses]
        self.url = ", ".join(admin.url for admin in self._admins)
        self._holders: dict[str, list[PilothouseAdmin]] = {}
        self.unreachable: list[str] = []
        """Why each replica that could not be read at the last :meth:`proxies` was not."""

    async def proxies(self) -> list[ConnectedProxy]:
        answers = await asyncio.gather(
            *(admin.proxies() for admin in self._admins), return_exceptions=True
        )
        found: dict[str, ConnectedProxy] = {}
        self.unreachable = []
        self._holders = {}
        for admin, answer in zip(self._admins, answers, strict=True):
            if isinstance(answer, Unreachable):
                self.unreachable.append(str(answer))
                continue
            if isinstance(answer, BaseException):
                raise answer
            for proxy in answer:
                self._holders.setdefault(proxy.node_id, []).append(admin)
                held = found.get(proxy.node_id)
                if held is None or held.envoy_admin is None:
                    found[proxy.node_id] = proxy
        if len(self.unreachable) == len(self._admins):
            raise Unreachable("; ".join(self.unreachable))
        return list(found.values())

    async def acked(self, node_id: str) -> dict[str, dict[str, str]]:
        """What ``node_id`` acknowledged, per type, at every replica that holds it (a
        type recorded at several: the union of its resources)."""
        holders = self._holders.get(node_id)
        if not holders:
            await self.proxies()
            holders = self._holders.get(node_id)
        if not holders:
            raise NotConnected(f"proxy {node_id!r}: not connected to any of {self.url}")
        merged: dict[str, dict[str, str]] = {}
        for answer in await asyncio.gather(*(admin.acked(node_id) for admin in holders)):
            for type_url, digests in answer.items():
                merged.setdefault(type_url, {}).update(digests)
        return merged

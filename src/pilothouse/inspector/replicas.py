"""Several pilothouse replicas' admin APIs read as one, for ``inspect --admin A --admin B``.

Each replica (and, behind one admin port, each ``serve --workers`` worker) knows only
the proxies connected to it. :class:`ReplicaAdmins` lists the proxies of every replica
given, remembers which one holds each, and asks that one what the proxy acknowledged.
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
        self._holders: dict[str, PilothouseAdmin] = {}
        self.unreachable: list[str] = []
        """Why each replica that could not be read at the last :meth:`proxies` was not."""

    async def proxies(self) -> list[ConnectedProxy]:
        answers = await asyncio.gather(
            *(admin.proxies() for admin in self._admins), return_exceptions=True
        )
        found: list[ConnectedProxy] = []
        self.unreachable = []
        for admin, answer in zip(self._admins, answers, strict=True):
            if isinstance(answer, Unreachable):
                self.unreachable.append(str(answer))
                continue
            if isinstance(answer, BaseException):
                raise answer
            for proxy in answer:
                self._holders[proxy.node_id] = admin
                found.append(proxy)
        if len(self.unreachable) == len(self._admins):
            raise Unreachable("; ".join(self.unreachable))
        return found

    async def acked(self, node_id: str) -> dict[str, dict[str, str]]:
        holder = self._holders.get(node_id)
        if holder is None:
            await self.proxies()
            holder = self._holders.get(node_id)
        if holder is None:
            raise NotConnected(f"proxy {node_id!r}: not connected to any of {self.url}")
        return await holder.acked(node_id)

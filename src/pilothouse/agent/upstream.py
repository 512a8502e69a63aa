"""The agent's one authenticated connection to pilothouse's TLS xDS port, with failover.

:class:`Upstream` holds one grpc.aio channel at a time, to one of the ``--xds-address``
replicas, made with the agent's workload certificate as its TLS client certificate (so
Envoy holds no control-plane credential). Every proxied Envoy stream opens its ADS call
on it. When a call fails the stream reports it (:meth:`Upstream.failed`): the channel is
closed and the next replica is dialled, with jittered backoff once every replica has
failed in a row. A channel made before the certificate rotated is replaced at the next
reconnect, so a reconnect never presents an expired certificate.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Sequence
from typing import Final

import grpc

from pilothouse.agent.remote_authority import CaEndpoint
from pilothouse.agent.unix_socket import MAX_MESSAGE
from pilothouse.agent.workload_identity import WorkloadIdentity
from pilothouse.backoff import Backoff

log = logging.getLogger("pilothouse.agent.upstream")

RECONNECT: Final = Backoff(0.1, 5.0)
"""Delay before dialling again once every replica failed in a row."""


class Upstream:
    """One channel to one pilothouse replica at a time."""

    def __init__(
        self,
        addresses: Sequence[str],
        endpoint: CaEndpoint,
        identity: WorkloadIdentity,
        backoff: Backoff = RECONNECT,
    ) -> None:
        if not addresses:
            raise ValueError("at least one --xds-address is needed")
        self.addresses = tuple(addresses)
        self._endpoint = endpoint
        self._identity = identity
        self._backoff = backoff
        self._rng = random.Random()
        self._index = 0
        self._failures = 0
        self._channel: grpc.aio.Channel | None = None
        self._serial: int | None = None
        self._lock = asyncio.Lock()
        self.connects = 0
        """Channels dialled so far (a reconnect or failover adds one)."""

    @property
    def address(self) -> str:
        """The replica dialled now."""
        return self.addresses[self._index]

    async def channel(self) -> grpc.aio.Channel:
        """The current channel, dialled (after backoff when due) if there is none."""
        async with self._lock:
            held = self._identity.current(self._identity.primary)
            if self._channel is not None and held is not None and held.serial != self._serial:
                await self._close()  # rotated: new connections present the new certificate
            if self._channel is None:
                if self._failures >= len(self.addresses):
                    delay = self._backoff.delay(self._failures - len(self.addresses) + 1, self._rng)
                    await asyncio.sleep(delay)
                await self._identity.issued(self._identity.primary)
                client = self._identity.client_certificate(self._identity.primary)
                held = self._identity.current(self._identity.primary)
                self._serial = held.serial if held is not None else None
                self._channel = grpc.aio.secure_channel(
                    self.address,
                    self._endpoint.channel_credentials(client),
                    options=[
                        *self._endpoint.channel_options(),
                        ("grpc.max_receive_message_length", MAX_MESSAGE),
                        ("grpc.max_send_message_length", MAX_MESSAGE),
                    ],
                )
                self.connects += 1
                log.info("dialling pilothouse", extra={"address": self.address})
            return self._channel

    def succeeded(self) -> None:
        """A response arrived: the replica works."""
        self._failures = 0

    async def failed(self, channel: grpc.aio.Channel, reason: str) -> None:
        """A call on ``channel`` failed: move to the next replica (once per channel)."""
        async with self._lock:
            if channel is not self._channel:
                return  # another stream already moved on
            report = log.warning if self._failures == 0 else log.debug  # once per outage
            report(
                "the xDS stream to pilothouse broke (%s); trying the next replica",
                reason,
                extra={"address": self.address},
            )
            await self._close()
            self._failures += 1
            self._index = (self._index + 1) % len(self.addresses)

    async def close(self) -> None:
        async with self._lock:
            await self._close()

    async def _close(self) -> None:
        channel, self._channel = self._channel, None
        if channel is not None:
            await channel.close(grace=None)

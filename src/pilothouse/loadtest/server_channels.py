"""Where a simulated proxy's stream goes: one of the server's addresses, over a shared channel.

A sidecar dials one address for its control plane, usually a Kubernetes Service in front
of several istiod replicas; each connection it opens lands on one replica, chosen anew
every time it reconnects (after a restart, a refusal, or a GOAWAY at the server's
maximum connection age). :class:`ServerChannels` does the same for the load generator's
proxies: every (re)connect picks one of the addresses uniformly at random, so a fleet
spreads over replicas as it would behind a Service, and moves when they come and go.

Streams go over grpc.aio channels shared by up to ``streams_per_channel`` proxies (one
HTTP/2 connection carrying many streams keeps the load generator light): proxy number
``slot`` uses its group's channel (``slot // streams_per_channel``) to the address it
picked. Channels are made when first needed, each with its own subchannel pool, so each
is its own connection. With one address nothing is picked and no randomness is drawn.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence
from typing import Any

import grpc

LOCAL_SUBCHANNELS = ("grpc.use_local_subchannel_pool", 1)


class ServerChannels:
    """Channels to one or more addresses of the same server, made on demand."""

    def __init__(
        self,
        addresses: Sequence[str],
        *,
        streams_per_channel: int = 100,
        options: Sequence[tuple[str, Any]] = (),
    ) -> None:
        if not addresses:
            raise ValueError("at least one server address")
        if streams_per_channel < 1:
            raise ValueError("streams_per_channel must be at least 1")
        self.addresses = tuple(addresses)
        self.streams_per_channel = streams_per_channel
        self._options = (LOCAL_SUBCHANNELS, *options)
        self._channels: dict[tuple[str, int], grpc.aio.Channel] = {}

    def set_addresses(self, addresses: Sequence[str]) -> None:
        """The server's addresses from now on (replicas came or went, as a Service's
        endpoints change): later connects pick among these; streams open stay where
        they are, and channels to an address no longer listed stay until ``close``."""
        if not addresses:
            raise ValueError("at least one server address")
        self.addresses = tuple(addresses)

    def pick(self, rng: random.Random) -> str:
        """An address for a new connection: the only one, or one at random."""
        addresses = self.addresses
        return addresses[0] if len(addresses) == 1 else rng.choice(addresses)

    def channel(self, address: str, slot: int) -> grpc.aio.Channel:
        """The channel proxy number ``slot`` uses to reach ``address``."""
        key = (address, slot // self.streams_per_channel)
        found = self._channels.get(key)
        if found is None:
            found = self._channels[key] = grpc.aio.insecure_channel(address, options=self._options)
        return found

    def dial(self, slot: int, rng: random.Random) -> tuple[str, grpc.aio.Channel]:
        """Where proxy number ``slot`` opens its next stream: (address, channel)."""
        address = self.pick(rng)
        return address, self.channel(address, slot)

    @property
    def channels(self) -> list[grpc.aio.Channel]:
        """The channels made so far."""
        return list(self._channels.values())

    async def close(self) -> None:
        channels, self._channels = list(self._channels.values()), {}
        await asyncio.gather(*(channel.close() for channel in channels))

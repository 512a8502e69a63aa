"""A fleet of simulated proxies sharing a few channels, and how long they took to converge.

``ProxyFleet`` runs N ``SimulatedProxy`` streams over ``ceil(N /
streams_per_channel)`` grpc.aio channels per server address (each with its own
subchannel pool, so each is its own HTTP/2 connection; made when first used).
Given several addresses (replicas of one server), each proxy picks one at
random whenever it (re)connects, as behind a Service VIP
(:mod:`pilothouse.loadtest.server_channels`); ``by_server`` counts where the
connected proxies are.  Proxies of one
kind share a ``ResourceReader``: a cluster sent to a thousand proxies is
decoded once and held as one ``bytes`` object; all share one ``RequestEncoder``,
so a list of names they all ask for is encoded once.

``wait_converged`` records, for each proxy, when a predicate first held,
measured from the proxy's start or from a given instant (a push), and returns
a ``ConvergenceReport`` with percentile helpers and, for the proxies that did
not get there, what they were waiting for (``stalls.Stalls``).  ``types``
limits what every proxy asks for (say CDS and EDS only).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import grpc

from pilothouse.backoff import Backoff
from pilothouse.loadtest.client import RejectHook
from pilothouse.loadtest.identity import ProxyFlavour, ProxyNode, mesh_identity
from pilothouse.loadtest.plans import ALL_TYPES
from pilothouse.loadtest.proxy import ProxyPredicate, SimulatedProxy, request_plan
from pilothouse.loadtest.references import ResourceReader
from pilothouse.loadtest.server_channels import ServerChannels
from pilothouse.loadtest.stalls import Stalls, find_stalls
from pilothouse.loadtest.stats import Summary, percentile, summarize
from pilothouse.protocol.client_wire import RequestEncoder


def fleet_identities(
    count: int,
    *,
    namespaces: Sequence[str] = ("default",),
    flavour: ProxyFlavour = ProxyFlavour.SIDECAR,
    targets: tuple[str, ...] = (),
    app: str = "app",
    start: int = 0,
) -> list[ProxyNode]:
    """``count`` identities spread round-robin over ``namespaces``, with distinct IPs.

    Addresses come from 10.0.0.0/8 (they are names in node ids, never dialled).
    ``start`` numbers them from an offset, so that fleets in several processes
    together make one fleet of distinct proxies.
    """
    if not namespaces:
        raise ValueError("at least one namespace")
    identities = []
    for index in range(start, start + count):
        host = index + 1
        ip = f"10.{(host >> 16) & 0xFF}.{(host >> 8) & 0xFF}.{host & 0xFF}"
        namespace = namespaces[index % len(namespaces)]
        pod = f"{app}-{index}"
        identities.append(mesh_identity(flavour, ip, pod, namespace, app=app, targets=targets))
    return identities


@dataclass(frozen=True)
class ConvergenceReport:
    """Per-proxy convergence times (seconds) and the proxies that did not converge."""

    durations: tuple[float, ...]
    unconverged: tuple[str, ...]
    wall: float
    """Seconds from the reference instant until the wait ended."""
    stalls: Stalls = field(default_factory=Stalls)
    """What the proxies that did not converge were waiting for (empty when all did)."""

    @property
    def converged(self) -> bool:
        return not self.unconverged

    def percentile(self, q: float) -> float:
        return percentile(self.durations, q)

    @property
    def p50(self) -> float:
        return self.percentile(50)

    @property
    def p90(self) -> float:
        return self.percentile(90)

    @property
    def p99(self) -> float:
        return self.percentile(99)

    def summary(self) -> Summary:
        return summarize(self.durations)


class ProxyFleet:
    """N simulated proxies over a few shared channels to an ADS server (one address, or
    several replicas picked at random at each connect)."""

    def __init__(
        self,
        target: str | Sequence[str],
        identities: Sequence[ProxyNode],
        *,
        delta: bool = False,
        streams_per_channel: int = 100,
        channel_options: Sequence[tuple[str, Any]] = (),
        backoff: Backoff | None = None,
        reject: RejectHook | None = None,
        event_log_size: int = 16,
        seed: int | None = None,
        types: frozenset[str] = ALL_TYPES,
    ) -> None:
        if streams_per_channel < 1:
            raise ValueError("streams_per_channel must be at least 1")
        self.addresses = (target,) if isinstance(target, str) else tuple(target)
        self.identities = tuple(identities)
        self.delta = delta
        self.types = types
        """The xDS types every proxy asks for (convergence waits for these only)."""
        self.streams_per_channel = streams_per_channel
        self._channel_options = tuple(channel_options)
        self._server_channels: ServerChannels | None = None
        self._backoff = backoff
        self._reject = reject
        self._event_log_size = event_log_size
        self._rng = random.Random(seed)
        self.proxies: tuple[SimulatedProxy, ...] = ()
        self.readers: dict[frozenset[str], ResourceReader] = {}
        """One shared reader per set of decoded types (one per flavour in practice)."""
        self.encoder = RequestEncoder()

    async def start(
        self,
        ramp: float = 0.0,
        *,
        prepare: Callable[[tuple[SimulatedProxy, ...]], None] | None = None,
    ) -> None:
        """Open the channels and start every proxy's stream, spread evenly over ``ramp`` s.

        ``prepare`` is called with the proxies before the first one starts (to add
        listeners to them, say).
        """
        if self.proxies:
            raise RuntimeError("fleet already started")
        channels = self._server_channels = ServerChannels(
            self.addresses,
            streams_per_channel=self.streams_per_channel,
            options=self._channel_options,
        )
        readers = self.readers
        proxies = []
        for index, identity in enumerate(self.identities):
            decoded = request_plan(identity, self.types).decoded_types
            reader = readers.get(decoded)
            if reader is None:
                reader = readers[decoded] = ResourceReader(decoded)
            proxy = SimulatedProxy(
                identity,
                channels=channels,
                slot=index,
                delta=self.delta,
                reject=self._reject,
                backoff=self._backoff,
                reader=reader,
                encoder=self.encoder,
                event_log_size=self._event_log_size,
                rng=random.Random(self._rng.random()),
                types=self.types,
            )
            proxies.append(proxy)
        self.proxies = tuple(proxies)
        if prepare is not None:
            prepare(self.proxies)
        gap = ramp / len(proxies) if proxies and ramp > 0 else 0.0
        for proxy in self.proxies:
            proxy.start()
            if gap:
                await asyncio.sleep(gap)

    async def close(self) -> None:
        """Close every stream, then the channels."""
        await asyncio.gather(*(proxy.close() for proxy in self.proxies))
        if self._server_channels is not None:
            await self._server_channels.close()

    @property
    def channels(self) -> list[grpc.aio.Channel]:
        """The channels opened so far (made when a proxy first uses one)."""
        return [] if self._server_channels is None else self._server_channels.channels

    def set_servers(self, addresses: Sequence[str]) -> None:
        """The server's addresses from now on (a replica started or stopped): proxies
        pick among them when they next (re)connect; open streams stay where they are."""
        self.addresses = tuple(addresses)
        if self._server_channels is not None:
            self._server_channels.set_addresses(self.addresses)

    def by_server(self) -> Counter[str]:
        """Connected proxies (a stream that has delivered a response) by server address."""
        return Counter(proxy.server for proxy in self.proxies if proxy.connected)

    async def __aenter__(self) -> ProxyFleet:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def wait_converged(
        self,
        predicate: ProxyPredicate | None = None,
        timeout: float = 60.0,
        since: float | None = None,
    ) -> ConvergenceReport:
        """Wait until ``predicate`` (default: ``settled``) holds for every proxy, or time out.

        Each proxy's time runs from ``since`` (a ``time.monotonic()`` instant,
        say just before a push) or else from its own start.  A proxy that
        already satisfies the predicate counts at once.
        """
        check: Callable[[SimulatedProxy], bool] = predicate or SimulatedProxy.settled
        loop = asyncio.get_running_loop()
        reached: dict[SimulatedProxy, float] = {}
        everyone = loop.create_future()
        total = len(self.proxies)

        def observe(proxy: SimulatedProxy) -> None:
            if proxy in reached or not check(proxy):
                return
            origin = since if since is not None else (proxy.started_at or time.monotonic())
            reached[proxy] = time.monotonic() - origin
            if len(reached) == total and not everyone.done():
                everyone.set_result(None)

        for proxy in self.proxies:
            proxy.add_listener(observe)
            observe(proxy)
        begin = (
            since
            if since is not None
            else min(
                (proxy.started_at for proxy in self.proxies if proxy.started_at is not None),
                default=time.monotonic(),
            )
        )
        try:
            if total and not everyone.done():
                await asyncio.wait_for(everyone, timeout)
        except TimeoutError:
            pass
        finally:
            for proxy in self.proxies:
                proxy.remove_listener(observe)
        late = [proxy for proxy in self.proxies if proxy not in reached]
        durations = tuple(reached[proxy] for proxy in self.proxies if proxy in reached)
        return ConvergenceReport(
            durations,
            tuple(proxy.node_id for proxy in late),
            time.monotonic() - begin,
            find_stalls(late) if late else Stalls(),
        )

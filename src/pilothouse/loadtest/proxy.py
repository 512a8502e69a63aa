"""A simulated proxy: one ADS stream (SotW or delta) that behaves like Envoy or grpcio.

``SimulatedProxy`` owns the I/O around a ``SotwClient`` or ``DeltaClient``
(the xDS client engine of ``xds/protocol`` with the proxy's reading of content):
it opens ``StreamAggregatedResources`` or ``DeltaAggregatedResources``
on a grpc.aio channel (its own, one shared with other proxies, or one of a
:class:`~pilothouse.loadtest.server_channels.ServerChannels`' to the address it
picks at each (re)connect), writes the engine's requests, feeds it every
response, and reconnects when the stream ends or fails, re-sending its
subscriptions (the engine reports what it holds).  It works against any ADS
server.

Reconnecting is Envoy's: a jittered exponential backoff (``Backoff.envoy()``:
the n-th consecutive failure waits up to 0.5 s × (2ⁿ − 1), at most 30 s)
that starts again from the first step once a stream has delivered a
response.  A stream refused before its first response (``UNAVAILABLE`` from a
server that is not ready or at its connection limit, ``RESOURCE_EXHAUSTED``
from its rate limit, a refused connection) counts as a failure and grows the
wait; a stream that ends after responses (a server's GOAWAY at its maximum
connection age, a restart) is followed by the first, shortest wait. Unlike Envoy,
it honours a refusal's ``grpc-retry-pushback-ms`` trailer (pilothouse's admission
control says there when the stream's turn will come): it comes back after that long
(at most the backoff's maximum) and the refusal does not grow its backoff;
``pushback=False`` ignores the hint, as Envoy does.

Callers observe it through ``holds``, ``counters``, ``last_response_time``,
``events`` and ``await wait_for(predicate, timeout)``; listeners added with
``add_listener`` run after every response and every connection change (the
fleet uses them to time convergence without a task per proxy).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType, TracebackType
from typing import Any, Final

import grpc
from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]

from pilothouse.backoff import Backoff
from pilothouse.loadtest.client import DeltaClient, ProxyClient, RejectHook, SotwClient
from pilothouse.loadtest.holdings import HeldResource, TypeCounters, XdsEvent
from pilothouse.loadtest.identity import ProxyFlavour, ProxyNode
from pilothouse.loadtest.plans import ALL_TYPES, EnvoyPlan, GrpcPlan, RequestPlan
from pilothouse.loadtest.references import ResourceReader
from pilothouse.loadtest.server_channels import ServerChannels
from pilothouse.protocol.client_wire import RequestEncoder
from pilothouse.protocol.subscriptions import Subscription

ADS_SERVICE: Final = "/envoy.service.discovery.v3.AggregatedDiscoveryService/"
SOTW_METHOD: Final = ADS_SERVICE + "StreamAggregatedResources"
DELTA_METHOD: Final = ADS_SERVICE + "DeltaAggregatedResources"
PUSHBACK_TRAILER: Final = "grpc-retry-pushback-ms"

ProxyPredicate = Callable[["SimulatedProxy"], bool]
ProxyListener = Callable[["SimulatedProxy"], None]


def request_plan(identity: ProxyNode, types: frozenset[str] = ALL_TYPES) -> RequestPlan:
    """Envoy's plan for sidecars and routers, grpcio's for the proxyless flavour, asking
    for ``types`` only."""
    if identity.flavour is ProxyFlavour.GRPC:
        return GrpcPlan(frozenset(identity.targets), types=types)
    return EnvoyPlan(types=types)


def _sized_sotw(data: bytes) -> tuple[int, Any]:
    return len(data), discovery_pb2.DiscoveryResponse.FromString(data)


def _sized_delta(data: bytes) -> tuple[int, Any]:
    return len(data), discovery_pb2.DeltaDiscoveryResponse.FromString(data)


def pushback_hint(trailers: Any) -> float | None:
    """The ``grpc-retry-pushback-ms`` trailer in seconds; None without a usable one (gRPC:
    a negative or malformed value means "do not retry", which a proxy does not obey)."""
    for key, value in trailers or ():
        if key == PUSHBACK_TRAILER:
            text = value.decode("ascii", "replace") if isinstance(value, bytes) else value
            return int(text) / 1000 if text.isdigit() else None
    return None


class SimulatedProxy:
    """One simulated Envoy (or proxyless gRPC client) on one ADS stream."""

    def __init__(
        self,
        identity: ProxyNode,
        *,
        target: str | None = None,
        channel: grpc.aio.Channel | None = None,
        channels: ServerChannels | None = None,
        slot: int = 0,
        delta: bool = False,
        reject: RejectHook | None = None,
        backoff: Backoff | None = None,
        reader: ResourceReader | None = None,
        encoder: RequestEncoder | None = None,
        channel_options: Sequence[tuple[str, Any]] = (),
        event_log_size: int = 256,
        rng: random.Random | None = None,
        close_grace: float = 0.5,
        types: frozenset[str] = ALL_TYPES,
        pushback: bool = True,
    ) -> None:
        if sum(given is not None for given in (target, channel, channels)) != 1:
            raise ValueError("give exactly one of target (an address), channel or channels")
        self.identity = identity
        self.delta = delta
        self._target = target
        self._channel = channel
        self._channels = channels
        self._slot = slot
        self._owns_channel = target is not None
        self._channel_options = tuple(channel_options)
        self._backoff = backoff or Backoff.envoy()
        self._rng = rng or random.Random()
        self._close_grace = close_grace
        self._honour_pushback = pushback
        self._pushback: float | None = None
        """The last stream's refusal's pushback hint, seconds (None: it gave none)."""
        plan = request_plan(identity, types)
        self.types = plan.order
        """The types it asks for, in the order it asks."""
        reader = reader or ResourceReader(plan.decoded_types)
        client_type = DeltaClient if delta else SotwClient
        self._engine: ProxyClient = client_type(identity, plan, reader, reject, event_log_size)
        self._encoder = encoder or RequestEncoder()
        self._task: asyncio.Task[None] | None = None
        self._call: Any = None
        self._closing = False
        self._wake = asyncio.Event()
        self._waiters: list[asyncio.Future[None]] = []
        self._listeners: list[ProxyListener] = []
        self.connected = False
        """True from the first response on a stream until that stream ends."""
        self.streams_opened = 0
        self.stream_errors: deque[str] = deque(maxlen=32)
        """Why recent streams failed (the latest 32)."""
        self.stream_failures = 0
        """How many streams failed in all (``stream_errors`` keeps only the latest)."""
        self.started_at: float | None = None
        self.connected_at: float | None = None
        self.server: str = target or ""
        """The address of the current (or last) stream's server ("" for a given channel)."""
        self.retries: deque[tuple[int, float]] = deque(maxlen=32)
        """The latest waits before reconnecting (the latest 32): (consecutive failures
        so far, 1 after a stream that delivered responses; seconds waited)."""
        self.pushbacks: deque[float] = deque(maxlen=32)
        """The latest waits a refusal's pushback hint set (seconds; the latest 32)."""

    # -- lifecycle -------------------------------------------------------------

    @property
    def node_id(self) -> str:
        return self.identity.node_id

    @property
    def reject(self) -> RejectHook | None:
        return self._engine.reject

    @reject.setter
    def reject(self, hook: RejectHook | None) -> None:
        self._engine.reject = hook

    def start(self) -> None:
        """Open the stream in the background (it reconnects until ``close``)."""
        if self._task is not None:
            raise RuntimeError(f"{self.node_id} already started")
        if self._target is not None and self._channel is None:
            self._channel = grpc.aio.insecure_channel(self._target, options=self._channel_options)
        self.started_at = time.monotonic()
        self._task = asyncio.get_running_loop().create_task(
            self._run(), name=f"proxy {self.node_id}"
        )

    async def close(self) -> None:
        """End the stream cleanly: half-close, give the server a moment, then cancel."""
        self._closing = True
        self._wake.set()
        call = self._call
        task = self._task
        if call is not None and not call.done():
            with contextlib.suppress(Exception):
                await call.done_writing()
        if task is not None:
            done, _ = await asyncio.wait({task}, timeout=self._close_grace)
            if not done:
                if call is not None:
                    call.cancel()
                task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self._owns_channel and self._channel is not None:
            await self._channel.close()
            self._channel = None

    async def __aenter__(self) -> SimulatedProxy:
        self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    # -- what callers read -----------------------------------------------------

    def holds(self, type_url: str) -> Mapping[str, HeldResource]:
        """What the proxy holds of a type: name → resource (version, bytes)."""
        state = self._engine.states.get(type_url)
        return MappingProxyType(state.held if state is not None else {})

    def subscription(self, type_url: str) -> Subscription:
        state = self._engine.states.get(type_url)
        return state.subscription if state is not None else Subscription()

    def counters(self, type_url: str) -> TypeCounters:
        state = self._engine.states.get(type_url)
        return state.counters if state is not None else TypeCounters()

    def traffic_counts(self) -> tuple[int, int, int, int, int]:
        """(responses, bytes received, ACKs, NACKs, requests) over every type, read from
        the engine's counters without a snapshot per type (a fleet sums this often)."""
        responses = received = acks = nacks = requests = 0
        for state in self._engine.states.values():
            responses += state.responses
            received += state.bytes_received
            acks += state.acks
            nacks += state.nacks
            requests += state.requests
        return responses, received, acks, nacks, requests

    def last_change_at(self) -> float | None:
        """When an accepted response of any type last changed what it holds (None: never)."""
        latest: float | None = None
        for state in self._engine.states.values():
            at = state.last_change_at
            if at is not None and (latest is None or at > latest):
                latest = at
        return latest

    def last_error(self, type_url: str) -> str | None:
        """The message of the last NACK for the type, until the next ACK."""
        state = self._engine.states.get(type_url)
        return state.last_error if state is not None else None

    def last_response_time(self, type_url: str) -> float | None:
        """``time.monotonic()`` of the last response of the type, None before the first."""
        state = self._engine.states.get(type_url)
        return state.last_response_at if state is not None else None

    @property
    def events(self) -> tuple[XdsEvent, ...]:
        """The latest responses, oldest first (bounded by ``event_log_size``)."""
        return tuple(self._engine.events)

    def wants(self) -> Mapping[str, Subscription]:
        """What it wants of each type now, given what it holds (types it would not ask
        for yet, waiting on another, are absent)."""
        return self._engine.engine.policy.desired(self._engine.states)

    def settled(self) -> bool:
        """Every type the proxy wants was accepted, every name it asked for is held,
        and it has nothing left to ask for."""
        return self._engine.settled()

    async def wait_for(self, predicate: ProxyPredicate, timeout: float) -> None:
        """Wait until ``predicate(proxy)`` holds; raise ``TimeoutError`` after ``timeout``."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not predicate(self):
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise TimeoutError(f"{self.node_id}: condition not met in {timeout}s")
            waiter = loop.create_future()
            self._waiters.append(waiter)
            try:
                await asyncio.wait_for(waiter, remaining)
            finally:
                with contextlib.suppress(ValueError):
                    self._waiters.remove(waiter)

    def add_listener(self, listener: ProxyListener) -> None:
        self._listeners.append(listener)

    def remove_listener(self, listener: ProxyListener) -> None:
        with contextlib.suppress(ValueError):
            self._listeners.remove(listener)

    # -- the stream ------------------------------------------------------------

    def _notify(self) -> None:
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)
        for listener in tuple(self._listeners):
            listener(self)

    def _open_call(self) -> Any:
        if self._channels is not None:  # pick a server address, as a Service VIP would
            self.server, self._channel = self._channels.dial(self._slot, self._rng)
        assert self._channel is not None
        if self.delta:
            method = self._channel.stream_stream(
                DELTA_METHOD,
                request_serializer=self._encoder.encode,
                response_deserializer=_sized_delta,
            )
        else:
            method = self._channel.stream_stream(
                SOTW_METHOD,
                request_serializer=self._encoder.encode,
                response_deserializer=_sized_sotw,
            )
        return method()

    async def _run(self) -> None:
        failures = 0
        while not self._closing:
            answered = await self._stream_once()
            if self._closing:
                break
            if self._pushback is not None and not answered:  # the server said when
                delay = min(self._pushback, self._backoff.maximum)
                self.pushbacks.append(delay)
            else:
                failures = 1 if answered else failures + 1
                delay = self._backoff.delay(failures, self._rng)
                self.retries.append((failures, delay))
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), delay)

    async def _stream_once(self) -> bool:
        """Run one stream until it ends; True if it delivered a response."""
        call = self._call = self._open_call()
        self.streams_opened += 1
        self._pushback = None
        answered = False
        engine = self._engine
        try:
            for request in engine.open_stream():
                await call.write(request)
            while True:
                received = await call.read()
                if received is grpc.aio.EOF:
                    break
                size, response = received
                now = time.monotonic()
                if not answered:
                    answered = True
                    self.connected = True
                    self.connected_at = now
                for request in engine.on_response(response, size, now):
                    await call.write(request)
                self._notify()
        except grpc.aio.AioRpcError as error:
            if not self._closing:
                self.stream_failures += 1
                self.stream_errors.append(f"{error.code().name}: {error.details()}")
                if self._honour_pushback:
                    self._pushback = pushback_hint(error.trailing_metadata())
        except (asyncio.InvalidStateError, grpc.aio.UsageError) as error:
            if not self._closing:
                self.stream_failures += 1
                self.stream_errors.append(f"stream closed: {error}")
        finally:
            self._call = None
            if not call.done():
                call.cancel()
            if self.connected:
                self.connected = False
                self._notify()
        return answered

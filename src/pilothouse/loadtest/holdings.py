"""What a simulated proxy holds and has seen, per type: resources, subscription, counters, log.

This is the client side's own state (the server side's lives in
``xds/protocol``).  ``TypeState`` is mutable and private to one proxy; what it
hands out (``HeldResource``, ``TypeCounters``, ``XdsEvent``) are frozen values.
Held resources survive a reconnect: Envoy keeps its config while the control
plane is away and reports it back when the stream returns.
"""

from __future__ import annotations

from dataclasses import dataclass

from pilothouse.xds.protocol.subscriptions import Subscription


@dataclass(frozen=True, slots=True)
class HeldResource:
    """One accepted resource: its version (SotW response version or delta resource version)."""

    name: str
    version: str
    body: bytes
    refs: tuple[str, ...] = ()
    """Names of the next type it makes the proxy subscribe to (EDS names, route names…)."""


@dataclass(frozen=True, slots=True)
class TypeCounters:
    """Per-type counters and times (``time.monotonic`` seconds, None until it happened)."""

    responses: int = 0
    acks: int = 0
    nacks: int = 0
    requests: int = 0
    bytes_received: int = 0
    first_response_at: float | None = None
    last_response_at: float | None = None
    last_change_at: float | None = None
    """When an accepted response last changed what the proxy holds."""


@dataclass(frozen=True, slots=True)
class XdsEvent:
    """One response as the proxy saw it."""

    at: float
    type_url: str
    version: str
    """SotW ``version_info`` or delta ``system_version_info``."""
    names: tuple[str, ...]
    removed: tuple[str, ...] = ()
    nonce: str = ""
    accepted: bool = True
    error: str | None = None


@dataclass(frozen=True, slots=True)
class ReceivedResource:
    """What the ``reject`` hook is shown: one resource of a response, still encoded."""

    type_url: str
    name: str
    version: str
    body: bytes


class TypeState:
    """One type on one proxy: held resources, subscription, protocol cursor, counters.

    Counters are plain fields here (they change on every response);
    ``counters`` hands out a frozen snapshot.
    """

    __slots__ = (
        "_refs",
        "acks",
        "bytes_received",
        "first_response_at",
        "held",
        "last_change_at",
        "last_error",
        "last_response_at",
        "nacks",
        "nonce",
        "requested_on_stream",
        "requests",
        "responses",
        "started",
        "subscription",
        "type_url",
        "version_info",
    )

    def __init__(self, type_url: str) -> None:
        self.type_url = type_url
        self.held: dict[str, HeldResource] = {}
        """Accepted resources by name; replaced whole by ``hold``, never changed in place."""
        self._refs: frozenset[str] | None = frozenset()
        self.subscription = Subscription()
        self.started = False
        """Whether the proxy ever asked for the type (it asks again after a reconnect)."""
        self.requested_on_stream = False
        self.version_info = ""
        """SotW: the last accepted version ("" before the first ACK)."""
        self.nonce = ""
        """The nonce of the last response received on the current stream."""
        self.last_error: str | None = None
        self.responses = 0
        self.acks = 0
        self.nacks = 0
        self.requests = 0
        self.bytes_received = 0
        self.first_response_at: float | None = None
        self.last_response_at: float | None = None
        self.last_change_at: float | None = None

    @property
    def counters(self) -> TypeCounters:
        return TypeCounters(
            responses=self.responses,
            acks=self.acks,
            nacks=self.nacks,
            requests=self.requests,
            bytes_received=self.bytes_received,
            first_response_at=self.first_response_at,
            last_response_at=self.last_response_at,
            last_change_at=self.last_change_at,
        )

    def hold(self, held: dict[str, HeldResource]) -> None:
        """Replace what is held."""
        self.held = held
        self._refs = None

    def refs(self) -> frozenset[str]:
        """Everything the held resources point at."""
        if self._refs is None:
            self._refs = frozenset(ref for held in self.held.values() for ref in held.refs)
        return self._refs

    def stream_restarted(self) -> None:
        """Nonces are scoped to a stream: forget them, keep what is held."""
        self.nonce = ""
        self.requested_on_stream = False

    def count_response(self, size: int, now: float) -> None:
        self.responses += 1
        self.bytes_received += size
        if self.first_response_at is None:
            self.first_response_at = now
        self.last_response_at = now

    def count_ack(self, changed: bool, now: float) -> None:
        self.last_error = None
        self.acks += 1
        self.requests += 1
        if changed:
            self.last_change_at = now

    def count_nack(self, error: str) -> None:
        self.last_error = error
        self.nacks += 1
        self.requests += 1

    def count_request(self) -> None:
        self.requests += 1

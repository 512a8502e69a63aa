"""The client side's state for one type on one stream: what it holds, asked for and counted.

``ClientWatch`` is the client engine's per-type record (the server side's is
``SotwWatch`` / ``DeltaWatch``).  It is mutable and private to one engine,
changed on every response, so it is a slotted object rather than a frozen
value; what it hands out (``HeldResource``, ``TypeCounters``) are frozen.
What it holds survives a reconnect: a client keeps its config while the
server is away and reports it back when the stream returns.
"""

from __future__ import annotations

from dataclasses import dataclass

from pilothouse.protocol.subscriptions import WILDCARD, Subscription


@dataclass(frozen=True, slots=True)
class HeldResource:
    """One accepted resource: its version (SotW response version or delta resource version)."""

    name: str
    version: str
    body: bytes
    refs: tuple[str, ...] = ()
    """Names of the next type it makes the client subscribe to (EDS names, route names…)."""


@dataclass(frozen=True, slots=True)
class TypeCounters:
    """Per-type counters and times (the caller's clock, None until it happened)."""

    responses: int = 0
    acks: int = 0
    nacks: int = 0
    requests: int = 0
    bytes_received: int = 0
    first_response_at: float | None = None
    last_response_at: float | None = None
    last_change_at: float | None = None
    """When an accepted response last changed what the client holds."""


def sotw_resource_names(subscription: Subscription) -> tuple[str, ...]:
    """SotW ``resource_names`` for a subscription; a bare wildcard is the legacy empty list."""
    names = sorted(subscription.names)
    if subscription.wildcard and names:
        return (WILDCARD, *names)
    return tuple(names)


class ClientWatch:
    """One type on one client: held resources, subscription, protocol cursor, counters.

    Counters are plain fields (they change on every response); ``counters``
    hands out a frozen snapshot.
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
        "pending",
        "requested_on_stream",
        "requests",
        "resource_names",
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
        self.resource_names: tuple[str, ...] = ()
        """The subscription as SotW ``resource_names`` (sorted once per change)."""
        self.started = False
        """Whether the client ever asked for the type (it asks again after a reconnect)."""
        self.requested_on_stream = False
        self.version_info = ""
        """SotW: the last accepted version ("" before the first ACK)."""
        self.nonce = ""
        """The nonce of the last response received on the current stream."""
        self.pending: object | None = None
        """The response received and not yet ACKed or NACKed (each is answered once)."""
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

    def subscribe(self, subscription: Subscription) -> None:
        """Record the subscription just asked for, and drop what it no longer covers."""
        self.subscription = subscription
        self.resource_names = sotw_resource_names(subscription)
        self.started = True
        self.requested_on_stream = True
        if any(not subscription.covers(name) for name in self.held):
            self.hold({k: v for k, v in self.held.items() if subscription.covers(k)})

    def stream_restarted(self) -> None:
        """Nonces are scoped to a stream: forget them, keep what is held."""
        self.nonce = ""
        self.pending = None
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

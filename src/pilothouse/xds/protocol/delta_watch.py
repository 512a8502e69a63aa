"""The state of one delta xDS watch (one type on one stream).

What the client holds is kept twice:

- ``confirmed`` — what the client holds according to its ACKs;
- ``held`` — the optimistic view: ``confirmed`` with every response still in
  flight applied.  Plans compare against ``held``, so a response on its way is
  not sent again.

A client applies a response's resources only for names it subscribes to when it
processes the response, and it sends its requests in order.  So when an ACK
arrives, the server's current subscription is exactly the one the client had when
it applied the response: the ACKed response is folded into ``confirmed`` with
that filter.  A NACKed response is dropped, which rolls ``held`` back to the last
good versions.  Responses are answered in order on a stream, so an ACK or NACK
of one response also settles (ACKs) every earlier one still in flight.

A NACKed response becomes a *rejected unit* (its name → version map).  While
every resource of a unit still has the version that was rejected, none of them
is sent again (the client keeps its last good config); once any of them
changes, the unit no longer holds anything back.

It is mutable and private to one session (as ``SotwWatch`` is): a transition
changes it in place and returns it.  A push sends a proxy a few of its names, and
a frozen value copied every per-name mapping (``held``, ``confirmed``, the records)
on every response and every ACK of every proxy; in place, a send or an ACK touches
only the names its responses carry.  A NACK and a subscription change still rebuild
``held`` (rare, and bounded by what the client holds).  What it hands out
(``InFlight``, ``SentResponse``) is never changed once made.

What was sent of each resource (``resources``, a ``ResourceRecord`` per name for
``/debug/syncz``) is kept by response, as SotW keeps it: each name points at the
response that last carried it, and an ACK or a NACK changes that one response, not a
record per name.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pilothouse.protocol.messages import NackError
from pilothouse.protocol.subscriptions import Subscription
from pilothouse.xds.protocol.records import HeldRecords, SentResponse
from pilothouse.xds.protocol.sync_status import SyncStatus, sync_status
from pilothouse.xds.protocol.versions import check_version_advance

_NO_SUBSCRIPTION = Subscription()


@dataclass(frozen=True, slots=True)
class InFlight:
    """A response sent and not yet ACKed or NACKed."""

    nonce: str
    content: Mapping[str, str]
    removed: frozenset[str]


class DeltaWatch:
    """One type's watch on a delta stream (mutable, owned by one session)."""

    __slots__ = (
        "_live",
        "always_respond",
        "carriers",
        "confirmed",
        "held",
        "in_flight",
        "last_error",
        "nonce_acked",
        "nonce_sent",
        "rejected",
        "responses",
        "subscription",
        "type_url",
        "version_sent",
    )

    def __init__(self, type_url: str, subscription: Subscription = _NO_SUBSCRIPTION) -> None:
        self.type_url = type_url
        self.subscription = subscription
        self.confirmed: dict[str, str] = {}
        """Name → version the client holds according to its ACKs."""
        self.held: dict[str, str] = {}
        """``confirmed`` with every response in flight applied (read it at once)."""
        self.in_flight: tuple[InFlight, ...] = ()
        self.nonce_sent = ""
        self.version_sent = ""
        self.nonce_acked = ""
        self.last_error: NackError | None = None
        self.always_respond = False
        self.rejected: tuple[Mapping[str, str], ...] = ()
        self.carriers: dict[str, str] = {}
        """Name → nonce of the response that last carried it (names still subscribed)."""
        self.responses: dict[str, SentResponse] = {}
        """Nonce → response, for every response a name in ``carriers`` points at."""
        self._live: dict[str, int] = {}
        """Nonce → how many names ``carriers`` points at it with."""

    @classmethod
    def start(
        cls, type_url: str, subscription: Subscription, initial_versions: Mapping[str, str]
    ) -> DeltaWatch:
        """A new watch; ``initial_versions`` is what the client reports holding."""
        watch = cls(type_url, subscription)
        holds = {n: v for n, v in initial_versions.items() if subscription.covers(n)}
        watch.confirmed = holds
        watch.held = dict(holds)
        return watch

    def __repr__(self) -> str:
        return (
            f"DeltaWatch({self.type_url!r}, sent={self.nonce_sent!r}, "
            f"acked={self.nonce_acked!r}, held={len(self.held)})"
        )

    @property
    def sync_status(self) -> SyncStatus:
        return sync_status(self.nonce_sent, self.nonce_acked, self.last_error)

    @property
    def resources(self) -> HeldRecords:
        """Name → ``ResourceRecord`` of every resource sent and still subscribed to (read
        it at once: it reads the watch as it is when used)."""
        return HeldRecords(self.carriers, self.responses, None)

    def is_in_flight(self, nonce: str) -> bool:
        return bool(nonce) and any(r.nonce == nonce for r in self.in_flight)

    def with_subscription(self, subscription: Subscription) -> DeltaWatch:
        """Apply a new subscription; the client forgets what it no longer subscribes to."""
        if subscription == self.subscription:
            return self
        covers = subscription.covers
        self.subscription = subscription
        self.confirmed = {n: v for n, v in self.confirmed.items() if covers(n)}
        carriers = self.carriers = {n: c for n, c in self.carriers.items() if covers(n)}
        live: dict[str, int] = {}
        for nonce in carriers.values():
            live[nonce] = live.get(nonce, 0) + 1
        self._live = live
        self.responses = {n: r for n, r in self.responses.items() if n in live}
        self.held = _fold(self.confirmed, self.in_flight, subscription)
        return self

    def warming(self) -> DeltaWatch:
        self.always_respond = True
        return self

    def answered(self) -> DeltaWatch:
        self.always_respond = False
        return self

    def sent(
        self,
        nonce: str,
        content: Mapping[str, str],
        removed: frozenset[str],
        now: float,
        system_version: str = "",
    ) -> DeltaWatch:
        """A response went out: the client will hold ``content`` and drop ``removed``.
        ``content`` is kept as given (a plan's, made for this response): it must not
        change afterwards."""
        if not nonce:
            raise ValueError(f"{self.type_url}: a response needs a nonce")
        if nonce == self.nonce_sent or self.is_in_flight(nonce):
            raise ValueError(f"{self.type_url}: nonce {nonce!r} already used")
        if removed and (overlap := removed & content.keys()):
            raise ValueError(f"{self.type_url}: {sorted(overlap)} both sent and removed")
        if system_version:
            check_version_advance(self.type_url, self.version_sent, system_version)
        held, covers = self.held, self.subscription.covers
        carriers = self.carriers
        for name, version in content.items():
            if covers(name):
                held[name] = version
            self._leave(carriers.get(name))
        carriers.update(dict.fromkeys(content, nonce))
        for name in removed:
            held.pop(name, None)
            self._leave(carriers.pop(name, None))
        if content:
            self._live[nonce] = len(content)
            self.responses[nonce] = SentResponse(nonce, now, content)
        if self.rejected:
            self.rejected = tuple(
                u for u in self.rejected if not _changes_unit(u, content, removed)
            )
        self.in_flight = (*self.in_flight, InFlight(nonce, content, removed))
        self.nonce_sent = nonce
        if system_version:
            self.version_sent = system_version
        return self

    def acked(self, nonce: str, now: float) -> DeltaWatch:
        """The client ACKed the in-flight response ``nonce`` (and so all before it)."""
        index = self._index(nonce)
        settled, self.in_flight = self.in_flight[: index + 1], self.in_flight[index + 1 :]
        _apply(self.confirmed, settled, self.subscription)
        self._answer(settled, now)
        self.nonce_acked = nonce
        self.last_error = None
        return self

    def nacked(self, nonce: str, error: NackError, now: float) -> DeltaWatch:
        """The client NACKed the in-flight response ``nonce``; earlier ones were ACKed."""
        index = self._index(nonce)
        earlier, response = self.in_flight[:index], self.in_flight[index]
        later = self.in_flight[index + 1 :]
        _apply(self.confirmed, earlier, self.subscription)
        self._answer(earlier, now)
        rejected = self.responses.get(nonce)
        if rejected is not None:
            self.responses[nonce] = rejected.nack(error)
        if response.content:
            self.rejected = (*self.rejected, response.content)
        self.held = _fold(self.confirmed, later, self.subscription)
        self.in_flight = later
        if earlier:
            self.nonce_acked = earlier[-1].nonce
        self.last_error = error
        return self

    def withheld(self, available: Mapping[str, str]) -> frozenset[str]:
        """Names held back because their rejected content has not changed."""
        names: set[str] = set()
        for unit in self.rejected:
            if all(available.get(n) == v for n, v in unit.items()):
                names.update(unit)
        return frozenset(names)

    def _leave(self, nonce: str | None) -> None:
        """A name no longer points at the response ``nonce``: forget it when none does."""
        if nonce is None:
            return
        live = self._live
        left = live[nonce] - 1
        if left:
            live[nonce] = left
        else:
            del live[nonce], self.responses[nonce]

    def _answer(self, settled: tuple[InFlight, ...], now: float) -> None:
        """The ``settled`` responses were ACKed: mark those names still point at."""
        responses = self.responses
        for response in settled:
            sent = responses.get(response.nonce)
            if sent is not None:
                responses[response.nonce] = sent.ack(now)

    def _index(self, nonce: str) -> int:
        for index, response in enumerate(self.in_flight):
            if response.nonce == nonce:
                return index
        raise LookupError(f"{self.type_url}: nonce {nonce!r} is not in flight")


def _fold(
    base: Mapping[str, str], responses: Iterable[InFlight], subscription: Subscription
) -> dict[str, str]:
    """``base`` with ``responses`` applied in order, as a client subscribed so would."""
    holds = dict(base)
    _apply(holds, responses, subscription)
    return holds


def _apply(
    holds: dict[str, str], responses: Iterable[InFlight], subscription: Subscription
) -> None:
    """Apply ``responses`` to ``holds`` in place, in order."""
    covers = subscription.covers
    for response in responses:
        for name, version in response.content.items():
            if covers(name):
                holds[name] = version
        for name in response.removed:
            holds.pop(name, None)


def _changes_unit(
    unit: Mapping[str, str], content: Mapping[str, str], removed: frozenset[str]
) -> bool:
    return any(
        name in removed or (name in content and content[name] != version)
        for name, version in unit.items()
    )

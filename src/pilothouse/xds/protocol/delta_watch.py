"""The state of one delta xDS watch (one type on one stream), as a frozen value.

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
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from pilothouse.protocol.messages import NackError
from pilothouse.protocol.subscriptions import Subscription
from pilothouse.xds.protocol.records import ResourceRecord, sent_record
from pilothouse.xds.protocol.sync_status import SyncStatus, sync_status
from pilothouse.xds.protocol.versions import check_version_advance


def _no_versions() -> Mapping[str, str]:
    return MappingProxyType({})


def _no_records() -> Mapping[str, ResourceRecord]:
    return MappingProxyType({})


@dataclass(frozen=True)
class InFlight:
    """A response sent and not yet ACKed or NACKed."""

    nonce: str
    content: Mapping[str, str]
    removed: frozenset[str]


@dataclass(frozen=True)
class DeltaWatch:
    """One type's watch on a delta stream."""

    type_url: str
    subscription: Subscription = field(default_factory=Subscription)
    confirmed: Mapping[str, str] = field(default_factory=_no_versions)
    held: Mapping[str, str] = field(default_factory=_no_versions)
    in_flight: tuple[InFlight, ...] = ()
    nonce_sent: str = ""
    version_sent: str = ""
    nonce_acked: str = ""
    last_error: NackError | None = None
    always_respond: bool = False
    rejected: tuple[Mapping[str, str], ...] = ()
    resources: Mapping[str, ResourceRecord] = field(default_factory=_no_records)

    @classmethod
    def start(
        cls, type_url: str, subscription: Subscription, initial_versions: Mapping[str, str]
    ) -> DeltaWatch:
        """A new watch; ``initial_versions`` is what the client reports holding."""
        holds = MappingProxyType(
            {n: v for n, v in initial_versions.items() if subscription.covers(n)}
        )
        return cls(type_url, subscription=subscription, confirmed=holds, held=holds)

    @property
    def sync_status(self) -> SyncStatus:
        return sync_status(self.nonce_sent, self.nonce_acked, self.last_error)

    def is_in_flight(self, nonce: str) -> bool:
        return bool(nonce) and any(r.nonce == nonce for r in self.in_flight)

    def with_subscription(self, subscription: Subscription) -> DeltaWatch:
        """Apply a new subscription; the client forgets what it no longer subscribes to."""
        if subscription == self.subscription:
            return self
        confirmed = {n: v for n, v in self.confirmed.items() if subscription.covers(n)}
        records = {n: r for n, r in self.resources.items() if subscription.covers(n)}
        return replace(
            self,
            subscription=subscription,
            confirmed=MappingProxyType(confirmed),
            held=_fold(confirmed, self.in_flight, subscription),
            resources=MappingProxyType(records),
        )

    def warming(self) -> DeltaWatch:
        return replace(self, always_respond=True)

    def answered(self) -> DeltaWatch:
        return replace(self, always_respond=False)

    def sent(
        self,
        nonce: str,
        content: Mapping[str, str],
        removed: frozenset[str],
        now: float,
        system_version: str = "",
    ) -> DeltaWatch:
        """A response went out: the client will hold ``content`` and drop ``removed``."""
        if not nonce:
            raise ValueError(f"{self.type_url}: a response needs a nonce")
        if nonce == self.nonce_sent or self.is_in_flight(nonce):
            raise ValueError(f"{self.type_url}: nonce {nonce!r} already used")
        if overlap := removed & content.keys():
            raise ValueError(f"{self.type_url}: {sorted(overlap)} both sent and removed")
        if system_version:
            check_version_advance(self.type_url, self.version_sent, system_version)
        response = InFlight(nonce, MappingProxyType(dict(content)), removed)
        records = dict(self.resources)
        records.update({n: sent_record(n, v, nonce, now) for n, v in content.items()})
        for name in removed:
            records.pop(name, None)
        rejected = tuple(u for u in self.rejected if not _changes_unit(u, content, removed))
        return replace(
            self,
            held=_fold(self.held, (response,), self.subscription),
            in_flight=(*self.in_flight, response),
            nonce_sent=nonce,
            version_sent=system_version or self.version_sent,
            rejected=rejected,
            resources=MappingProxyType(records),
        )

    def acked(self, nonce: str, now: float) -> DeltaWatch:
        """The client ACKed the in-flight response ``nonce`` (and so all before it)."""
        index = self._index(nonce)
        settled, rest = self.in_flight[: index + 1], self.in_flight[index + 1 :]
        return replace(
            self,
            confirmed=_fold(self.confirmed, settled, self.subscription),
            in_flight=rest,
            nonce_acked=nonce,
            last_error=None,
            resources=_ack_records(self.resources, settled, now),
        )

    def nacked(self, nonce: str, error: NackError, now: float) -> DeltaWatch:
        """The client NACKed the in-flight response ``nonce``; earlier ones were ACKed."""
        index = self._index(nonce)
        earlier, response = self.in_flight[:index], self.in_flight[index]
        later = self.in_flight[index + 1 :]
        confirmed = _fold(self.confirmed, earlier, self.subscription)
        records = dict(_ack_records(self.resources, earlier, now))
        for name in response.content:
            record = records.get(name)
            if record is not None and record.nonce == nonce:
                records[name] = record.nack(error)
        rejected = (*self.rejected, response.content) if response.content else self.rejected
        return replace(
            self,
            confirmed=confirmed,
            held=_fold(confirmed, later, self.subscription),
            in_flight=later,
            nonce_acked=earlier[-1].nonce if earlier else self.nonce_acked,
            last_error=error,
            rejected=rejected,
            resources=MappingProxyType(records),
        )

    def withheld(self, available: Mapping[str, str]) -> frozenset[str]:
        """Names held back because their rejected content has not changed."""
        names: set[str] = set()
        for unit in self.rejected:
            if all(available.get(n) == v for n, v in unit.items()):
                names.update(unit)
        return frozenset(names)

    def _index(self, nonce: str) -> int:
        for index, response in enumerate(self.in_flight):
            if response.nonce == nonce:
                return index
        raise LookupError(f"{self.type_url}: nonce {nonce!r} is not in flight")


def _fold(
    base: Mapping[str, str], responses: Iterable[InFlight], subscription: Subscription
) -> Mapping[str, str]:
    """``base`` with ``responses`` applied in order, as a client subscribed so would."""
    holds = dict(base)
    for response in responses:
        holds.update((n, v) for n, v in response.content.items() if subscription.covers(n))
        for name in response.removed:
            holds.pop(name, None)
    return MappingProxyType(holds)


def _changes_unit(
    unit: Mapping[str, str], content: Mapping[str, str], removed: frozenset[str]
) -> bool:
    return any(
        name in removed or (name in content and content[name] != version)
        for name, version in unit.items()
    )


def _ack_records(
    records: Mapping[str, ResourceRecord], settled: tuple[InFlight, ...], now: float
) -> Mapping[str, ResourceRecord]:
    if not settled:
        return records
    nonces = {r.nonce for r in settled}
    return MappingProxyType(
        {n: (r.ack(now) if r.nonce in nonces else r) for n, r in records.items()}
    )

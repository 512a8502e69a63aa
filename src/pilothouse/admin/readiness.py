"""Readiness checks: each one returns None when its part is ready, else what is missing.

``/ready`` answers 200 only when every check passes, as istiod's readiness probe does
(its ``discovery`` probe: config synced and the PushContext built). A config source
that becomes unavailable after it synced does not fail readiness (istiod keeps serving
when its config source drops; the source keeps its last good config): ``/ready`` reports
each source's state next to its verdict instead, from a :data:`SourceStates` callable.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Protocol

from pilothouse.sources.availability import Availability

ReadinessCheck = Callable[[], str | None]
"""A check: None when ready, else a short sentence naming what is missing."""

SourceStates = Callable[[], Sequence[Availability]]
"""The state of every config source that can tell, in precedence order."""


class SyncedStore(Protocol):
    def has_synced(self) -> bool: ...


class ReadyDiscovery(Protocol):
    @property
    def store(self) -> SyncedStore: ...

    def ready(self) -> bool: ...


def discovery_checks(discovery: ReadyDiscovery) -> tuple[ReadinessCheck, ...]:
    """Config sources synced, then the discovery server's first PushContext built."""

    def sources() -> str | None:
        return None if discovery.store.has_synced() else "config sources have not synced yet"

    def pushing() -> str | None:
        if discovery.ready():
            return None
        return "discovery server is not ready (no PushContext yet)"

    return (sources, pushing)


def missing(checks: Iterable[ReadinessCheck]) -> list[str]:
    """What every failing check reports, in order; empty when all pass."""
    return [reason for reason in (check() for check in checks) if reason]


def all_checks(
    discovery: ReadyDiscovery, extra: Sequence[ReadinessCheck] = ()
) -> tuple[ReadinessCheck, ...]:
    return (*discovery_checks(discovery), *extra)

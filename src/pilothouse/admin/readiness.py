"""Readiness checks: each one returns None when its part is ready, else what is missing.

``/ready`` answers 200 only when every check passes, as istiod's readiness probe does
(its ``discovery`` probe: config synced and the PushContext built). A config source
that becomes unavailable after it synced does not fail readiness (istiod keeps serving
when its config source drops; the source keeps its last good config): ``/ready`` reports
each source's state next to its verdict instead, from a :data:`SourceStates` callable.
Until every source has synced, :func:`sources_synced` names each one still waiting and
why (unavailable and its reason, the upstream's last error, or its first load not done).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Protocol, runtime_checkable

from pilothouse.sources.availability import Availability, ReportsAvailability

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


def discovery_checks(
    discovery: ReadyDiscovery, pending: Callable[[], Iterable[PendingSource]] | None = None
) -> tuple[ReadinessCheck, ...]:
    """Config sources synced (naming each of ``pending`` that has not, and why), then the
    discovery server's first PushContext built."""
    named = sources_synced(pending) if pending is not None else None

    def sources() -> str | None:
        if discovery.store.has_synced():
            return None
        detail = named() if named is not None else None
        return "config sources have not synced yet" + (f": {detail}" if detail else "")

    def pushing() -> str | None:
        if discovery.ready():
            return None
        return "discovery server is not ready (no PushContext yet)"

    return (sources, pushing)


class PendingSource(Protocol):
    """A config source as readiness sees it."""

    @property
    def name(self) -> str: ...

    def has_synced(self) -> bool: ...


class _UpstreamStatus(Protocol):
    @property
    def last_error(self) -> str: ...


@runtime_checkable
class ReportsLastError(Protocol):
    """A source fed by a stream (``xds://``): the last error of its connection."""

    def status(self) -> _UpstreamStatus: ...


def sources_synced(sources: Callable[[], Iterable[PendingSource]]) -> ReadinessCheck:
    """A check naming every source that has not synced yet, and why."""

    def check() -> str | None:
        waiting = [source for source in sources() if not source.has_synced()]
        if not waiting:
            return None
        return "; ".join(f"{source.name} ({why_not_synced(source)})" for source in waiting)

    return check


def why_not_synced(source: PendingSource) -> str:
    """Why ``source`` has not synced, as far as it can tell."""
    if isinstance(source, ReportsAvailability):
        state = source.availability()
        if not state.available:
            return f"unavailable: {state.reason}" if state.reason else "unavailable"
    if isinstance(source, ReportsLastError):
        error = source.status().last_error
        if error:
            return f"unavailable: {error}"
    return "its first load has not finished"


def missing(checks: Iterable[ReadinessCheck]) -> list[str]:
    """What every failing check reports, in order; empty when all pass."""
    return [reason for reason in (check() for check in checks) if reason]


def all_checks(
    discovery: ReadyDiscovery,
    extra: Sequence[ReadinessCheck] = (),
    pending: Callable[[], Iterable[PendingSource]] | None = None,
) -> tuple[ReadinessCheck, ...]:
    return (*discovery_checks(discovery, pending), *extra)

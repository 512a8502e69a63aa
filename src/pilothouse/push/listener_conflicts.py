"""Outbound listener conflicts found while a push context's listeners were generated.

The sidecar's default outbound listener plan (``xds/generators/lds_outbound.py``) notes
each service it refuses a listener, or a place on one, as an :class:`OutboundConflict`
beside the listeners it builds (the ResourceCache keeps both, so a scope's listeners
built in an earlier push still bring their conflicts). Each generation hands its group
of listeners to the context's :class:`ListenerConflicts`, which reads a group's
conflicts once. ``/metrics`` reads it as istiod's gauges: per push context, the
listeners with a conflict of each kind (istiod keys them by listener name, so a
listener counts once however many proxies or services share it).

It is observation only: what is sent never depends on it.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Final, NamedTuple

TCP_OVER_CURRENT_TCP: Final = "pilot_conflict_outbound_listener_tcp_over_current_tcp"
"""A non-HTTP service refused by another non-HTTP service that keeps the listener."""
TCP_OVER_CURRENT_HTTP: Final = "pilot_conflict_outbound_listener_tcp_over_current_http"
"""A non-HTTP service refused by an HTTP service on the wildcard listener of its port
(istiod counted it until it always sniffed protocols; pilothouse does not sniff)."""
CONFLICT_METRICS: Final = (TCP_OVER_CURRENT_TCP, TCP_OVER_CURRENT_HTTP)


class OutboundConflict(NamedTuple):
    """One service refused on an outbound listener, and the one that kept it."""

    listener: str
    accepted: str
    rejected: str
    protocol: str
    """The refused service port's protocol."""
    over_http: bool
    """The service that kept the listener serves HTTP on it."""

    @property
    def metric(self) -> str:
        return TCP_OVER_CURRENT_HTTP if self.over_http else TCP_OVER_CURRENT_TCP


class ListenerConflicts:
    """The outbound conflicts of the listeners generated from one push context."""

    def __init__(self) -> None:
        self._read: dict[int, object] = {}
        """Groups of notes already read, by id (each kept so its id stays its own)."""
        self._found: set[OutboundConflict] = set()

    def record(self, notes: frozenset[Hashable]) -> None:
        """Take the conflicts among a listener group's ``notes`` (read once per group)."""
        if id(notes) in self._read:
            return
        self._read[id(notes)] = notes
        self._found.update(n for n in notes if isinstance(n, OutboundConflict))

    def conflicts(self) -> list[OutboundConflict]:
        return sorted(self._found)

    def listeners_by_metric(self) -> Mapping[str, int]:
        """Each conflict metric's value: the listeners with such a conflict."""
        return {
            metric: len({c.listener for c in self._found if c.metric == metric})
            for metric in CONFLICT_METRICS
        }

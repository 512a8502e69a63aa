"""Refused xDS connections and streams, made visible: a log line each (throttled) and a
small record of the recent ones.

A proxy that is refused (a bad token, an identity that does not match its node, a rate
limit, a malformed node, a TLS connection closed by the TLS port's own limits) retries
with backoff and says little about why; the server is where the reason is known. So
every refusal is:

- logged at ``info`` on ``pilothouse.xds.refusals`` with the peer's address, the reason,
  the node id when there is one and the message the peer was given. The lines are
  throttled per reason (:class:`~pilothouse.logthrottle.LogThrottle`: a few per
  ``PILOTHOUSE_XDS_REFUSAL_LOG_INTERVAL``), and the next line written for a reason
  carries how many of its refusals were not logged (``suppressed``);
- counted by reason, with the last peer, node and time of each reason;
- kept in a bounded record of the latest ``PILOTHOUSE_XDS_REFUSALS_KEPT`` refusals.

``/debug/refusals`` serves :meth:`RefusalLog.view`; ``pilothouse proxy-status`` reads it.
Reasons are short words: admission's (:class:`~pilothouse.xds.server.admission.Refusal`
values) and the TLS front's (``tls_*``, :mod:`pilothouse.xds.server.tls_front`).
"""

from __future__ import annotations

import collections
import datetime
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from pilothouse.logthrottle import LogThrottle

log = logging.getLogger("pilothouse.xds.refusals")

LINES_PER_INTERVAL: Final = 5
"""Log lines per reason per interval; the rest are counted."""
LONGEST: Final = 256
"""Characters kept of a node id or a message (both may come from the peer)."""


@dataclass(frozen=True, slots=True)
class RefusalEntry:
    """One refusal."""

    at: float
    """Wall-clock time (seconds since the epoch)."""
    reason: str
    peer: str
    """The client's address as gRPC writes peers (``ipv4:10.0.0.7:40112``)."""
    node_id: str
    """The node id the peer claimed, when it sent one."""
    message: str
    """What the peer was told."""

    def as_json(self) -> dict[str, Any]:
        return {
            "time": _iso(self.at),
            "reason": self.reason,
            "peer": self.peer,
            "nodeId": self.node_id,
            "message": self.message,
        }


class RefusalLog:
    """The refusals of one server: log lines, counts by reason and the latest few."""

    def __init__(
        self,
        *,
        kept: int = 100,
        log_interval: float = 10.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._clock = clock
        self._recent: collections.deque[RefusalEntry] = collections.deque(maxlen=max(kept, 0))
        self._counts: dict[str, int] = {}
        self._last: dict[str, RefusalEntry] = {}
        self._throttle = LogThrottle(log_interval, LINES_PER_INTERVAL, clock=clock)

    def note(self, reason: str, peer: str, message: str, node_id: str = "") -> None:
        """Record one refusal and log it unless its reason's lines are used up."""
        entry = RefusalEntry(
            self._clock(), reason, peer or "unknown", node_id[:LONGEST], message[:LONGEST]
        )
        self._recent.append(entry)
        self._counts[reason] = self._counts.get(reason, 0) + 1
        self._last[reason] = entry
        suppressed = self._throttle.admit(reason)
        if suppressed is None:
            return
        extra: dict[str, Any] = {"reason": reason, "peer": entry.peer}
        if entry.node_id:
            extra["node"] = entry.node_id
        if suppressed:
            extra["suppressed"] = suppressed
        log.info("xds connection refused: %s", entry.message, extra=extra)

    def counts(self) -> dict[str, int]:
        """Refusals since start, by reason (only reasons seen)."""
        return dict(self._counts)

    def recent(self) -> list[RefusalEntry]:
        """The latest refusals, oldest first."""
        return list(self._recent)

    def view(self) -> dict[str, Any]:
        """``/debug/refusals``: ``reasons`` (count, last time, peer, node and message of
        each reason seen since start) and ``recent`` (the latest refusals, newest first)."""
        reasons = {
            reason: {
                "count": count,
                "lastTime": _iso(self._last[reason].at),
                "lastPeer": self._last[reason].peer,
                "lastNodeId": self._last[reason].node_id,
                "lastMessage": self._last[reason].message,
            }
            for reason, count in sorted(self._counts.items())
        }
        return {
            "reasons": reasons,
            "recent": [entry.as_json() for entry in reversed(self._recent)],
        }


def _iso(at: float) -> str:
    return datetime.datetime.fromtimestamp(at, datetime.UTC).isoformat(timespec="milliseconds")

"""The discovery server's plain counters, read by ``/metrics`` when it is scraped.

The push service counts triggers, updates and pushes into the part it owns
(:class:`~pilothouse.push.counters.PushCounters`); the discovery server counts what its
streams report (responses written, send errors, NACKs and expired nonces of closed
streams), by istiod's ``type`` label (:func:`count_by_type`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from pilothouse.metrics.push import metric_type
from pilothouse.protocol.type_urls import CDS, EDS, LDS, RDS
from pilothouse.push.counters import PushCounters

SEND_ERROR_TYPES = frozenset({CDS, EDS, LDS, RDS})
"""The types whose failed writes istiod counts as ``pilot_xds_pushes{type="<type>_senderr"}``."""


@dataclass
class XdsStats(PushCounters):
    """The push service's counters and the streams', read by ``/metrics`` when scraped
    (istiod metric names in comments).

    Per-type keys are istiod's ``type`` label values
    (:func:`~pilothouse.metrics.push.metric_type`).
    """

    pushes: dict[str, int] = field(default_factory=dict)
    """pilot_xds_pushes{type}: responses written, and ``<type>_senderr`` writes that failed."""
    rejects: dict[str, int] = field(default_factory=dict)
    """NACKs of closed streams (pilot_total_xds_rejects{type} adds the open ones')."""
    expired_nonces: dict[str, int] = field(default_factory=dict)
    """Stale-nonce requests of closed streams (pilot_xds_expired_nonce{type} adds the open
    ones')."""
    internal_errors: int = 0
    """Streams ended with INTERNAL (pilot_total_xds_internal_errors)."""
    send_errors: int = 0
    """Responses whose write to the stream failed, of any type."""
    sds_certificate_errors: int = 0
    """pilot_sds_certificate_errors_total: SDS secrets refused (once per stream and name)
    and workload certificates that failed to issue."""

    def send_failed(self, type_url: str) -> None:
        """Writing a ``type_url`` response to its stream failed."""
        self.send_errors += 1
        if type_url in SEND_ERROR_TYPES:
            key = f"{metric_type(type_url)}_senderr"
            self.pushes[key] = self.pushes.get(key, 0) + 1


def count_by_type(totals: dict[str, int], counts: Mapping[str, int]) -> None:
    """Add ``counts`` (by type URL) to ``totals`` (by istiod's ``type`` label)."""
    for type_url, count in counts.items():
        kind = metric_type(type_url)
        totals[kind] = totals.get(kind, 0) + count

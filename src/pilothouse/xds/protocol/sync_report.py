"""Where each watched type of one stream stands: what ``/debug/syncz`` and CSDS report.

:func:`type_syncs` reads a stream's session (SotW or delta) and gives, per watched
type, the nonce and version last sent, the nonce last ACKed, when the latest response
went out, the last NACK, and the istioctl status those make
(:func:`~pilothouse.xds.protocol.sync_status.sync_status`). It only reads the frozen
watch values, so a debug view costs nothing on the push path.

Send times: a SotW watch keeps the latest response with its time; a delta watch keeps
a record per resource, so its latest response's time is that of the resources it
carried (unknown when it only removed some).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pilothouse.protocol.messages import NackError
from pilothouse.protocol.type_urls import push_order_key
from pilothouse.xds.protocol.delta import DeltaSession
from pilothouse.xds.protocol.delta_watch import DeltaWatch
from pilothouse.xds.protocol.sotw import SotwSession
from pilothouse.xds.protocol.sotw_watch import SotwWatch
from pilothouse.xds.protocol.sync_status import SyncStatus


@dataclass(frozen=True, slots=True)
class TypeSync:
    """One watched type on one stream."""

    type_url: str
    status: SyncStatus
    nonce_sent: str
    nonce_acked: str
    version_sent: str
    sent_at: float | None
    """Wall-clock time the latest response of the type was sent; None if unknown."""
    error: NackError | None
    """The last NACK, until an ACK clears it."""


def type_syncs(session: SotwSession | DeltaSession) -> Mapping[str, TypeSync]:
    """Every watched type of ``session``, in push order."""
    found: dict[str, TypeSync] = {}
    for type_url in sorted(session.watches, key=push_order_key):
        watch = session.watches[type_url]
        if isinstance(watch, SotwWatch):
            found[type_url] = _sotw(watch)
        else:
            found[type_url] = _delta(watch)
    return found


def _sotw(watch: SotwWatch) -> TypeSync:
    latest = watch.responses.get(watch.nonce_sent)
    return TypeSync(
        watch.type_url,
        watch.sync_status,
        watch.nonce_sent,
        watch.nonce_acked,
        watch.version_sent,
        latest.sent_at if latest is not None else None,
        watch.last_error,
    )


def _delta(watch: DeltaWatch) -> TypeSync:
    nonce = watch.nonce_sent
    times = [r.sent_at for r in watch.resources.values() if r.nonce == nonce] if nonce else []
    return TypeSync(
        watch.type_url,
        watch.sync_status,
        nonce,
        watch.nonce_acked,
        watch.version_sent,
        max(times) if times else None,
        watch.last_error,
    )

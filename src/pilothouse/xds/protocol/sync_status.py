"""The sync status of one watched type, in istioctl ``proxy-status`` terms.

First match wins: a recorded NACK is ERROR; nothing ever sent is NOT SENT; the
latest nonce ACKed is SYNCED; anything else (sent, not yet ACKed) is STALE.
"""

from __future__ import annotations

import enum

from pilothouse.protocol.messages import NackError


class SyncStatus(enum.Enum):
    """istioctl's per-type cell text."""

    SYNCED = "SYNCED"
    NOT_SENT = "NOT SENT"
    STALE = "STALE"
    ERROR = "ERROR"
    IGNORED = "IGNORED"


def sync_status(nonce_sent: str, nonce_acked: str, last_error: NackError | None) -> SyncStatus:
    """Classify a type from the nonces sent and acked and the last NACK."""
    if last_error is not None:
        return SyncStatus.ERROR
    if not nonce_sent:
        return SyncStatus.NOT_SENT
    if nonce_acked == nonce_sent:
        return SyncStatus.SYNCED
    return SyncStatus.STALE

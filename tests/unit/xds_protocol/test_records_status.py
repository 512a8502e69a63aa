"""Per-resource send records and istioctl sync status."""

from __future__ import annotations

import pytest

from pilothouse.protocol.messages import NackError
from pilothouse.xds.protocol.records import sent_record
from pilothouse.xds.protocol.sync_status import SyncStatus, sync_status

ERR = NackError(13, "bad")


def test_record_lifecycle() -> None:
    record = sent_record("a", "v1", "n1", 5.0)
    assert record.pending and not record.acked and not record.nacked
    acked = record.ack(6.0)
    assert acked.acked and acked.acked_at == 6.0 and not acked.pending
    nacked = record.nack(ERR)
    assert nacked.nacked and nacked.error == ERR and not nacked.acked
    assert nacked.ack(7.0).error is None
    assert record.sent_at == 5.0 and record.version == "v1" and record.nonce == "n1"


@pytest.mark.parametrize(
    ("sent", "acked", "error", "status"),
    [
        pytest.param("n1", "n1", ERR, SyncStatus.ERROR, id="error-wins"),
        pytest.param("", "", None, SyncStatus.NOT_SENT, id="not-sent"),
        pytest.param("n2", "n2", None, SyncStatus.SYNCED, id="synced"),
        pytest.param("n2", "n1", None, SyncStatus.STALE, id="stale"),
        pytest.param("n2", "", None, SyncStatus.STALE, id="never-acked"),
    ],
)
def test_sync_status(sent: str, acked: str, error: NackError | None, status: SyncStatus) -> None:
    assert sync_status(sent, acked, error) is status


def test_sync_status_text_is_istioctls() -> None:
    assert SyncStatus.NOT_SENT.value == "NOT SENT"
    assert SyncStatus.SYNCED.value == "SYNCED"

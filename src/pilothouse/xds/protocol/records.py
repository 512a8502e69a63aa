"""What was sent of one resource on one stream, and what the client said about it.

One ``ResourceRecord`` per (stream, type, resource name): the version sent (a
push version in SotW, the resource's content hash in delta), the nonce and time
of the response that carried it, and whether that response was ACKed or NACKed.
``/debug/syncz`` and the inspector read these.
"""

from __future__ import annotations

from typing import NamedTuple

from pilothouse.xds.protocol.messages import NackError


class ResourceRecord(NamedTuple):
    """The last send of one resource and the client's answer to it.

    A NamedTuple rather than a dataclass: a push creates one per resource per proxy,
    and tuples are several times cheaper to build than frozen dataclasses.
    """

    name: str
    version: str
    nonce: str
    sent_at: float
    acked_at: float | None = None
    error: NackError | None = None

    @property
    def acked(self) -> bool:
        return self.acked_at is not None

    @property
    def nacked(self) -> bool:
        return self.error is not None

    @property
    def pending(self) -> bool:
        """Sent and not yet answered."""
        return self.acked_at is None and self.error is None

    def ack(self, now: float) -> ResourceRecord:
        return ResourceRecord(self.name, self.version, self.nonce, self.sent_at, now, None)

    def nack(self, error: NackError) -> ResourceRecord:
        return ResourceRecord(self.name, self.version, self.nonce, self.sent_at, None, error)


def sent_record(name: str, version: str, nonce: str, now: float) -> ResourceRecord:
    """A fresh record for a resource just sent."""
    return ResourceRecord(name, version, nonce, now)

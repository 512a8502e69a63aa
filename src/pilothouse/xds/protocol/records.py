"""What was sent of one resource on one stream, and what the client said about it.

One ``ResourceRecord`` per (stream, type, resource name): the version sent (a
push version in SotW, the resource's content hash in delta), the nonce and time
of the response that carried it, and whether that response was ACKed or NACKed.
``/debug/syncz`` and the inspector read these.

SotW keeps them by response rather than by resource: a ``SentResponse`` holds the
nonce, the send time, the content (name → version) and the client's answer of one
response, and ``HeldRecords`` maps each name to the response that last carried it.
An ACK or a NACK then touches one response, not every resource, and a push stores
no per-resource object at all; the ``ResourceRecord`` of a name is made when read.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import NamedTuple

from pilothouse.protocol.messages import NackError


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


_tuple = tuple.__new__


class SentResponse(NamedTuple):
    """One response on a SotW watch and the client's answer to it (a NamedTuple: one is
    made per response and per answer, and a tuple is several times cheaper to build)."""

    nonce: str
    sent_at: float
    content: Mapping[str, str]
    """Name → resource version of every resource the response carried."""
    acked_at: float | None = None
    error: NackError | None = None

    def ack(self, now: float) -> SentResponse:
        # made as the tuple it is, without the Python-level __new__: one per ACK
        return _tuple(SentResponse, (self.nonce, self.sent_at, self.content, now, None))

    def nack(self, error: NackError) -> SentResponse:
        return SentResponse(self.nonce, self.sent_at, self.content, None, error)

    def record(self, name: str) -> ResourceRecord:
        """The record of ``name``, one of the resources this response carried."""
        return ResourceRecord(
            name, self.content[name], self.nonce, self.sent_at, self.acked_at, self.error
        )


class HeldRecords(Mapping[str, ResourceRecord]):
    """Name → ``ResourceRecord`` of what a client holds, read from the responses.

    ``carriers`` maps each name to the nonce of the response that last carried it;
    None means every name of the ``latest`` response (a full-state type, where each
    response replaces everything before it).  ``responses`` holds at least every
    response a name points at.
    """

    __slots__ = ("_carriers", "_latest", "_responses")

    def __init__(
        self,
        carriers: Mapping[str, str] | None,
        responses: Mapping[str, SentResponse],
        latest: SentResponse | None,
    ) -> None:
        self._carriers = carriers
        self._responses = responses
        self._latest = latest

    def carrier(self, name: str) -> SentResponse | None:
        """The response that last carried ``name``, or None if none did."""
        if self._carriers is None:
            latest = self._latest
            return latest if latest is not None and name in latest.content else None
        nonce = self._carriers.get(name)
        return None if nonce is None else self._responses[nonce]

    def version(self, name: str) -> str | None:
        """The version of ``name`` last sent, or None if it was not."""
        response = self.carrier(name)
        return None if response is None else response.content[name]

    def __getitem__(self, name: str) -> ResourceRecord:
        response = self.carrier(name)
        if response is None:
            raise KeyError(name)
        return response.record(name)

    def __contains__(self, name: object) -> bool:
        if self._carriers is None:
            return self._latest is not None and name in self._latest.content
        return name in self._carriers

    def __iter__(self) -> Iterator[str]:
        if self._carriers is None:
            return iter(self._latest.content if self._latest is not None else ())
        return iter(self._carriers)

    def __len__(self) -> int:
        if self._carriers is None:
            return len(self._latest.content) if self._latest is not None else 0
        return len(self._carriers)

    def __repr__(self) -> str:
        return f"HeldRecords({dict(self.items())!r})"

"""A record of one xDS stream as the server saw it: every request in, every response out.

``StreamLog.attach(connection)`` wraps one in-process :class:`Connection` so that each
request the proxy sends (``on_request``) and each response queued for it (``_send``) is
appended to :attr:`StreamLog.entries` in the order they happened, decoded into a short
:class:`Message` (direction, type, nonce, names).  Tests count messages per change type
with it (``since(mark)``) and print the exact sequence when an assertion fails.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]

from pilothouse.protocol.type_urls import CDS, EDS, LDS, RDS, SDS
from pilothouse.xds.server.connection import Connection

SHORT = {CDS: "CDS", EDS: "EDS", LDS: "LDS", RDS: "RDS", SDS: "SDS"}


@dataclass(frozen=True, slots=True)
class Message:
    """One request (``out`` False) or response (``out`` True) on the stream."""

    out: bool
    type_url: str
    nonce: str
    names: tuple[str, ...]
    """Response: the resources it carries; request: the names it asks for (SotW) or
    subscribes to (delta)."""
    removed: tuple[str, ...] = ()
    """Delta response: removed resources; delta request: unsubscribed names."""
    error: bool = False
    """A request that NACKs."""

    @property
    def kind(self) -> str:
        return SHORT.get(self.type_url, self.type_url.rsplit(".", 1)[-1])

    def __str__(self) -> str:
        arrow = "server ->" if self.out else "envoy  <-"
        names = ",".join(_short(n) for n in self.names)
        removed = f" -[{','.join(_short(n) for n in self.removed)}]" if self.removed else ""
        nack = " NACK" if self.error else ""
        return f"{arrow} {self.kind} nonce={self.nonce or '-'} [{names}]{removed}{nack}"


def _short(name: str) -> str:
    """``outbound|9080|v1|reviews.ns.svc.cluster.local`` → ``9080|v1|reviews``."""
    parts = name.split("|")
    if len(parts) == 4:
        return f"{parts[1]}|{parts[2]}|{parts[3].split('.', 1)[0]}"
    return name


@dataclass
class StreamLog:
    """Everything one connection received and sent since :meth:`attach`."""

    delta: bool
    entries: list[Message] = field(default_factory=list)

    @classmethod
    def attach(cls, connection: Connection) -> StreamLog:
        log = cls(connection.delta)
        receive, send = connection.on_request, connection._send

        def on_request(request: Any, now: float, names: int | None = None) -> None:
            log.entries.append(log._request(request))
            receive(request, now, names)

        def _send(type_url: str, body: bytes, resources: int) -> None:
            log.entries.append(log._response(type_url, body))
            send(type_url, body, resources)

        connection.on_request = on_request  # type: ignore[method-assign]
        connection._send = _send  # type: ignore[method-assign]
        return log

    def mark(self) -> int:
        """A position: ``since(mark)`` is what came after it."""
        return len(self.entries)

    def since(self, mark: int) -> list[Message]:
        return self.entries[mark:]

    def responses(self, mark: int, type_url: str | None = None) -> list[Message]:
        return [m for m in self.since(mark) if m.out and type_url in (None, m.type_url)]

    def describe(self, mark: int = 0) -> str:
        return "\n".join(str(m) for m in self.since(mark))

    def _request(self, request: Any) -> Message:
        error = request.HasField("error_detail")
        if self.delta:
            return Message(
                False,
                request.type_url,
                request.response_nonce,
                tuple(request.resource_names_subscribe),
                tuple(request.resource_names_unsubscribe),
                error=error,
            )
        return Message(
            False, request.type_url, request.response_nonce, tuple(request.resource_names),
            error=error,
        )  # fmt: skip

    def _response(self, type_url: str, body: bytes) -> Message:
        if self.delta:
            delta = discovery_pb2.DeltaDiscoveryResponse.FromString(body)
            return Message(
                True,
                type_url,
                delta.nonce,
                tuple(r.name for r in delta.resources),
                tuple(delta.removed_resources),
            )
        sotw = discovery_pb2.DiscoveryResponse.FromString(body)
        return Message(True, type_url, sotw.nonce, tuple(_names(type_url, sotw.resources)))


def _names(type_url: str, resources: Any) -> list[str]:
    """The names of a SotW response's resources (read from the packed messages)."""
    from envoy.config.cluster.v3 import cluster_pb2  # type: ignore[import-untyped]
    from envoy.config.endpoint.v3 import endpoint_pb2  # type: ignore[import-untyped]

    names = []
    for packed in resources:
        if type_url == CDS:
            names.append(cluster_pb2.Cluster.FromString(packed.value).name)
        elif type_url == EDS:
            names.append(endpoint_pb2.ClusterLoadAssignment.FromString(packed.value).cluster_name)
        else:
            names.append("?")
    return names

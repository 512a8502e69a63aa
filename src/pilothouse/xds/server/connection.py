"""One connected proxy: its identity, its stream engine, and the responses it is owed.

A connection is driven from two sides, both on the event loop and never concurrently
within a step: the stream's reader hands it requests (:meth:`Connection.on_request`),
and the push service's workers hand it pushes they planned (:meth:`Connection.push`: it
is push/'s :class:`~pilothouse.push.target.PushTarget`). Either may produce
responses, which are appended in order to the connection's outbound queue
(:mod:`pilothouse.xds.server.outbound`); the stream's writer loop sends them.
Generation is synchronous and reads one PushContext, so a response never mixes two
snapshots.

The protocol (SotW or delta, nonces, make-before-break ordering) is the stream
engine's (:mod:`pilothouse.xds.protocol.stream_engine`): this holds identity, I/O,
timers and counters only.

Each queued response (:class:`Queued`) carries what its metrics need: its type, the
seconds spent generating it (timed by :class:`ProxyResources` with ``clock``) and when
it was queued; the writer (:mod:`pilothouse.xds.server.writer`) adds the write.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

from pilothouse.protocol.messages import DeltaRequest, SotwRequest, nack_error
from pilothouse.push.proxy import ProxyIdentity
from pilothouse.push.proxy_push import EndpointPush, ProxyPush
from pilothouse.push.signal import Signal
from pilothouse.settings import XdsSettings
from pilothouse.xds.protocol.delta import DeltaSession
from pilothouse.xds.protocol.sotw import SotwSession
from pilothouse.xds.protocol.stream_engine import Step, StreamEngine
from pilothouse.xds.protocol.stream_flavour import Outgoing
from pilothouse.xds.protocol.wire import NO_CONTROL_PLANE, ControlPlaneField, FanOutResponses
from pilothouse.xds.server.backend import Backend
from pilothouse.xds.server.nack_log import NackLog
from pilothouse.xds.server.outbound import Outbound
from pilothouse.xds.server.proxy_resources import ProxyResources

log = logging.getLogger("pilothouse.xds")

INTERNAL_ERROR = "internal error in pilothouse; this stream was closed (details in the server log)"
"""What a stream ending with INTERNAL tells the client: nothing of Python's internals."""


class Generation(Backend, Protocol):
    """What a connection needs from the server: the shared backend, plus a place to
    report what it sent."""

    def observe_send(self, connection: Connection, type_url: str, size: int) -> None: ...


class Queued(NamedTuple):
    """One response waiting for the stream's writer."""

    body: bytes
    type_url: str
    generation: float
    """Seconds spent generating its resources."""
    queued_at: float
    """When it was queued, on the connection's ``clock``."""


@dataclass
class ConnectionStats:
    pushes: int = 0
    responses: dict[str, int] = field(default_factory=dict)
    resources_sent: dict[str, int] = field(default_factory=dict)
    bytes_sent: int = 0


class Connection:
    """A proxy's stream. ``delta`` selects the stream engine's protocol."""

    def __init__(
        self,
        connection_id: str,
        peer: str,
        proxy: ProxyIdentity,
        generation: Generation,
        *,
        delta: bool,
        warming_timeout: float = XdsSettings.warming_timeout,
        clock: Callable[[], float] = time.perf_counter,
        control_plane: ControlPlaneField = NO_CONTROL_PLANE,
        responses: FanOutResponses | None = None,
    ) -> None:
        """``warming_timeout``: seconds routes wait for new clusters to warm before they
        are sent anyway; removed clusters linger at most twice as long. ``clock`` times
        generation and writes for the push metrics (the server's metrics clock);
        ``control_plane`` is the encoded field every response carries; ``responses``
        the server's SotW responses, shared by the streams sent the same content."""
        self.id = connection_id
        self.peer = peer
        self.proxy = proxy
        self.delta = delta
        self.connected_at = time.time()
        self.clock = clock
        self._resources = ProxyResources(proxy, generation, clock)
        self.engine = StreamEngine(
            self._resources,
            delta=delta,
            warming_timeout=warming_timeout,
            schedule=self._after,
            control_plane=control_plane,
            responses=responses,
        )
        self.control_plane = control_plane
        self.outbound: Outbound[Queued | None] = Outbound()
        self.writer_attached = False
        """True while the stream's writer loop (:mod:`pilothouse.xds.server.writer`) runs."""
        self.written_waiter: Signal | None = None
        """Resolved by the writer loop once the outbound queue is empty (:meth:`drained`)."""
        self.answered_waiter: Signal | None = None
        """Resolved once the proxy has answered every response sent (:meth:`when_answered`)."""
        self.stats = ConnectionStats()
        self.problem: str | None = None
        """Why the stream must end with INVALID_ARGUMENT, when the client broke the protocol."""
        self.failure: str | None = None
        """Why the stream must end with INTERNAL, when pilothouse failed serving it."""
        self.denied: str | None = None
        """Why the stream must end with PERMISSION_DENIED (a debug type it may not read)."""
        self._generation = generation
        self._nacks = NackLog(proxy.node_id)

    def __repr__(self) -> str:
        return f"Connection({self.id}, {self.proxy.node_id})"

    def reidentify(self, proxy: ProxyIdentity) -> None:
        """The proxy is now ``proxy`` (its Pod's labels changed: istiod's ProxyUpdate);
        what is generated from the next push on is for this identity."""
        self.proxy = proxy
        self._resources.reidentify(proxy)
        self._nacks.reidentify(proxy.node_id)

    # -- what the server asks (answered by the stream engine) -------------------------

    @property
    def session(self) -> SotwSession | DeltaSession:
        """The stream's SotW or delta session (its watches, for the debug views)."""
        return self.engine.session

    @property
    def sotw(self) -> SotwSession | None:
        return self.engine.sotw

    @property
    def delta_session(self) -> DeltaSession | None:
        return self.engine.delta_session

    def watched_types(self) -> list[str]:
        return self.engine.watched_types()

    def watched_names(self, type_url: str) -> frozenset[str] | None:
        """The explicitly watched names of a type; None when wildcard or not watched."""
        return self.engine.watched_names(type_url)

    def watches_any_host(self, hostnames: frozenset[str]) -> bool:
        """Whether any watched EDS cluster name has its host among ``hostnames``."""
        return self.engine.watches_any_host(hostnames)

    def watches_secrets(self, names: frozenset[str]) -> bool:
        """Whether any of the SDS secrets ``names`` is watched."""
        return self.engine.watches_secrets(names)

    def watches_hosts(self, hostnames: frozenset[str]) -> frozenset[str]:
        """Watched EDS cluster names whose host is one of ``hostnames``."""
        return self.engine.watches_hosts(hostnames)

    @property
    def settling(self) -> bool:
        """True while routes wait for new clusters, or removed clusters wait for routes."""
        return self.engine.settling

    # -- requests and pushes ----------------------------------------------------------

    def on_request(
        self, request: SotwRequest | DeltaRequest, now: float, names: int | None = None
    ) -> None:
        """A request from the proxy; ``names`` fingerprints a SotW request's resource
        names (:func:`pilothouse.protocol.request_bytes.names_fingerprint`); a NACK is
        logged (:mod:`pilothouse.xds.server.nack_log`)."""
        error = nack_error(request)
        if error is not None:
            type_url = request.type_url
            self._nacks.nacked(
                type_url, request.response_nonce, error, now, lambda: self._patching(type_url)
            )
        self._write(self.engine.receive(request, now, names))
        waiter = self.answered_waiter
        if waiter is not None and not self.unanswered():
            self.answered_waiter = None
            if not waiter.done():
                waiter.set_result(None)

    def _patching(self, type_url: str) -> list[str]:
        """The ``ns/name`` of the EnvoyFilters that patch ``type_url`` for this proxy."""
        return self._generation.context.envoy_filters.patching(self.proxy, type_url)

    def push(self, planned: ProxyPush, now: float) -> None:
        """Send what push/ planned for this proxy (:mod:`pilothouse.push.proxy_push`),
        types in make-before-break order."""
        self.stats.pushes += 1
        if isinstance(planned, EndpointPush):
            if planned.clusters:
                self._write(self.engine.push_endpoints(planned.clusters, now))
            if planned.secrets:
                self._write(self.engine.push_secrets(planned.secrets, now))
            return
        self._write(
            self.engine.push_full(
                now,
                endpoints=planned.endpoints,
                resend=planned.resend,
                unchanged=planned.unchanged,
            )
        )

    # -- timers -----------------------------------------------------------------------

    def _after(self, delay: float, action: Step) -> None:
        with contextlib.suppress(RuntimeError):
            asyncio.get_running_loop().call_later(delay, self._contained, action)

    def _contained(self, action: Step) -> None:
        """Run a timed step (warming give-up, lingering release); if it raises, only this
        connection ends (with INTERNAL), never the event loop's other work."""
        if self.failure is not None or self.problem is not None:
            return
        try:
            self._write(action(time.time()) or ())
        except Exception:
            log.exception("timed push step failed", extra={"connection": self.id})
            self.fail(INTERNAL_ERROR)

    # -- I/O --------------------------------------------------------------------------

    def _write(self, responses: Iterable[Outgoing]) -> None:
        for response in responses:
            self._send(response.type_url, response.body, response.resources)
        self._resources.forget_generation_time()  # what produced no response

    def _send(self, type_url: str, body: bytes, resources: int) -> None:
        self.stats.responses[type_url] = self.stats.responses.get(type_url, 0) + 1
        sent = self.stats.resources_sent
        sent[type_url] = sent.get(type_url, 0) + resources
        self.stats.bytes_sent += len(body)
        self._generation.observe_send(self, type_url, len(body))
        generation = self._resources.generation_time(type_url)
        self.outbound.put_nowait(Queued(body, type_url, generation, self.clock()))

    def when_written(self) -> Signal | None:
        """A signal resolved once every response queued so far is written (or the writer
        stops); None when there is nothing to wait for (no writer, or nothing queued).

        The push workers wait for it, so a connection counts as being pushed until its
        responses are on the wire: pushes that come meanwhile merge in the push queue
        instead of piling up stale responses behind a slow stream. One signal however
        many wait; the writer resolves it when the queue runs empty, without a task, a
        queue join or a future per push (:mod:`pilothouse.push.signal`).
        """
        if not self.writer_attached or self.outbound.empty():
            return None
        waiter = self.written_waiter
        if waiter is None or waiter.done():
            waiter = self.written_waiter = Signal()
        return waiter

    def unanswered(self) -> bool:
        """Whether a response sent on this stream is neither ACKed nor NACKed yet (SotW:
        the latest nonce of some type; delta: a response in flight)."""
        session = self.engine.session
        if isinstance(session, SotwSession):
            for watch in session.watches.values():
                sent = watch.nonce_sent
                if sent and sent != watch.nonce_acked and sent != watch.nonce_nacked:
                    return True
            return False
        return any(watch.in_flight for watch in session.watches.values())

    def when_answered(self) -> Signal | None:
        """A signal resolved once the proxy has answered (ACK or NACK) every response
        sent so far, or the stream ends; None when nothing is unanswered.

        The push workers hold the connection's next push until then (up to a limit), so
        pushes that come meanwhile merge instead of queueing behind responses the proxy
        has not read yet. One signal however many wait; :meth:`on_request` resolves it.
        """
        if not self.unanswered():
            return None
        waiter = self.answered_waiter
        if waiter is None or waiter.done():
            waiter = self.answered_waiter = Signal()
        return waiter

    def drained(self) -> None:
        """The writer emptied the outbound queue (or stopped): wake whoever waits."""
        waiter = self.written_waiter
        if waiter is not None:
            self.written_waiter = None
            if not waiter.done():
                waiter.set_result(None)

    def fail(self, reason: str = INTERNAL_ERROR) -> None:
        """End this stream with INTERNAL and ``reason`` (the first reason given stays):
        after an exception mid-response its protocol state can no longer be trusted, and
        the proxy reconnects to a fresh one."""
        if self.failure is None:
            self.failure = reason
        self.close()

    def close(self) -> None:
        self.outbound.put_nowait(None)
        waiter, self.answered_waiter = self.answered_waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

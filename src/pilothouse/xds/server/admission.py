"""Admission control: which new xDS streams are let in, and the counts of what was refused.

Every stream on the xDS port (ADS SotW and delta, the per-type services, MCP over xDS
and legacy MCP) passes :meth:`Admission.stream` once it is open (xDS streams once their
first request has arrived) and before anything is served to it:

1. the circuit breaker: with ``max_connections`` streams already open (admitted or
   waiting for their turn), a new one is refused at once with ``UNAVAILABLE``;
2. the token bucket (:mod:`pilothouse.xds.server.token_bucket`): new streams are let
   in at ``rate`` a second with bursts of ``burst``, first come first served. A stream
   is held in line (a FIFO queue) until its token comes, so that a storm is let in at
   the rate with no token left unused; only one whose turn is more than ``wait`` away
   (counting the streams ahead of it, at the configured rate) is refused at once, with
   ``RESOURCE_EXHAUSTED``, rather than held only to be refused. The refusal says when
   to come back: in its message and in the standard ``grpc-retry-pushback-ms`` trailer,
   the time until its turn would be half the wait away if it came back then, counting
   the streams refused before it as coming back at theirs (each refused stream is
   promised the token after the last one promised, so that the refused streams of a
   storm come back spread out over the tokens, not all at once). Tokens are counted when
   streams are let in: no span of ``T`` seconds sees more than ``burst + rate * T``
   admissions, and no second more than the rate (or the burst, if larger). The burst
   lets the one event loop admit the streams whose tokens came due while it was busy
   elsewhere (waiting streams are let in once per loop turn); an event loop busy for
   longer lets in fewer, never a catch-up burst. Waiting streams are let in together,
   :data:`ADMIT_EVERY` seconds of tokens at a time (25 at 250/s, the default burst; one
   below 20/s; at most the burst), each then waiting at most that much longer: one
   stream per token cost a fifth more CPU per stream (a loop turn, a timer, gRPC
   wake-ups each; ``bench/connect_storm.py``). A ``rate`` of 0 lets every stream in at once.

Envoy does not read the pushback hint: a refused Envoy reconnects after its own jittered
backoff (0.5 s, then up to 1.5 s, 3.5 s ... 30 s), which is why streams are held rather
than refused whenever the wait allows. pilothouse's load generator honours the hint.

An :class:`Admission` is changed at run time with :meth:`Admission.configure` (the next
stream sees the change; streams already in stay). It counts, in plain ints, the streams
it admitted and the refusals by reason, including two decided elsewhere and reported
with :meth:`Admission.refuse`: ``not_ready`` (``UNAVAILABLE`` before config has synced)
and ``bad_node`` (``INVALID_ARGUMENT`` for a first request without a usable node id).
:meth:`Admission.snapshot` copies them, cheaply enough to call at every scrape. Every
refusal also goes to :attr:`Admission.refusals`
(:class:`~pilothouse.xds.server.refusals.RefusalLog`): a throttled ``info`` line with
the peer and the reason, and the record ``/debug/refusals`` serves.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import enum
import logging
import math
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import grpc

from pilothouse.settings import AdmissionSettings
from pilothouse.xds.server.refusals import RefusalLog
from pilothouse.xds.server.token_bucket import TokenBucket

log = logging.getLogger("pilothouse.xds.admission")


class Refusal(enum.Enum):
    """Why a stream was refused; the values are the counters' ``reason`` labels."""

    RATE_LIMITED = "rate_limited"
    """RESOURCE_EXHAUSTED: its turn under the rate limit was more than ``wait`` away."""
    MAX_CONNECTIONS = "max_connections"
    """UNAVAILABLE: ``max_connections`` streams were open already."""
    NOT_READY = "not_ready"
    """UNAVAILABLE: config had not synced yet."""
    BAD_NODE = "bad_node"
    """INVALID_ARGUMENT: the first request named no node id, or a malformed one."""
    BAD_REQUEST = "bad_request"
    """INVALID_ARGUMENT: the first request's bytes did not decode."""
    UNAUTHENTICATED = "unauthenticated"
    """UNAUTHENTICATED: a stream on the TLS port proved no identity."""
    PERMISSION_DENIED = "permission_denied"
    """PERMISSION_DENIED: a TLS-port caller may not be that proxy, or use ``api``."""


PUSHBACK_TRAILER = "grpc-retry-pushback-ms"
"""The standard gRPC trailer that tells a client when to retry, in whole milliseconds."""
_ROUNDING = 1e-6
"""Milliseconds short of a whole one that still round down (0.35 s is 350 ms, not 351)."""
ADMIT_EVERY = 0.1
"""Seconds of tokens waiting streams are let in with at once (module docstring)."""


class Refused(Exception):
    """A stream refused by admission control: end it with ``code``, ``message`` and
    :meth:`trailers` (the pushback hint when ``retry_after``, seconds, is known)."""

    def __init__(
        self,
        reason: Refusal,
        code: grpc.StatusCode,
        message: str,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.reason = reason
        self.code = code
        self.message = message
        self.retry_after = retry_after

    def trailers(self) -> tuple[tuple[str, str], ...]:
        """The trailing metadata to end the stream with: ``grpc-retry-pushback-ms``
        when the refusal knows when to come back, else none."""
        if self.retry_after is None:
            return ()
        return ((PUSHBACK_TRAILER, str(pushback_ms(self.retry_after))),)


def pushback_ms(seconds: float) -> int:
    """``seconds`` as the pushback trailer says them: whole milliseconds, rounded up."""
    return math.ceil(seconds * 1000 - _ROUNDING)


@dataclass(frozen=True, slots=True)
class AdmissionSnapshot:
    """The counters at one instant (plain ints; counters only grow)."""

    admitted: int
    """Streams let in since start."""
    rejected: Mapping[str, int]
    """Streams refused since start, by :class:`Refusal` value (every reason, 0 included)."""
    connections: int
    """Streams open now: admitted and not ended, or waiting for their turn."""
    waiting: int
    """Streams waiting for their turn now."""


@dataclass(frozen=True, slots=True)
class _Turn:
    """A stream waiting for its token."""

    admitted: asyncio.Future[None]
    peer: str
    arrived: float


class Admission:
    """The xDS port's door: a circuit breaker and a token bucket for new streams."""

    def __init__(
        self,
        settings: AdmissionSettings | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        refusals: RefusalLog | None = None,
    ) -> None:
        self._settings = settings if settings is not None else AdmissionSettings()
        self.refusals = refusals if refusals is not None else RefusalLog()
        """Every refusal, logged (throttled) and recorded for ``/debug/refusals``."""
        self._clock = clock
        self._to_wall = time.time() - clock()
        """Added to a ``clock`` instant, the wall-clock time logged for it."""
        self._bucket = self._new_bucket()
        self._admitted = 0
        self._rejected = dict.fromkeys(Refusal, 0)
        self._open = 0
        self._waiting = 0
        self._queue: collections.deque[_Turn] = collections.deque()
        """Streams waiting for a token, first come first served."""
        self._timer: asyncio.TimerHandle | None = None
        self._promised = -math.inf
        """When the token promised to the stream refused last is due (``clock`` time)."""

    # -- the knobs, read and changed at run time ------------------------------------------

    @property
    def settings(self) -> AdmissionSettings:
        return self._settings

    @property
    def rate(self) -> float:
        """New streams per second; 0: no rate limit."""
        return self._settings.rate

    @property
    def burst(self) -> int:
        return self._settings.burst

    @property
    def wait(self) -> float:
        """Longest a stream waits for its turn, seconds."""
        return self._settings.wait

    @property
    def max_connections(self) -> int:
        """Streams open at once, at most; 0: no limit."""
        return self._settings.max_connections

    def configure(
        self,
        *,
        rate: float | None = None,
        burst: int | None = None,
        max_connections: int | None = None,
        wait: float | None = None,
    ) -> AdmissionSettings:
        """Change the knobs given (None keeps one) for every stream from the next on;
        the settings now in force. Raises ValueError for a value out of range (then
        nothing changes). Streams already open stay, even above a lowered limit."""
        current = self._settings
        updated = AdmissionSettings(  # checks the values
            rate=current.rate if rate is None else float(rate),
            burst=current.burst if burst is None else burst,
            wait=current.wait if wait is None else float(wait),
            max_connections=current.max_connections if max_connections is None else max_connections,
        )
        now = self._clock()
        if updated.rate == 0:
            self._bucket = None
        elif self._bucket is None:
            self._bucket = TokenBucket(updated.rate, updated.burst, now)
        else:
            self._bucket.reconfigure(updated.rate, updated.burst, now)
        self._settings = updated
        self._promised = -math.inf  # promises made at the old rate are not kept
        if self._timer is not None:  # the waiting streams' next turn moved
            self._timer.cancel()
            self._timer = None
            self._schedule(now)
        log.info(
            "admission control changed",
            extra={
                "rate": updated.rate,
                "burst": updated.burst,
                "wait": updated.wait,
                "max_connections": updated.max_connections,
            },
        )
        return updated

    # -- streams ------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def stream(self, peer: str = "", node_id: str = "") -> AsyncIterator[None]:
        """Hold one stream's place from admission until the block ends; raises
        :class:`Refused` (the refusal counted and logged, with ``peer`` and the
        ``node_id`` the stream claimed) when the stream may not come in."""
        limit = self._settings.max_connections
        if limit and self._open >= limit:
            refused = Refused(
                Refusal.MAX_CONNECTIONS,
                grpc.StatusCode.UNAVAILABLE,
                f"pilothouse is at its limit of {limit} xDS connections (circuit breaker, "
                "PILOTHOUSE_XDS_ADMISSION_MAX_CONNECTIONS): connect to another replica "
                "or retry later",
            )
            self._count(refused, peer, node_id)
            raise refused
        self._open += 1
        try:
            await self._take_turn(peer, node_id)
            self._admitted += 1
            yield
        finally:
            self._open -= 1

    @contextlib.asynccontextmanager
    async def admit(self, context: grpc.aio.ServicerContext[Any, Any]) -> AsyncIterator[None]:
        """:meth:`stream` for a servicer's stream, from its first message on (the MCP
        ResourceSource's): a refused stream is ended with the refusal's code and message."""
        try:
            async with self.stream(context.peer()):
                yield
        except Refused as refused:
            await context.abort(refused.code, refused.message, refused.trailers())

    async def _take_turn(self, peer: str, node_id: str) -> None:
        bucket = self._bucket
        if bucket is None:
            self._note_admitted(peer, 0.0, time.time())
            return
        now = self._clock()
        if not self._waiting and bucket.take(now):
            self._note_admitted(peer, 0.0, now + self._to_wall)
            return
        settings = self._settings
        turn = bucket.wait(now, ahead=self._waiting)
        if turn > settings.wait:
            retry_after = self._promise(now, now + turn)
            refused = Refused(
                Refusal.RATE_LIMITED,
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"request rate limit exceeded: pilothouse admits {settings.rate:g} new xDS "
                f"streams a second (burst {settings.burst}) and this stream's turn was more "
                f"than {settings.wait:g} s away; come back in "
                f"{pushback_ms(retry_after) / 1000:.3f} s "
                f"({PUSHBACK_TRAILER})",
                retry_after,
            )
            self._count(refused, peer, node_id)
            raise refused
        waiting = _Turn(asyncio.get_running_loop().create_future(), peer, now)
        self._queue.append(waiting)
        self._waiting += 1
        try:
            self._schedule(now)
            await waiting.admitted
        finally:
            self._waiting -= 1

    def _promise(self, now: float, due: float) -> float:
        """Promise a refused stream the token after the last one promised (or the one
        due at ``due``, its turn now, if later); seconds from now until it should come
        back: when that token is half the wait away (at once if it is nearer already)."""
        promised = self._promised = max(due, self._promised + 1.0 / self._settings.rate)
        return max(0.0, promised - now - self._settings.wait / 2)

    def _schedule(self, now: float) -> None:
        """Have the queue served when its next batch's tokens are due (once; re-armed)."""
        if self._timer is None and self._queue:
            bucket = self._bucket
            delay = 0.0
            if bucket is not None:
                batch = min(len(self._queue), bucket.batch(ADMIT_EVERY))
                delay = bucket.wait(now, ahead=batch - 1)
            self._timer = asyncio.get_running_loop().call_later(delay, self._serve_queue)

    def _serve_queue(self) -> None:
        """Let in the waiting streams the tokens in hand allow, first come first served
        (each counted and logged now, as it is let in)."""
        self._timer = None
        queue, bucket = self._queue, self._bucket
        now = self._clock()
        at = now + self._to_wall
        while queue:
            turn = queue[0]
            if turn.admitted.done():  # its stream went away while it waited
                queue.popleft()
            elif bucket is None or bucket.take(now):
                queue.popleft()
                turn.admitted.set_result(None)
                self._note_admitted(turn.peer, now - turn.arrived, at)
            else:
                break
        self._schedule(now)

    def refuse(
        self, reason: Refusal, peer: str = "", message: str = "", node_id: str = ""
    ) -> None:
        """Count and log a refusal decided outside admission control (not ready, bad node
        or request, unauthenticated, permission denied)."""
        self._rejected[reason] += 1
        self.refusals.note(reason.value, peer, message or reason.value, node_id)
        if log.isEnabledFor(logging.DEBUG):  # every one, unthrottled (bench/admission_storm.py)
            log.debug("xds stream refused", extra={"reason": reason.value, "peer": peer})

    def refuse_not_ready(self) -> None:
        """Count and log a stream refused because config has not synced yet."""
        self.refuse(Refusal.NOT_READY)

    # -- what is read -------------------------------------------------------------------

    @property
    def connections(self) -> int:
        """Streams open now (admitted, or waiting for their turn)."""
        return self._open

    def snapshot(self) -> AdmissionSnapshot:
        return AdmissionSnapshot(
            admitted=self._admitted,
            rejected=MappingProxyType({r.value: n for r, n in self._rejected.items()}),
            connections=self._open,
            waiting=self._waiting,
        )

    # -- inside -------------------------------------------------------------------------

    def _new_bucket(self) -> TokenBucket | None:
        settings = self._settings
        if settings.rate == 0:
            return None
        return TokenBucket(settings.rate, settings.burst, self._clock())

    def _count(self, refused: Refused, peer: str, node_id: str) -> None:
        self.refuse(refused.reason, peer, refused.message, node_id)

    def _note_admitted(self, peer: str, waited: float, at: float) -> None:
        """Log one admission (at debug level) with ``at``, the wall-clock time its token
        was taken: the bucket's own instant, moved to the wall clock by a fixed offset,
        so that logged admissions keep the bucket's bounds exactly (a batch let in
        together shares it; the line's own stamp is when it was written)."""
        if log.isEnabledFor(logging.DEBUG):
            log.debug(
                "xds stream admitted",
                extra={
                    "at": f"{at:.6f}",
                    "waited": round(waited, 4),
                    "open": self._open,
                    "peer": peer,
                },
            )

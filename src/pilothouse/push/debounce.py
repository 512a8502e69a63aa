"""Debouncing: turn a stream of push requests into one merged push at a time.

Events are merged into a pending batch. The batch is released once no event has come for
``debounce_after`` (the quiet period), or once ``debounce_max`` has passed since its first event,
whichever is sooner — but never while the previous release is still being pushed; events that
arrive meanwhile keep merging, and the batch goes out as soon as that push is done if it is due
by then. With ``eds_debounce`` off, EDS-only (non-full) requests skip the quiet period and are
released at the next free moment, still one push at a time.

The rules live in pure functions (:func:`on_event`, :func:`decide`, :func:`on_done`) over a
frozen :class:`DebounceState`; :class:`Debouncer` is the small asyncio driver around them.
Because the rules take the settings as an argument, the driver can swap them while it runs
(:meth:`Debouncer.reconfigure`).
Their knobs, :class:`DebounceSettings`, live in :mod:`pilothouse.settings` with every other
knob.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, replace

from pilothouse.push.clock import Clock, LoopClock, Timer
from pilothouse.push.request import PushRequest, merge_all
from pilothouse.settings import DebounceSettings as DebounceSettings

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class DebounceState:
    """Everything the debounce rules look at, as of the last event or release.

    ``pending`` is the debounced batch, with the times of its first and last events.
    ``immediate`` holds EDS-only requests that skip the quiet period (``eds_debounce`` off),
    with the time the first of them arrived. ``in_flight`` is true while a release is pushed.
    """

    pending: PushRequest | None = None
    first_event: float = 0.0
    last_event: float = 0.0
    immediate: PushRequest | None = None
    immediate_since: float = 0.0
    in_flight: bool = False


@dataclass(frozen=True, slots=True)
class Release:
    """Push ``request`` now and continue from ``next_state`` (which has ``in_flight`` set).

    ``debounce_time`` is first event → release for the debounced batch, or None when only
    requests that skip debouncing are released (istiod records no debounce time for those).
    """

    request: PushRequest
    debounce_time: float | None
    next_state: DebounceState


@dataclass(frozen=True, slots=True)
class Wait:
    """Nothing is due yet: decide again at ``until`` or when an event arrives."""

    until: float


@dataclass(frozen=True, slots=True)
class Hold:
    """Requests are pending but a push is in flight: decide again when it is done."""


@dataclass(frozen=True, slots=True)
class Idle:
    """Nothing is pending: decide again when an event arrives."""


Decision = Release | Wait | Hold | Idle


def on_event(
    settings: DebounceSettings, state: DebounceState, request: PushRequest, now: float
) -> DebounceState:
    """The state after ``request`` arrives at ``now``.

    A request without any reason counts as one ``unknown`` trigger; one without a start time
    starts ``now``.
    """
    return on_events(settings, state, ((request, now),))


def on_events(
    settings: DebounceSettings,
    state: DebounceState,
    arrivals: Iterable[tuple[PushRequest, float]],
) -> DebounceState:
    """The state after each ``(request, arrival time)`` in order, as :func:`on_event` would
    leave it, but in one pass linear in the changed keys (a source loading thousands of
    objects enqueues thousands of requests at once)."""
    batch: list[PushRequest] = []
    immediate: list[PushRequest] = []
    batch_times: list[float] = []
    immediate_times: list[float] = []
    for request, now in arrivals:
        request = request.with_default_reason()
        if not request.has_start:
            request = replace(request, start=now)
        if not settings.eds_debounce and not request.full:
            immediate.append(request)
            immediate_times.append(now)
        else:
            batch.append(request)
            batch_times.append(now)
    if immediate:
        if state.immediate is None:
            state = replace(
                state, immediate=merge_all(immediate), immediate_since=immediate_times[0]
            )
        else:
            state = replace(state, immediate=merge_all([state.immediate, *immediate]))
    if batch:
        if state.pending is None:
            state = replace(
                state,
                pending=merge_all(batch),
                first_event=batch_times[0],
                last_event=batch_times[-1],
            )
        else:
            state = replace(
                state, pending=merge_all([state.pending, *batch]), last_event=batch_times[-1]
            )
    return state


def due_at(settings: DebounceSettings, state: DebounceState) -> float | None:
    """When the pending batch becomes releasable (ignoring any push in flight); None if empty."""
    pending = state.pending
    if pending is None:
        return None
    if not settings.eds_debounce and not pending.full:
        return state.first_event
    quiet_at = state.last_event + settings.debounce_after
    return min(quiet_at, state.first_event + settings.debounce_max)


def decide(settings: DebounceSettings, state: DebounceState, now: float) -> Decision:
    """What to do at ``now``: release a merged request, wait until a time, hold, or idle."""
    if state.pending is None and state.immediate is None:
        return Idle()
    if state.in_flight:
        return Hold()
    due = due_at(settings, state)
    release_batch = due is not None and now >= due
    if state.immediate is None and not release_batch:
        assert due is not None
        return Wait(until=due)
    request: PushRequest | None = state.immediate
    debounce_time: float | None = None
    if release_batch:
        assert state.pending is not None
        request = state.pending if request is None else request.merge(state.pending)
        debounce_time = now - state.first_event
    assert request is not None
    next_state = DebounceState(
        pending=None if release_batch else state.pending,
        first_event=0.0 if release_batch else state.first_event,
        last_event=0.0 if release_batch else state.last_event,
        in_flight=True,
    )
    return Release(request, debounce_time, next_state)


def on_done(state: DebounceState) -> DebounceState:
    """The state once the push in flight has finished."""
    return replace(state, in_flight=False)


@dataclass(frozen=True, slots=True)
class DebounceStats:
    """Counters for ``pilot_debounce_time`` and friends until a metrics library takes over."""

    events: int = 0
    pushes: int = 0
    debounced_pushes: int = 0
    total_debounce_time: float = 0.0
    max_debounce_time: float = 0.0
    last_debounce_time: float = 0.0

    def observe(self, debounce_time: float | None) -> DebounceStats:
        if debounce_time is None:
            return replace(self, pushes=self.pushes + 1)
        return replace(
            self,
            pushes=self.pushes + 1,
            debounced_pushes=self.debounced_pushes + 1,
            total_debounce_time=self.total_debounce_time + debounce_time,
            max_debounce_time=max(self.max_debounce_time, debounce_time),
            last_debounce_time=debounce_time,
        )


PushFn = Callable[[PushRequest], Awaitable[None]]


class Debouncer:
    """Runs the debounce rules: ``enqueue`` from anywhere in the loop, one ``on_push`` at a time.

    ``on_push`` is awaited before the next release, so pushes never overlap. An exception from
    ``on_push`` or the observer is logged and the loop goes on; one while merging arrivals
    is logged and replaced by a push of everything, so no change is lost.
    ``observe_debounce_time`` (optional) receives each debounce time in seconds, for the
    ``pilot_debounce_time`` histogram.
    """

    def __init__(
        self,
        settings: DebounceSettings,
        on_push: PushFn,
        clock: Clock | None = None,
        *,
        observe_debounce_time: Callable[[float], None] | None = None,
    ) -> None:
        self._settings = settings
        self._on_push = on_push
        self._clock: Clock = clock if clock is not None else LoopClock()
        self._observe = observe_debounce_time
        self._state = DebounceState()
        self._arrivals: list[tuple[PushRequest, float]] = []
        self._stats = DebounceStats()
        self._wake = asyncio.Event()
        self._closed = False

    @property
    def settings(self) -> DebounceSettings:
        return self._settings

    def reconfigure(self, settings: DebounceSettings) -> None:
        """Use ``settings`` from the next decision on (the admin API changes the debounce
        times at run time). A batch already waiting is judged by the new times at once:
        a shorter quiet period may release it now, a longer one holds it longer."""
        self._settings = settings
        self._wake.set()

    @property
    def state(self) -> DebounceState:
        self._fold_arrivals()
        return self._state

    @property
    def stats(self) -> DebounceStats:
        return replace(self._stats, events=self._stats.events + len(self._arrivals))

    def enqueue(self, request: PushRequest) -> None:
        """Merge ``request`` into what is pending; never blocks. Ignored once closed.

        The request is only noted with its arrival time; the arrivals are merged together
        when the debouncer next looks at its state, so enqueueing is O(1) however many
        requests wait.
        """
        if self._closed:
            return
        self._arrivals.append((request, self._clock.now()))
        self._wake.set()

    def _fold_arrivals(self) -> None:
        if self._arrivals:
            arrivals, self._arrivals = self._arrivals, []
            try:
                self._state = on_events(self._settings, self._state, arrivals)
            except Exception:
                # A bug merging these requests must not stop the pushes, nor lose them:
                # what they changed is unknown now, so everything counts as changed.
                _log.exception("merging %d push requests failed; pushing everything", len(arrivals))
                arrived = min(now for _, now in arrivals)
                start = min(r.start if r.has_start else now for r, now in arrivals)
                everything = ((PushRequest.everything(start=start), arrived),)
                self._state = on_events(self._settings, self._state, everything)
            self._stats = replace(self._stats, events=self._stats.events + len(arrivals))

    def close(self) -> None:
        """Stop ``run`` after the push in flight (if any); pending requests are dropped."""
        self._closed = True
        self._wake.set()

    async def run(self) -> None:
        """Release pushes until closed."""
        while not self._closed:
            self._wake.clear()
            self._fold_arrivals()
            decision = decide(self._settings, self._state, self._clock.now())
            if isinstance(decision, Release):
                await self._push(decision)
                continue
            timer: Timer | None = None
            if isinstance(decision, Wait):
                timer = self._clock.call_at(decision.until, self._wake.set)
            try:
                await self._wake.wait()
            finally:
                if timer is not None:
                    timer.cancel()

    async def _push(self, release: Release) -> None:
        self._state = release.next_state
        self._stats = self._stats.observe(release.debounce_time)
        if release.debounce_time is not None and self._observe is not None:
            try:
                self._observe(release.debounce_time)
            except Exception:  # a metrics bug must not cost the push
                _log.exception("observing a debounce time failed")
        try:
            await self._on_push(release.request)
        except Exception:
            _log.exception("push of %s failed", release.request)
        finally:
            self._state = on_done(self._state)

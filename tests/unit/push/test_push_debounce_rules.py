"""The pure debounce rules: on_event, decide and on_done, as tables and as a simulation."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pilothouse.config.model import ConfigKey
from pilothouse.push.debounce import (
    DebounceSettings,
    DebounceState,
    Hold,
    Idle,
    Release,
    Wait,
    decide,
    on_done,
    on_event,
    on_events,
)
from pilothouse.push.request import PushRequest, TriggerReason

ISTIO = DebounceSettings()  # 100 ms quiet, 10 s max, EDS debounced
NO_EDS_DEBOUNCE = DebounceSettings(eds_debounce=False)

VS = ConfigKey("VirtualService", "default", "reviews")
SE = ConfigKey("ServiceEntry", "default", "db")
FULL = PushRequest.for_configs([VS], start=0.0)
EDS = PushRequest.for_configs([SE], TriggerReason.ENDPOINT, start=0.0, full=False)


def batch(first: float, last: float, request: PushRequest = FULL, **kw: object) -> DebounceState:
    return DebounceState(pending=request, first_event=first, last_event=last, **kw)  # type: ignore[arg-type]


def test_defaults_are_istiods() -> None:
    assert (ISTIO.debounce_after, ISTIO.debounce_max, ISTIO.eds_debounce) == (0.1, 10.0, True)
    with pytest.raises(ValueError):
        DebounceSettings(debounce_after=-1)


@pytest.mark.parametrize(
    ("config", "state", "now", "expected"),
    [
        pytest.param(ISTIO, DebounceState(), 5.0, Idle(), id="nothing-pending"),
        pytest.param(ISTIO, batch(0.0, 0.5), 0.55, Wait(until=0.6), id="not-quiet-yet"),
        pytest.param(ISTIO, batch(0.0, 9.95), 9.96, Wait(until=10.0), id="max-age-comes-first"),
        pytest.param(ISTIO, batch(0.0, 0.0, in_flight=True), 20.0, Hold(), id="in-flight-holds"),
        pytest.param(
            NO_EDS_DEBOUNCE,
            DebounceState(immediate=EDS, immediate_since=1.0, in_flight=True),
            1.0,
            Hold(),
            id="eds-immediate-still-one-at-a-time",
        ),
        pytest.param(
            ISTIO, batch(0.0, 0.0, request=EDS), 0.01, Wait(until=0.1), id="eds-debounced-when-on"
        ),
    ],
)
def test_decisions_that_do_not_release(
    config: DebounceSettings, state: DebounceState, now: float, expected: object
) -> None:
    assert decide(config, state, now) == expected


@pytest.mark.parametrize(
    ("state", "now", "debounce_time"),
    [
        pytest.param(batch(1.0, 1.5), 1.625, 0.625, id="quiet-release"),
        pytest.param(batch(0.0, 9.99), 10.0, 10.0, id="max-age-release"),
        pytest.param(batch(0.0, 0.5), 7.0, 7.0, id="overdue-release"),
    ],
)
def test_release_when_due(state: DebounceState, now: float, debounce_time: float) -> None:
    decision = decide(ISTIO, state, now)
    assert isinstance(decision, Release)
    assert decision.request == FULL
    assert decision.debounce_time == pytest.approx(debounce_time)
    assert decision.next_state == DebounceState(in_flight=True)


def test_due_batch_goes_out_as_soon_as_the_push_in_flight_is_done() -> None:
    state = batch(0.0, 0.01, in_flight=True)
    assert decide(ISTIO, state, 3.0) == Hold()
    decision = decide(ISTIO, on_done(state), 3.0)
    assert isinstance(decision, Release)
    assert decision.debounce_time == pytest.approx(3.0)


def test_events_keep_merging_while_in_flight() -> None:
    state = DebounceState(in_flight=True)
    state = on_event(ISTIO, state, FULL, 1.0)
    state = on_event(ISTIO, state, EDS, 1.02)
    assert state.in_flight
    assert state.pending == FULL.merge(EDS)
    assert (state.first_event, state.last_event) == (1.0, 1.02)


def test_eds_released_at_once_when_eds_debounce_off() -> None:
    state = on_event(NO_EDS_DEBOUNCE, DebounceState(), EDS, 4.0)
    assert state.pending is None
    decision = decide(NO_EDS_DEBOUNCE, state, 4.0)
    assert isinstance(decision, Release)
    assert decision.request == EDS
    assert decision.debounce_time is None
    assert decision.next_state.in_flight


def test_eds_skips_a_full_batch_that_is_not_due() -> None:
    state = on_event(NO_EDS_DEBOUNCE, DebounceState(), FULL, 0.0)
    state = on_event(NO_EDS_DEBOUNCE, state, EDS, 0.02)
    decision = decide(NO_EDS_DEBOUNCE, state, 0.02)
    assert isinstance(decision, Release)
    assert decision.request == EDS
    assert decision.next_state.pending == FULL  # the full batch keeps waiting
    assert decision.next_state.first_event == 0.0
    after = on_done(decision.next_state)
    assert decide(NO_EDS_DEBOUNCE, after, 0.03) == Wait(until=0.1)


def test_eds_and_due_full_batch_go_out_together() -> None:
    state = on_event(NO_EDS_DEBOUNCE, DebounceState(), FULL, 0.0)
    state = on_event(NO_EDS_DEBOUNCE, state, EDS, 0.5)
    decision = decide(NO_EDS_DEBOUNCE, state, 0.5)
    assert isinstance(decision, Release)
    assert decision.request == FULL.merge(EDS)
    assert decision.debounce_time == pytest.approx(0.5)
    assert decision.next_state == DebounceState(in_flight=True)


def test_event_without_reason_or_start_gets_defaults() -> None:
    state = on_event(ISTIO, DebounceState(), PushRequest(full=True), 2.5)
    assert state.pending is not None
    assert state.pending.reasons == {TriggerReason.UNKNOWN: 1}
    assert state.pending.start == 2.5
    state = on_event(ISTIO, state, PushRequest(full=True, start=1.0), 2.6)
    assert state.pending is not None
    assert state.pending.start == 1.0
    assert state.pending.reasons == {TriggerReason.UNKNOWN: 2}


# --- simulation: random event times, pushes that take time -----------------------------------


@settings(max_examples=150, deadline=None)
@given(
    gaps=st.lists(st.integers(0, 300), min_size=1, max_size=40),
    fulls=st.lists(st.booleans(), min_size=40, max_size=40),
    push_ms=st.integers(0, 400),
    eds_debounce=st.booleans(),
)
def test_simulated_event_stream(
    gaps: list[int], fulls: list[bool], push_ms: int, eds_debounce: bool
) -> None:
    """Times in milliseconds (integers, so comparisons are exact); after 50, max 1000."""
    config = DebounceSettings(debounce_after=50, debounce_max=1000, eds_debounce=eds_debounce)
    times = []
    t = 0
    for gap in gaps:
        t += gap
        times.append(t)
    events = [(time, fulls[i]) for i, time in enumerate(times)]

    state = DebounceState()
    now = 0.0
    push_end: float | None = None
    batch_last = -1.0  # time of the latest event that went into the debounced batch
    last_push_end = -1.0
    released_triggers = 0
    next_event = 0
    while True:
        decision = decide(config, state, now)
        if isinstance(decision, Release):
            assert push_end is None, "released while a push was in flight"
            assert decision.next_state.in_flight
            if decision.debounce_time is not None:
                first = now - decision.debounce_time
                # Either quiet long enough, or too old — unless a push was holding it back.
                quiet = now - batch_last >= config.debounce_after
                aged = now - first >= config.debounce_max
                assert quiet or aged or last_push_end == now
                if push_ms == 0:
                    assert decision.debounce_time <= config.debounce_max
            released_triggers += decision.request.trigger_count
            state = decision.next_state
            push_end = now + push_ms
            continue
        candidates = []
        if next_event < len(events):
            candidates.append(float(events[next_event][0]))
        if isinstance(decision, Wait):
            assert decision.until > now
            candidates.append(decision.until)
        if push_end is not None:
            candidates.append(push_end)
        if not candidates:
            assert isinstance(decision, Idle)
            break
        now = min(candidates)
        last_push_end = -1.0
        if push_end is not None and now == push_end:
            state = on_done(state)
            push_end = None
            last_push_end = now
        while next_event < len(events) and events[next_event][0] == now:
            full = events[next_event][1]
            request = PushRequest(full=full, reasons={TriggerReason.CONFIG: 1}, start=now)
            state = on_event(config, state, request, now)
            if full or eds_debounce:
                batch_last = now
            next_event += 1
    assert released_triggers == len(events), "every event is pushed exactly once"
    assert state == DebounceState()


ARRIVAL = st.tuples(
    st.builds(
        PushRequest,
        full=st.booleans(),
        configs_updated=st.frozensets(st.sampled_from([VS, SE]), max_size=2),
        reasons=st.dictionaries(st.sampled_from([TriggerReason.CONFIG]), st.integers(0, 2)),
        start=st.sampled_from([float("inf"), 0.5, 2.0]),
    ),
    st.floats(min_value=0, max_value=5, allow_nan=False),
)


@settings(max_examples=150, deadline=None)
@given(
    st.sampled_from([ISTIO, NO_EDS_DEBOUNCE]),
    st.sampled_from([DebounceState(), batch(0.0, 0.1), DebounceState(in_flight=True)]),
    st.lists(ARRIVAL, max_size=6),
)
def test_on_events_is_on_event_in_order(
    rules: DebounceSettings, state: DebounceState, arrivals: list[tuple[PushRequest, float]]
) -> None:
    """Folding many arrivals at once leaves the state one-by-one arrival would."""
    one_by_one = state
    for request, now in arrivals:
        one_by_one = on_event(rules, one_by_one, request, now)
    assert on_events(rules, state, arrivals) == one_by_one

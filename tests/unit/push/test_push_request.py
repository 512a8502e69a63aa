"""PushRequest: Istio's merge rules as a table, and merge's algebra as properties."""

from __future__ import annotations

import math
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pilothouse.config.model import ConfigKey
from pilothouse.protocol.type_urls import RDS
from pilothouse.push.request import PushRequest, TriggerReason, merge_all

VS = ConfigKey("VirtualService", "default", "reviews")
DR = ConfigKey("DestinationRule", "default", "reviews")
SE = ConfigKey("ServiceEntry", "istio-system", "external")

C = TriggerReason.CONFIG
E = TriggerReason.ENDPOINT


def req(
    full: bool = False,
    keys: tuple[ConfigKey, ...] = (),
    reasons: dict[TriggerReason, int] | None = None,
    start: float = 0.0,
    forced: bool = False,
) -> PushRequest:
    return PushRequest(
        full=full,
        configs_updated=frozenset(keys),
        reasons=reasons or {},
        start=start,
        forced=forced,
    )


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        pytest.param(req(True, (VS,)), req(keys=(DR,)), req(True, (VS, DR)), id="full-or"),
        pytest.param(req(keys=(VS,)), req(keys=(DR,)), req(False, (VS, DR)), id="eds-stays-eds"),
        pytest.param(
            req(full=True, keys=(VS,)),
            req(full=True, keys=(VS, DR)),
            req(True, (VS, DR)),
            id="union-dedups",
        ),
        pytest.param(req(full=True), req(full=True, keys=(VS,)), req(True), id="everything-wins"),
        pytest.param(req(keys=(SE,)), req(full=True), req(True), id="eds-into-everything"),
        pytest.param(req(), req(True, (VS,)), req(True, (VS,)), id="empty-eds-is-nothing"),
        pytest.param(req(start=5.0), req(start=3.0), req(start=3.0), id="earliest-start"),
        pytest.param(req(forced=True), req(), req(forced=True), id="forced-or"),
        pytest.param(
            req(reasons={C: 1}),
            req(reasons={C: 2, E: 1}),
            req(reasons={C: 3, E: 1}),
            id="reasons-add-up",
        ),
    ],
)
def test_merge_rules(a: PushRequest, b: PushRequest, expected: PushRequest) -> None:
    assert a.merge(b) == expected
    assert b.merge(a) == expected


def test_is_everything_and_touches() -> None:
    everything = PushRequest.everything(start=1.0)
    assert everything.is_everything
    assert everything.full
    assert everything.reasons == {TriggerReason.GLOBAL: 1}
    assert everything.touches("Gateway")
    assert everything.touches_any(["Sidecar"])
    assert everything.kinds() == frozenset()

    scoped = PushRequest.for_configs([VS, SE], start=1.0)
    assert scoped.full
    assert not scoped.is_everything
    assert scoped.touches("VirtualService")
    assert not scoped.touches("DestinationRule")
    assert scoped.touches_any(["Gateway", "ServiceEntry"])
    assert not scoped.touches_any(["Gateway", "Sidecar"])
    assert scoped.kinds() == {"VirtualService", "ServiceEntry"}

    eds = PushRequest.for_configs([SE], TriggerReason.ENDPOINT, start=1.0, full=False)
    assert not eds.full
    assert not eds.is_everything
    nothing = PushRequest()
    assert not nothing.is_everything
    assert not nothing.touches("VirtualService")


def test_reasons_are_normalised_and_read_only() -> None:
    source = {TriggerReason.CONFIG: 2, TriggerReason.SECRET: 0}
    request = PushRequest(reasons=source)
    source[TriggerReason.CONFIG] = 99
    assert dict(request.reasons) == {TriggerReason.CONFIG: 2}
    assert request.trigger_count == 2
    with pytest.raises(TypeError):
        request.reasons[TriggerReason.CONFIG] = 5  # type: ignore[index]
    assert PushRequest(reasons={"endpoint": 1}) == PushRequest(  # type: ignore[dict-item]
        reasons={TriggerReason.ENDPOINT: 1}
    )
    with pytest.raises(ValueError, match="negative"):
        PushRequest(reasons={TriggerReason.CONFIG: -1})
    with pytest.raises(ValueError):
        PushRequest(reasons={"no-such-reason": 1})  # type: ignore[dict-item]


def test_requests_are_hashable_values() -> None:
    a = PushRequest.for_configs([VS], start=2.0)
    b = PushRequest.for_configs([VS], start=2.0)
    assert a == b
    assert hash(a) == hash(b)
    assert len({a, b}) == 1
    with pytest.raises(AttributeError):
        a.full = False  # type: ignore[misc]


def test_start_defaults_to_unknown_and_loses_to_any_known_time() -> None:
    unknown = PushRequest(full=True)
    assert not unknown.has_start
    assert PushRequest(start=7.0).has_start
    assert unknown.merge(PushRequest(start=7.0)).start == 7.0
    assert not unknown.merge(unknown).has_start


def test_default_reason_is_unknown() -> None:
    assert PushRequest().with_default_reason().reasons == {TriggerReason.UNKNOWN: 1}
    given_reason = PushRequest(reasons={C: 1})
    assert given_reason.with_default_reason() is given_reason


def test_trigger_reason_labels_are_istios() -> None:
    assert {r.value for r in TriggerReason} == {
        "endpoint", "config", "service", "proxy", "global", "unknown", "debug",
        "secret", "networks", "proxyrequest", "namespace", "cluster",
    }  # fmt: skip


def test_merge_all() -> None:
    assert merge_all([]) is None
    merged = merge_all([req(keys=(VS,), start=3.0), req(True, (DR,), start=1.0), req(start=2.0)])
    assert merged == req(True, (VS, DR), start=1.0)


DR2 = ConfigKey("DestinationRule", "default", "ratings")


def test_inert_keys_are_named_keys() -> None:
    request = PushRequest.for_configs([DR]).with_inert(frozenset({(RDS, DR), (RDS, DR2)}))
    assert request.inert == {(RDS, DR)}
    assert PushRequest.everything().with_inert(frozenset({(RDS, DR)})).inert == frozenset()


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        pytest.param({DR}, {DR}, {DR}, id="inert-in-both"),
        pytest.param({DR}, set(), set(), id="changed-again-not-inert"),
        pytest.param({DR}, None, {DR}, id="other-key-keeps-it"),
    ],
)
def test_a_key_stays_inert_only_if_every_change_of_it_was(
    a: set[ConfigKey], b: set[ConfigKey] | None, expected: set[ConfigKey]
) -> None:
    first = PushRequest.for_configs([DR]).with_inert(frozenset((RDS, k) for k in a))
    second = (
        PushRequest.for_configs([DR2])
        if b is None
        else PushRequest.for_configs([DR]).with_inert(frozenset((RDS, k) for k in b))
    )
    for merged in (first.merge(second), second.merge(first), merge_all([first, second])):
        assert merged is not None
        assert merged.inert == {(RDS, k) for k in expected}
    assert first.merge(PushRequest.everything()).inert == frozenset()


# --- properties ------------------------------------------------------------------------------

keys = st.builds(
    ConfigKey,
    kind=st.sampled_from(["VirtualService", "DestinationRule", "ServiceEntry", "Sidecar"]),
    namespace=st.sampled_from(["default", "prod"]),
    name=st.sampled_from(["a", "b", "c"]),
)
requests = st.builds(
    PushRequest,
    full=st.booleans(),
    configs_updated=st.frozensets(keys, max_size=4),
    reasons=st.dictionaries(st.sampled_from(list(TriggerReason)), st.integers(0, 5), max_size=4),
    start=st.one_of(st.just(math.inf), st.floats(min_value=0, max_value=1e6, allow_nan=False)),
    forced=st.booleans(),
    inert=st.frozensets(st.tuples(st.sampled_from(["rds", "lds"]), keys), max_size=3),
)
IDENTITY = PushRequest()


@settings(max_examples=100, deadline=None)
@given(requests, requests)
def test_merge_is_commutative(a: PushRequest, b: PushRequest) -> None:
    assert a.merge(b) == b.merge(a)


@settings(max_examples=100, deadline=None)
@given(requests, requests, requests)
def test_merge_is_associative(a: PushRequest, b: PushRequest, c: PushRequest) -> None:
    assert a.merge(b).merge(c) == a.merge(b.merge(c))


@settings(max_examples=100, deadline=None)
@given(requests)
def test_merge_has_an_identity(a: PushRequest) -> None:
    assert a.merge(IDENTITY) == a
    assert IDENTITY.merge(a) == a


@settings(max_examples=100, deadline=None)
@given(requests, requests)
def test_merge_pushes_at_least_what_either_side_would(a: PushRequest, b: PushRequest) -> None:
    m = a.merge(b)
    assert m.full == (a.full or b.full)
    assert m.forced == (a.forced or b.forced)
    assert m.start == min(a.start, b.start)
    assert m.is_everything == (a.is_everything or b.is_everything)
    if not m.is_everything:
        assert m.configs_updated == a.configs_updated | b.configs_updated
    for side in (a, b):
        for key in side.configs_updated:
            assert m.touches(key.kind)
    assert Counter(m.reasons) == Counter(a.reasons) + Counter(b.reasons)
    assert m.trigger_count == a.trigger_count + b.trigger_count
    for side in (a, b):  # a change inert on one side only is inert no more
        for type_url, key in m.inert:
            assert key not in side.configs_updated or (type_url, key) in side.inert


@settings(max_examples=150, deadline=None)
@given(st.lists(requests, max_size=6))
def test_merge_all_equals_folding_merge(many: list[PushRequest]) -> None:
    folded: PushRequest | None = None
    for request in many:
        folded = request if folded is None else folded.merge(request)
    assert merge_all(many) == folded

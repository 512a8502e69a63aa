"""Which types a full push leaves alone, from its changed kinds (the table's rows are
checked against the generators in tests/fuzz/test_push_skips_unaffected_types.py)."""

from __future__ import annotations

import dataclasses

from pilothouse.config.model import ConfigKey
from pilothouse.protocol.type_urls import CDS, EDS, LDS, RDS
from pilothouse.push.affected_types import moves_endpoints, unaffected_types
from pilothouse.push.request import PushRequest, TriggerReason

RULE = ConfigKey("DestinationRule", "ns", "a")
POLICY = ConfigKey("AuthorizationPolicy", "ns", "p")
ROUTE = ConfigKey("VirtualService", "ns", "r")
SIDECAR = ConfigKey("Sidecar", "ns", "default")


def test_each_kind_skips_the_types_that_do_not_read_it() -> None:
    assert unaffected_types(PushRequest.for_configs([RULE])) == {LDS}
    assert unaffected_types(PushRequest.for_configs([POLICY])) == {CDS, RDS}
    assert unaffected_types(PushRequest.for_configs([ROUTE])) == {CDS}
    assert unaffected_types(PushRequest.for_configs([SIDECAR])) == frozenset()


def test_a_type_is_skipped_only_when_every_changed_kind_leaves_it_alone() -> None:
    assert unaffected_types(PushRequest.for_configs([POLICY, ROUTE])) == {CDS}
    assert unaffected_types(PushRequest.for_configs([POLICY, RULE])) == frozenset()


def test_forced_everything_and_endpoint_pushes_skip_nothing() -> None:
    forced = dataclasses.replace(PushRequest.for_configs([POLICY]), forced=True)
    assert unaffected_types(forced) == frozenset()
    assert unaffected_types(PushRequest.everything(TriggerReason.GLOBAL)) == frozenset()
    endpoints = PushRequest.for_configs([POLICY], TriggerReason.ENDPOINT, full=False)
    assert unaffected_types(endpoints) == frozenset()


def test_a_type_is_skipped_when_every_changed_key_is_unread_or_inert_for_it() -> None:
    other = ConfigKey("DestinationRule", "ns", "b")
    both = PushRequest.for_configs([RULE, POLICY])
    assert unaffected_types(both.with_inert(frozenset({(RDS, RULE)}))) == {RDS}
    assert unaffected_types(
        PushRequest.for_configs([RULE, other]).with_inert(frozenset({(RDS, RULE)}))
    ) == {LDS}
    # a forced push resends everything, inert or not
    forced = dataclasses.replace(PushRequest.for_configs([RULE]), forced=True)
    assert unaffected_types(forced.with_inert(frozenset({(RDS, RULE)}))) == frozenset()


def test_endpoints_move_unless_every_endpoint_kind_change_is_inert_for_eds() -> None:
    entry = ConfigKey("ServiceEntry", "ns", "s")
    assert moves_endpoints(PushRequest.for_configs([RULE]))
    assert not moves_endpoints(PushRequest.for_configs([RULE]).with_inert({(EDS, RULE)}))
    assert not moves_endpoints(PushRequest.for_configs([ROUTE, POLICY]))
    assert moves_endpoints(PushRequest.for_configs([RULE, entry]).with_inert({(EDS, RULE)}))
    assert moves_endpoints(PushRequest.for_configs([RULE]).with_inert({(RDS, RULE)}))
    assert moves_endpoints(PushRequest.everything())
    forced = dataclasses.replace(PushRequest.for_configs([RULE]), forced=True)
    assert moves_endpoints(forced.with_inert({(EDS, RULE)}))
    # a connection's first full push, or the first after endpoints moved, trusts no inert
    inert = PushRequest.for_configs([RULE]).with_inert({(EDS, RULE)})
    assert moves_endpoints(inert, trust_inert=False)

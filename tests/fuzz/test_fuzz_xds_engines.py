"""Fuzz: random requests through the sans-I/O stream engines (``xds/protocol``).

Every field of every ``DiscoveryRequest`` and ``DeltaDiscoveryRequest`` is random (type
URLs known and unknown, names, nonces (fresh, sent before, or made up), versions,
``error_detail``, node ids valid and broken), and so are raw bytes that happen to
decode. A small server model answers as the real connection does (plan, then record
what it sent) and pushes changes between requests. The engines must decide every
request without raising; ``record_sent`` may raise only its documented rejections.
"""

from __future__ import annotations

import contextlib
from typing import Any

from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]
from google.protobuf.message import DecodeError
from hypothesis import given
from hypothesis import strategies as st

from pilothouse.xds.protocol.delta import DeltaSession
from pilothouse.xds.protocol.delta_plan import plan_delta
from pilothouse.xds.protocol.sotw import SotwSession
from pilothouse.xds.protocol.sotw_watch import plan_sotw
from pilothouse.xds.protocol.versions import NonceSequence, VersionRegression, VersionSequence
from tests.fuzz.budget import fuzz_settings
from tests.fuzz.xds_requests import CLUSTERS, delta_requests, sotw_requests

RECORD_REJECTIONS = (LookupError, ValueError, VersionRegression)
"""What ``record_sent`` documents it raises (VersionRegression is a ValueError)."""

available_sets = st.dictionaries(
    st.one_of(st.sampled_from(CLUSTERS), st.text(max_size=8)),
    st.sampled_from(("h1", "h2", "h3")),
    max_size=6,
)


class ServerModel:
    """Versions and nonces as the server mints them, and what it sent."""

    def __init__(self) -> None:
        self.versions = VersionSequence()
        self.nonces = NonceSequence("n")
        self.sent_nonces: list[str] = []
        self.now = 0.0

    def next(self) -> tuple[str, str]:
        self.now += 1.0
        version, self.versions = self.versions.next(self.now)
        nonce, self.nonces = self.nonces.next()
        self.sent_nonces.append(nonce)
        return version, nonce


def nonce_choice(data: st.DataObject, server: ServerModel) -> st.SearchStrategy[str]:
    sent = server.sent_nonces
    made_up = st.one_of(st.just(""), st.text(max_size=12))
    return st.one_of(st.sampled_from(sent), made_up) if sent else made_up


def answer_sotw(session: SotwSession, server: ServerModel, type_url: str, available: Any) -> None:
    watch = session.watch(type_url)
    if watch is None:
        return
    plan = plan_sotw(watch, available, answering=True)
    if plan is None:
        return
    version, nonce = server.next()
    with contextlib.suppress(*RECORD_REJECTIONS):
        session.record_sent(type_url, version, nonce, plan.resources, server.now)


def answer_delta(
    session: DeltaSession, server: ServerModel, type_url: str, available: Any, decision: Any
) -> None:
    watch = session.watch(type_url)
    if watch is None:
        return
    plan = plan_delta(watch, available, decision)
    if plan.empty and decision is not None:
        return
    version, nonce = server.next()
    with contextlib.suppress(*RECORD_REJECTIONS):
        session.record_sent(
            type_url, nonce, plan.resources, plan.removed, server.now, system_version=version
        )


@fuzz_settings()
@given(data=st.data())
def test_sotw_engine_decides_every_random_request(data: st.DataObject) -> None:
    session = SotwSession()
    server = ServerModel()
    for _ in range(data.draw(st.integers(1, 6), label="requests")):
        request = data.draw(sotw_requests(nonce_choice(data, server), rich_nodes=False))
        decision = session.receive(request, server.now)
        assert decision.type_url == request.type_url
        if decision.respond:
            answer_sotw(session, server, decision.type_url, data.draw(available_sets))
        push_now = data.draw(st.booleans())
        if session.watches and push_now:  # a push between requests
            pushed = data.draw(st.sampled_from(sorted(session.watches)))
            watch = session.watch(pushed)
            assert watch is not None
            plan = plan_sotw(watch, data.draw(available_sets), answering=False)
            if plan is not None:
                version, nonce = server.next()
                session.record_sent(pushed, version, nonce, plan.resources, server.now)
    assert all(count >= 0 for count in session.rejects.values())


@fuzz_settings()
@given(data=st.data())
def test_delta_engine_decides_every_random_request(data: st.DataObject) -> None:
    session = DeltaSession()
    server = ServerModel()
    for _ in range(data.draw(st.integers(1, 6), label="requests")):
        request = data.draw(delta_requests(nonce_choice(data, server), rich_nodes=False))
        decision = session.receive(request, server.now)
        assert decision.type_url == request.type_url
        if decision.respond:
            available = data.draw(available_sets)
            answer_delta(session, server, decision.type_url, available, decision)
        push_now = data.draw(st.booleans())
        if session.watches and push_now:
            pushed = data.draw(st.sampled_from(sorted(session.watches)))
            changed = data.draw(st.one_of(st.none(), st.frozensets(st.sampled_from(CLUSTERS))))
            watch = session.watch(pushed)
            assert watch is not None
            plan = plan_delta(watch, data.draw(available_sets), None, changed)
            if not plan.empty:
                version, nonce = server.next()
                session.record_sent(
                    pushed, nonce, plan.resources, plan.removed, server.now, system_version=version
                )
    assert all(count >= 0 for count in session.rejects.values())


@fuzz_settings(0.5)
@given(bodies=st.lists(st.binary(max_size=80), min_size=1, max_size=8), delta=st.booleans())
def test_engines_take_whatever_random_bytes_decode_to(bodies: list[bytes], delta: bool) -> None:
    kind = discovery_pb2.DeltaDiscoveryRequest if delta else discovery_pb2.DiscoveryRequest
    session: SotwSession | DeltaSession = DeltaSession() if delta else SotwSession()
    for now, body in enumerate(bodies):
        try:
            request = kind.FromString(body)
        except DecodeError:
            continue
        decision = session.receive(request, float(now))
        assert decision.type_url == request.type_url

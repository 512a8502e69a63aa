"""The SotW ACK fast path decides as the full table does.

Streams sharing one ``NameSets`` and one parser's ``KnownNames`` get each request with
its names' fingerprint (the server's way: an ACK repeating the subscription is decided
without reading a name); twins of them get the same requests without one. Random
sequences of fresh requests, ACKs of the latest nonce (the same names, reordered or
changed), stale nonces, NACKs, responses sent, the names a CDS response makes Envoy ask
for (``expect``) and the warming flag must leave every decision and every watch equal.
"""

from __future__ import annotations

import random

from envoy.service.discovery.v3 import discovery_pb2

from pilothouse.protocol.request_bytes import KnownNames, type_url_field
from pilothouse.protocol.type_urls import CDS, EDS
from pilothouse.xds.protocol.name_sets import NameSets
from pilothouse.xds.protocol.sotw import SotwDecision, SotwSession

from .discovery import sotw_request, watch_state

_NAMES = ("a", "b", "c")


def test_fingerprinted_streams_decide_as_their_twins_without_fingerprints() -> None:
    for seed in range(300):
        _play(random.Random(seed))


def _play(rnd: random.Random) -> None:
    sets, known = NameSets(), KnownNames()
    fast = [SotwSession(sets) for _ in range(3)]
    slow = [SotwSession() for _ in range(3)]
    sent = 0
    for step in range(60):
        stream = rnd.randrange(3)
        type_url = rnd.choice((EDS, EDS, CDS))
        pair = (fast[stream], slow[stream])
        watch = slow[stream].watch(type_url)
        roll = rnd.random()
        if watch is not None and roll < 0.25:
            sent += 1
            covered = watch.subscription.names or _NAMES
            content = {name: str(sent) for name in covered if rnd.random() < 0.8}
            for session in pair:
                session.record_sent(type_url, f"v{sent}", f"n{sent}", content, float(step))
            continue
        if watch is not None and roll < 0.3:
            expected = frozenset(rnd.sample(_NAMES, rnd.randrange(1, 3)))
            for session in pair:
                session.expect(type_url, expected)
            continue
        if watch is not None and roll < 0.33:
            for session in pair:
                session.mark_always_respond(type_url)
            continue
        names = list(dict.fromkeys(rnd.choice(_NAMES) for _ in range(rnd.randrange(4))))
        if watch is not None and watch.subscription.names and rnd.random() < 0.5:
            names = sorted(watch.subscription.names, key=lambda _: rnd.random())
        pick = rnd.random()
        if watch is None or pick < 0.15:
            nonce = ""
        elif pick < 0.8:
            nonce = watch.nonce_sent
        else:
            nonce = f"n{rnd.randrange(1, sent + 2)}"
        error = "rejected" if rnd.random() < 0.1 else None
        body = sotw_request(type_url, names, nonce=nonce, version="v", error=error)
        raw = body.SerializeToString()
        fingerprint = known.fingerprint(raw, type_url_field(type_url))
        read = discovery_pb2.DiscoveryRequest.FromString
        quick = fast[stream].receive(read(raw), float(step), fingerprint)
        full = slow[stream].receive(read(raw), float(step), None)
        assert _decided(quick) == _decided(full), (step, body)
        for each in (EDS, CDS):
            held = watch_state(fast[stream].watch(each))
            assert held == watch_state(slow[stream].watch(each)), (step, body)


def _decided(decision: SotwDecision) -> tuple[object, ...]:
    return (
        decision.type_url,
        decision.kind,
        decision.respond,
        decision.subscription,
        decision.added,
        decision.error,
        decision.always_respond,
    )

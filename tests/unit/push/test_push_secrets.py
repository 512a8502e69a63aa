"""Secret changes through the push pipeline: a non-full request that reaches only the
connections holding a changed secret, and names only the secrets each proxy may hold."""

from __future__ import annotations

import dataclasses
import itertools

from pilothouse.config.mesh import MeshSettings
from pilothouse.config.model import ConfigKey
from pilothouse.push.cache import ResourceCache
from pilothouse.push.pipeline import PushPipeline
from pilothouse.push.proxy import ProxyIdentity, parse_node
from pilothouse.push.request import TriggerReason
from pilothouse.push.secrets import (
    secret_key,
    secret_names,
    secrets_request,
    workload_certificate_key,
)
from pilothouse.security.identity import Caller, ProvedBy, SpiffeId
from pilothouse.sources.memory import MemoryStore
from pilothouse.xds.generators.api import watched_kinds

ALICE = SpiffeId("cluster.local", "shop", "alice")
BOB = SpiffeId("cluster.local", "shop", "bob")


def proxy(identity: SpiffeId | None) -> ProxyIdentity:
    node = parse_node("sidecar~10.0.0.1~app.shop~shop.svc.cluster.local")
    if identity is None:
        return node
    return dataclasses.replace(node, caller=Caller((identity,), ProvedBy.JWT))


class FakeConnection:
    def __init__(self, connection_id: str, who: SpiffeId | None, secrets: frozenset[str]) -> None:
        self.id = connection_id
        self.proxy = proxy(who)
        self.secrets = secrets

    def watched_types(self) -> list[str]:
        return []

    def watches_any_host(self, hostnames: frozenset[str]) -> bool:
        return False

    def watches_secrets(self, names: frozenset[str]) -> bool:
        return not self.secrets.isdisjoint(names)


def pipeline(*connections: FakeConnection) -> PushPipeline[FakeConnection]:
    store = MemoryStore()
    store.mark_synced()
    versions = (f"v{n}" for n in itertools.count(1))
    made: PushPipeline[FakeConnection] = PushPipeline(
        store,
        lambda: (),
        MeshSettings(),
        ResourceCache(),
        next_version=lambda: next(versions),
        api_kinds=watched_kinds,
    )
    made.start()
    for connection in connections:
        made.connect(connection)
    return made


def test_a_secrets_request_is_not_full_and_says_why() -> None:
    request = secrets_request([secret_key("ROOTCA")], start=3.0)
    assert not request.full and request.reasons == {TriggerReason.SECRET: 1}
    assert request.configs_updated == {ConfigKey("Secret", "", "ROOTCA")}


def test_names_follow_the_key_and_the_proxys_identity() -> None:
    keys = frozenset(
        {secret_key("kubernetes://gw"), workload_certificate_key(ALICE), ConfigKey("X", "", "y")}
    )
    assert secret_names(keys, proxy(ALICE)) == {"kubernetes://gw", "default"}
    assert secret_names(keys, proxy(BOB)) == {"kubernetes://gw"}
    assert secret_names(keys, proxy(None)) == frozenset()


def test_only_connections_holding_a_changed_secret_are_pushed() -> None:
    alice = FakeConnection("alice", ALICE, frozenset({"default", "ROOTCA"}))
    bob = FakeConnection("bob", BOB, frozenset({"default"}))
    gateway = FakeConnection("gw", BOB, frozenset({"kubernetes://gw"}))
    anonymous = FakeConnection("anon", None, frozenset({"default", "kubernetes://gw"}))
    stage = pipeline(alice, bob, gateway, anonymous)
    rotated = stage.plan(secrets_request([workload_certificate_key(ALICE)], 1.0))
    assert rotated is not None and not rotated.full
    assert [c.id for c, _ in rotated.pushes] == ["alice"]
    replaced = stage.plan(secrets_request([secret_key("kubernetes://gw")], 1.0))
    assert replaced is not None
    assert [c.id for c, _ in replaced.pushes] == ["gw"]
    roots = stage.plan(secrets_request([secret_key("ROOTCA")], 1.0))
    assert roots is not None
    assert [c.id for c, _ in roots.pushes] == ["alice"]

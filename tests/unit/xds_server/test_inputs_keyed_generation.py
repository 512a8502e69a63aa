"""What generators keep between calls is keyed by its inputs, so it is never stale.

The generators keep nothing of their own: every value they reuse (a scope's clusters,
listeners and routes, a proxy's inbound ports, the answer to a set of watched EDS names,
a proxyless listener or route) is in the resource cache under a frozen value of
everything it is built from. These tests check the two promises that follow: a value
whose inputs moved without a new PushContext (endpoints) is built again, and a new
PushContext after an edit finds everything the edit did not touch in the cache, built
once. A scope interns the inputs values gathered from it; a new context takes an equal
scope over with them only when what they were gathered from is the same.

The mesh is loaded into a MemoryStore and a ServiceEntryRegistry, as the discovery
server holds them (no process: generation is in-process code).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any

import pytest

from pilothouse.protocol.type_urls import CDS, EDS, LDS, RDS
from pilothouse.push.proxy import ProxyIdentity, parse_node
from pilothouse.security.identity import Caller, ProvedBy, SpiffeId
from pilothouse.xds.generators import eds, inbound, lds, rds, scope_rules
from tests.unit.xds_server.generation_server import GenerationServer

NAMESPACES = ("shop", "bank")


def _namespace(ns: str, *, max_connections: int = 10, db_address: str = "10.9.0.1") -> str:
    return f"""\
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {{name: web, namespace: {ns}}}
spec:
  hosts: [web.{ns}.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{{name: http, number: 8080, protocol: HTTP}}]
  workloadSelector: {{labels: {{app: web}}}}
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {{name: db, namespace: {ns}}}
spec:
  hosts: [db.{ns}.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: DNS
  ports: [{{name: tcp, number: 5432, protocol: TCP}}]
  workloadSelector: {{labels: {{app: db}}}}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {{name: web-1, namespace: {ns}}}
spec: {{address: 10.{NAMESPACES.index(ns)}.0.1, labels: {{app: web, version: v1}}}}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {{name: db-1, namespace: {ns}}}
spec: {{address: {db_address}, labels: {{app: db}}}}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {{name: web, namespace: {ns}}}
spec:
  host: web.{ns}.svc.cluster.local
  trafficPolicy:
    connectionPool: {{tcp: {{maxConnections: {max_connections}}}}}
  subsets:
  - {{name: v1, labels: {{version: v1}}}}
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {{name: web, namespace: {ns}}}
spec:
  hosts: [web.{ns}.svc.cluster.local]
  http:
  - route:
    - destination: {{host: web.{ns}.svc.cluster.local, subset: v1}}
---
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {{name: default, namespace: {ns}}}
spec:
  egress:
  - hosts: ["./*"]
"""


def _mesh(bank: dict[str, Any] | None = None, **shop: Any) -> str:
    chosen = {"shop": shop, "bank": bank or {}}
    return "".join(_namespace(ns, **chosen[ns]) for ns in NAMESPACES)


def _proxy(ns: str) -> ProxyIdentity:
    address = f"10.{NAMESPACES.index(ns)}.0.1"
    return parse_node(
        f"sidecar~{address}~web-1.{ns}~{ns}.svc.cluster.local",
        {"NAMESPACE": ns, "LABELS": {"app": "web", "version": "v1"}},
    )


def test_dns_clusters_follow_an_endpoint_change_within_one_context() -> None:
    """A DNS service's clusters hold its endpoints, which move by the EDS fast path
    without a new PushContext: a proxy generated after the move gets the new address
    (the scope's clusters were once kept per context, keyed without the endpoints)."""
    server = GenerationServer(_mesh())
    proxy = _proxy("shop")
    cluster = "outbound|5432||db.shop.svc.cluster.local"
    before = server.generate(proxy)
    assert b"10.9.0.1" in before[CDS][cluster]
    context = server.context
    server.apply(_mesh(db_address="10.9.0.2"))
    assert server.context is context  # no push: the endpoints moved in place
    after = server.generate(proxy)
    assert b"10.9.0.2" in after[CDS][cluster] and b"10.9.0.1" not in after[CDS][cluster]
    assert after == GenerationServer(_mesh(db_address="10.9.0.2")).generate(proxy)


def test_inbound_ports_are_built_again_only_when_their_namespace_endpoints_move(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A proxy's inbound ports read the labelled endpoints of its own namespace: an
    endpoint moving in another namespace (the endpoint index's revision moves) leaves
    them found in the cache, one moving in its namespace builds them again, once for
    CDS and LDS together; the inbound cluster and listener are what a fresh server
    gives either way."""
    built: Counter[str] = Counter()
    original = inbound.workload_ports

    def counting(cache: Any, inputs: inbound.WorkloadPortsInputs) -> Any:
        built[inputs.ip] += 1
        return original(cache, inputs)

    monkeypatch.setattr(inbound, "workload_ports", counting)
    server = GenerationServer(_mesh())
    proxy = _proxy("shop")
    first = server.generate(proxy)
    assert "inbound|8080||" in first[CDS]
    assert built == {"10.0.0.1": 1}
    index = server.registry.endpoint_index
    revision = index.revision
    server.apply(_mesh(bank={"db_address": "10.9.0.2"}))
    assert index.revision != revision  # moved, in the other namespace
    assert server.generate(proxy) == first
    assert built == {"10.0.0.1": 1}
    server.apply(_mesh(bank={"db_address": "10.9.0.2"}, db_address="10.9.0.3"))
    moved = server.generate(proxy)
    assert built == {"10.0.0.1": 2}
    assert moved[CDS]["inbound|8080||"] == first[CDS]["inbound|8080||"]
    fresh = GenerationServer(_mesh(bank={"db_address": "10.9.0.2"}, db_address="10.9.0.3"))
    assert moved == fresh.generate(proxy)


def test_a_proxy_at_no_labelled_endpoint_has_no_inbound_ports(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A proxy none of whose addresses holds a labelled endpoint of its namespace gets no
    inbound cluster, and no per-proxy inputs are made or looked up for it."""
    monkeypatch.setattr(inbound, "WorkloadPortsInputs", None)  # made: a TypeError
    server = GenerationServer(_mesh())
    stranger = parse_node(
        "sidecar~10.0.7.7~web-9.shop~shop.svc.cluster.local",
        {"NAMESPACE": "shop", "LABELS": {"app": "web", "version": "v1"}},
    )
    made = server.generate(stranger)
    assert not [n for n in made[CDS] if n.startswith("inbound|")]
    assert "outbound|8080||web.shop.svc.cluster.local" in made[CDS]


def test_an_edit_rebuilds_only_what_reads_it_and_the_rest_comes_from_the_cache(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """After a DestinationRule edit in ``shop`` and a new PushContext, ``bank``'s
    listeners, routes and EDS answers are found in the cache, and so are ``shop``'s,
    whose inputs the connection-pool limit is not part of; ``shop``'s clusters are built
    again, and every resource is what a fresh server gives."""
    built: Counter[tuple[str, str]] = Counter()

    def counting(kind: str, module: Any, name: str) -> None:
        original = getattr(module, name)

        def wrapped(inputs: Any, *rest: Any) -> Any:
            built[kind, _namespace_of(inputs)] += 1
            return original(inputs, *rest)

        monkeypatch.setattr(module, name, wrapped)

    counting(LDS, lds, "build_listeners")
    counting(RDS, rds, "build_route")
    counting(EDS, eds, "watched_assignments")
    server = GenerationServer(_mesh())
    before = {ns: server.generate(_proxy(ns)) for ns in NAMESPACES}
    assert built == {(t, ns): 1 for t in (LDS, RDS, EDS) for ns in NAMESPACES}
    built.clear()
    server.push(server.apply(_mesh(max_connections=11)))
    after = {ns: server.generate(_proxy(ns)) for ns in NAMESPACES}
    assert built == {}  # EDS reads a rule's subsets only, and they did not change
    assert after["bank"] == before["bank"]
    assert after["shop"][CDS] != before["shop"][CDS]
    assert after["shop"][LDS] == before["shop"][LDS] and after["shop"][RDS] == before["shop"][RDS]
    fresh = GenerationServer(_mesh(max_connections=11))
    assert after == {ns: fresh.generate(_proxy(ns)) for ns in NAMESPACES}


def _namespace_of(inputs: Any) -> str:
    if isinstance(inputs, eds.WatchInputs):
        service, _rule = inputs.services.parts[0]  # type: ignore[misc]
        return str(service.namespace)
    return str(inputs.scope.namespace)


def test_an_equal_scope_is_taken_over_only_when_what_its_inputs_read_is_the_same() -> None:
    """A DestinationRule edit leaves ``bank``'s scope equal and the ScopeContext (mesh,
    VirtualService, Sidecar, Gateway and PeerAuthentication indexes) the same: the new
    context takes over the scope object with its interned inputs. A PeerAuthentication
    edit changes what the interned cluster inputs read (the namespaces auto-mTLS applies
    to), so no scope is taken over and a proved proxy's clusters follow the edit."""
    server = GenerationServer(_mesh())
    proxy = dataclasses.replace(
        _proxy("bank"), caller=Caller((SpiffeId("cluster.local", "bank", "web"),), ProvedBy.JWT)
    )
    old = server.context.scope(proxy)
    before = server.generate(proxy)
    server.push(server.apply(_mesh(max_connections=11)))
    assert server.context.scope(proxy) is old
    disable = """\
---
apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {name: default, namespace: bank}
spec: {mtls: {mode: DISABLE}}
"""
    server.push(server.apply(disable))
    assert server.context.scope(proxy) is not old
    after = server.generate(proxy)
    cluster = "outbound|8080||web.bank.svc.cluster.local"
    assert after[CDS][cluster] != before[CDS][cluster]  # no auto-mTLS to a DISABLE namespace
    fresh = GenerationServer(_mesh(max_connections=11) + disable)
    assert after == fresh.generate(proxy)


def test_a_rule_is_read_once_for_every_scope_and_type_and_again_only_when_edited(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What clusters, endpoint names, listeners and routes read of a DestinationRule is
    read once per rule revision (scope_rules.py), whichever generator asks first, and a
    rule edit reads that rule again and no other."""
    read: Counter[str] = Counter()
    original = scope_rules.rule_readings

    def counting(inputs: scope_rules.RuleInputs) -> scope_rules.RuleReadings:
        read[inputs.rule.key.namespace] += 1
        return original(inputs)

    monkeypatch.setattr(scope_rules, "rule_readings", counting)
    server = GenerationServer(_mesh())
    for ns in NAMESPACES:
        server.generate(_proxy(ns))
        server.generate(_proxy(ns))
    assert read == {ns: 1 for ns in NAMESPACES}
    read.clear()
    server.push(server.apply(_mesh(max_connections=11)))
    for ns in NAMESPACES:
        server.generate(_proxy(ns))
    assert read == {"shop": 1}

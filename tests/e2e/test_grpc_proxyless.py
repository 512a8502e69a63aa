"""grpcio's real proxyless xDS client against pilothouse: routing, balancing, failover.

Each client is its own process with only a bootstrap file (``GENERATOR: grpc``), dialing
``xds:///<service>:<port>``; the backends are real gRPC servers that say who answered.

Covers: the FQDN and short targets reach the service's endpoints, round-robin over all
of them (Istio's default LEAST_REQUEST would be NACKed by gRPC); routes carried inline
in the listener work without RDS; a weighted split shows
in ≥ 300 calls; metadata (header) and ``/package.Service/Method`` matches pick subsets;
fault injection aborts with the configured gRPC status; a route timeout caps the call;
retries happen on the route's gRPC status codes only;
a consistent hash on a header keeps each key on one endpoint; every resource of that
configuration is ACKed; an endpoint change moves traffic within 1 s with no failed
call; a removed service fails calls with gRPC's "does not exist" error and recovers
when it comes back.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from pilothouse.protocol.type_urls import CDS, RDS
from pilothouse.xds.generators.grpc_flavour import ByFlavour
from pilothouse.xds.generators.grpc_lds import GrpcListenerGenerator
from pilothouse.xds.generators.lds import ListenerGenerator
from tests.e2e.grpc_apps.mesh import ProxylessMesh, service_entry

TARGET = "xds:///greeter.default.svc.cluster.local:50051"

SUBSETS = """\
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: greeter, namespace: default}
spec:
  host: greeter.default.svc.cluster.local
  subsets:
  - {name: v1, labels: {version: v1}}
  - {name: v2, labels: {version: v2}}
"""


@pytest.fixture
async def mesh(tmp_path: Path) -> AsyncIterator[ProxylessMesh]:
    found = ProxylessMesh(tmp_path)
    await found.start()
    try:
        yield found
    finally:
        print(found.describe())  # shown by pytest only when the test failed
        await found.close()


async def two_versions(mesh: ProxylessMesh, extra: str = "") -> None:
    """greeter with backends v1 and v2 (labels ``version``), subsets v1 and v2."""
    v1 = await mesh.backends.start("v1")
    v2 = await mesh.backends.start("v2")
    mesh.apply(
        service_entry("greeter", [(v1, {"version": "v1"}), (v2, {"version": "v2"})])
        + SUBSETS
        + extra
    )


async def test_targets_reach_the_service_and_round_robin_over_its_endpoints(
    mesh: ProxylessMesh,
) -> None:
    ports = [await mesh.backends.start(tag) for tag in ("a", "b", "c")]
    other = await mesh.backends.start("other")
    mesh.apply(
        service_entry("greeter", [(p, {"app": "greeter"}) for p in ports])
        + "---\n"
        + service_entry("other", [(other, {"app": "other"})])
    )
    client = await mesh.client()

    full = await client.ask(op="calls", target=TARGET, n=60)
    assert full["errors"] == {}, full
    assert set(full["tags"]) == {"a", "b", "c"}
    assert min(full["tags"].values()) >= 10, full  # round robin, not one endpoint

    for short in ("xds:///greeter:50051", "xds:///greeter.default:50051"):
        answer = await client.ask(op="calls", target=short, n=6, method="health")
        assert answer["errors"] == {}, answer
        assert set(answer["tags"]) <= {"a", "b", "c"}
    other_answer = await client.ask(op="calls", target="xds:///other:50051", n=3)
    assert other_answer["tags"] == {"other": 3}


async def test_inline_route_configuration_needs_no_rds(mesh: ProxylessMesh) -> None:
    discovery = mesh.control_plane.discovery
    assert discovery is not None
    inline = GrpcListenerGenerator(inline_routes=True)
    discovery.register_generator(ByFlavour(ListenerGenerator(), inline))
    await two_versions(
        mesh,
        """\
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: greeter, namespace: default}
spec:
  hosts: [greeter.default.svc.cluster.local]
  http:
  - match: [{headers: {x-canary: {exact: "yes"}}}]
    route: [{destination: {host: greeter.default.svc.cluster.local, subset: v2}}]
  - route: [{destination: {host: greeter.default.svc.cluster.local, subset: v1}}]
""",
    )
    client = await mesh.client()
    plain = await client.ask(op="calls", target="xds:///greeter:50051", n=5)
    canary = await client.ask(
        op="calls", target="xds:///greeter:50051", n=5, metadata=[["x-canary", "yes"]]
    )
    assert (plain["tags"], canary["tags"]) == ({"v1": 5}, {"v2": 5}), (plain, canary)
    (connection,) = mesh.connections_of("client")
    assert RDS not in connection.watched_types()


async def test_weighted_split_shows_in_the_observed_backends(mesh: ProxylessMesh) -> None:
    await two_versions(
        mesh,
        """\
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: greeter, namespace: default}
spec:
  hosts: [greeter.default.svc.cluster.local]
  http:
  - route:
    - {destination: {host: greeter.default.svc.cluster.local, subset: v1}, weight: 75}
    - {destination: {host: greeter.default.svc.cluster.local, subset: v2}, weight: 25}
""",
    )
    client = await mesh.client()
    answer = await client.ask(op="calls", target=TARGET, n=400)
    assert answer["errors"] == {}, answer
    share = answer["tags"].get("v2", 0) / 400
    # 25 % of 400 has a standard deviation of 2.2 %; ± 8 % is over 3.5 of them
    assert 0.17 <= share <= 0.33, answer
    assert answer["tags"]["v1"] + answer["tags"]["v2"] == 400


ROUTING = """\
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: greeter, namespace: default}
spec:
  hosts: [greeter.default.svc.cluster.local]
  http:
  - name: canary
    match: [{headers: {x-canary: {exact: "yes"}}}]
    route: [{destination: {host: greeter.default.svc.cluster.local, subset: v2}}]
  - name: health-to-v2
    match: [{uri: {exact: /grpc.health.v1.Health/Check}}]
    route: [{destination: {host: greeter.default.svc.cluster.local, subset: v2}}]
  - name: abort
    match: [{headers: {x-fault: {exact: abort}}}]
    fault: {abort: {grpcStatus: ABORTED, percentage: {value: 100}}}
    route: [{destination: {host: greeter.default.svc.cluster.local, subset: v1}}]
  - name: slow
    match: [{headers: {x-fault: {exact: slow}}}]
    fault: {delay: {fixedDelay: 3s, percentage: {value: 100}}}
    timeout: 0.3s
    route: [{destination: {host: greeter.default.svc.cluster.local, subset: v1}}]
  - name: default
    match: [{uri: {prefix: /pilothouse.e2e.Backend/}}]
    retries: {attempts: 3, retryOn: "unavailable,resource-exhausted", perTryTimeout: 2s}
    timeout: 5s
    route: [{destination: {host: greeter.default.svc.cluster.local, subset: v1}}]
"""

POLICIES = """\
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: greeter, namespace: default}
spec:
  host: greeter.default.svc.cluster.local
  trafficPolicy:
    loadBalancer: {simple: LEAST_REQUEST}
    connectionPool: {http: {http2MaxRequests: 500}}
    outlierDetection: {consecutive5xxErrors: 5, interval: 10s, baseEjectionTime: 30s}
  subsets:
  - {name: v1, labels: {version: v1}}
  - name: v2
    labels: {version: v2}
    trafficPolicy:
      loadBalancer: {consistentHash: {httpHeaderName: x-user, maglev: {tableSize: 65537}}}
"""


async def test_matches_faults_and_timeouts_and_every_resource_is_accepted(
    mesh: ProxylessMesh,
) -> None:
    v1 = await mesh.backends.start("v1")
    v2 = await mesh.backends.start("v2")
    mesh.apply(
        service_entry("greeter", [(v1, {"version": "v1"}), (v2, {"version": "v2"})])
        + POLICIES
        + ROUTING
    )
    client = await mesh.client()

    plain = await client.ask(op="calls", target=TARGET, n=20)
    assert plain["tags"] == {"v1": 20}, plain
    canary = await client.ask(op="calls", target=TARGET, n=20, metadata=[["x-canary", "yes"]])
    assert canary["tags"] == {"v2": 20}, canary
    health = await client.ask(op="calls", target=TARGET, n=10, method="health")
    assert health["tags"] == {"v2": 10}, health

    aborted = await client.ask(op="calls", target=TARGET, n=5, metadata=[["x-fault", "abort"]])
    assert aborted["errors"] == {"ABORTED": 5}, aborted
    started = time.monotonic()
    slow = await client.ask(op="calls", target=TARGET, n=1, metadata=[["x-fault", "slow"]])
    assert slow["errors"] == {"DEADLINE_EXCEEDED": 1}, slow
    assert time.monotonic() - started < 2.0  # the route's 0.3 s, not the 3 s delay

    # every type was ACKed, nothing NACKed: gRPC accepted the whole configuration
    (connection,) = mesh.connections_of("client")
    assert connection.sotw is not None
    for type_url in connection.watched_types():
        watch = connection.sotw.watch(type_url)
        assert watch is not None
        assert watch.last_error is None, (type_url, watch.last_error)
        assert watch.nonce_sent and watch.nonce_acked == watch.nonce_sent, type_url
    assert connection.watched_names(CDS) == {
        "outbound|50051|v1|greeter.default.svc.cluster.local",
        "outbound|50051|v2|greeter.default.svc.cluster.local",
    }


RETRIES = """\
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: greeter, namespace: default}
spec:
  hosts: [greeter.default.svc.cluster.local]
  http:
  - match: [{headers: {x-retry: {exact: "off"}}}]
    retries: {attempts: 0}
    route: [{destination: {host: greeter.default.svc.cluster.local}}]
  - match: [{headers: {x-retry: {exact: internal}}}]
    retries: {attempts: 2, retryOn: internal}
    route: [{destination: {host: greeter.default.svc.cluster.local}}]
  - retries: {attempts: 2, retryOn: "unavailable", backoff: 10ms}
    route: [{destination: {host: greeter.default.svc.cluster.local}}]
"""


async def test_retries_follow_the_route_policy(mesh: ProxylessMesh) -> None:
    port = await mesh.backends.start("v1")
    mesh.apply(service_entry("greeter", [(port, {"app": "greeter"})]) + RETRIES)
    client = await mesh.client()
    retried = await client.ask(op="calls", target=TARGET, n=5, method="flaky")
    assert retried == {"tags": {"v1": 5}, "errors": {}, "details": []}
    for mode in ("off", "internal"):  # no retries; retries only on INTERNAL
        failed = await client.ask(
            op="calls", target=TARGET, n=3, method="flaky", metadata=[["x-retry", mode]]
        )
        assert failed["errors"] == {"UNAVAILABLE": 3}, (mode, failed)


async def test_consistent_hash_keeps_each_key_on_one_endpoint(mesh: ProxylessMesh) -> None:
    ports = [await mesh.backends.start(tag) for tag in ("a", "b", "c")]
    mesh.apply(
        service_entry("greeter", [(p, {"app": "greeter"}) for p in ports])
        + """\
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: greeter, namespace: default}
spec:
  host: greeter.default.svc.cluster.local
  trafficPolicy:
    loadBalancer: {consistentHash: {httpHeaderName: x-user}}
"""
    )
    client = await mesh.client()
    chosen = {}
    for user in range(10):
        answer = await client.ask(
            op="calls", target=TARGET, n=8, metadata=[["x-user", f"user-{user}"]]
        )
        assert answer["errors"] == {}, answer
        assert len(answer["tags"]) == 1, answer  # one key, one endpoint
        chosen[user] = next(iter(answer["tags"]))
    assert len(set(chosen.values())) >= 2, chosen  # keys spread over the endpoints


async def test_endpoint_change_moves_traffic_within_a_second_without_failures(
    mesh: ProxylessMesh,
) -> None:
    old = await mesh.backends.start("old")
    new = await mesh.backends.start("new")
    mesh.apply(service_entry("greeter", [(old, {"app": "greeter"})]))
    client = await mesh.client()
    warm = await client.ask(op="calls", target=TARGET, n=5)
    assert warm["tags"] == {"old": 5}, warm

    await client.ask(op="loop_start", target=TARGET, timeout=5)
    await asyncio.sleep(0.3)
    changed = time.monotonic()
    mesh.apply(service_entry("greeter", [(new, {"app": "greeter"})]))
    await asyncio.sleep(1.5)
    records = (await client.ask(op="loop_stop"))["records"]

    outcomes = [outcome for _, outcome in records]
    assert not [o for o in outcomes if o.startswith("!")], outcomes  # no failed RPC
    first_new = min(t for t, outcome in records if outcome == "new")
    assert first_new - changed < 1.0
    late_old = [t - changed for t, outcome in records if outcome == "old" and t > changed + 1.0]
    assert late_old == []
    assert sum(1 for t, _ in records if t < changed) > 10  # the loop really ran before


async def test_removed_service_fails_with_does_not_exist_and_recovers(
    mesh: ProxylessMesh,
) -> None:
    port = await mesh.backends.start("v1")
    mesh.apply(service_entry("greeter", [(port, {"app": "greeter"})]))
    client = await mesh.client()
    assert (await client.ask(op="calls", target=TARGET, n=3))["tags"] == {"v1": 3}

    mesh.control_plane.delete("ServiceEntry", "default", "greeter")
    gone = await client.ask(op="until", target=TARGET, code="UNAVAILABLE", within=5, timeout=2)
    assert gone["ok"], gone
    assert "LDS resource greeter.default.svc.cluster.local:50051: does not exist" in (
        gone["detail"]
    )
    assert gone["elapsed"] < 1.0  # deleted from LDS at once, not the 15 s timer

    mesh.apply(service_entry("greeter", [(port, {"app": "greeter"})]))
    back = await client.ask(op="until", target=TARGET, tag="v1", within=5, timeout=2)
    assert back["ok"], back
    assert back["elapsed"] < 1.0

"""Golden tests: the LDS, RDS, CDS and EDS pilothouse generates for the proxies of examples/.

For each proxy of the example mesh (the bookinfo ingress gateway and productpage's
sidecar) the generated resources are turned into JSON and compared with the stored
files ``tests/golden/examples/<proxy>/<type>.json`` (``{resource name: resource}``,
keys sorted).  A difference fails with a diff of the JSON.

When a change to the generated config is intended, rewrite the stored files and
review the diff before committing it::

    UPDATE_GOLDEN=1 .venv/bin/pytest tests/golden

The snapshot is taken as a connected Envoy would see it (see :mod:`.xds_snapshot`):
the same generators, the same subscriptions.  Alongside the comparison, the resources
must close over their references (every route configuration a listener names exists,
every cluster a route or TCP proxy names exists, every EDS cluster has endpoints) and
must come out identical when generated again by a fresh server.
"""

from __future__ import annotations

import asyncio
import dataclasses
import difflib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from envoy.config.cluster.v3 import cluster_pb2  # type: ignore[import-untyped]
from envoy.config.listener.v3 import listener_pb2  # type: ignore[import-untyped]
from envoy.config.route.v3 import route_pb2  # type: ignore[import-untyped]
from envoy.extensions.filters.network.tcp_proxy.v3 import (  # type: ignore[import-untyped]
    tcp_proxy_pb2,
)

from pilothouse.push.proxy import ProxyIdentity, parse_node
from pilothouse.security.identity import Caller, ProvedBy, SpiffeId
from tests.golden.xds_snapshot import (
    TYPES,
    ProxySnapshot,
    connection_managers,
    dump,
    eds_cluster_names,
    route_names,
    snapshot,
)

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
GOLDEN = Path(__file__).resolve().parent / "examples"
UPDATE = os.environ.get("UPDATE_GOLDEN") == "1"

PROXIES: dict[str, ProxyIdentity] = {
    "ingressgateway-1.bookinfo": parse_node(
        "router~127.0.0.1~ingressgateway-1.bookinfo~bookinfo.svc.cluster.local",
        {"LABELS": {"istio": "ingressgateway"}},
    ),
    "productpage-v1.bookinfo": parse_node(
        "sidecar~127.0.0.1~productpage-v1.bookinfo~bookinfo.svc.cluster.local",
        {"LABELS": {"app": "productpage", "version": "v1"}},
    ),
    # A sidecar whose stream proved its identity, so SDS serves it certificates: its
    # inbound listener takes mutual TLS (PERMISSIVE) and its clusters auto-mTLS.
    "reviews-v1.bookinfo.authenticated": dataclasses.replace(
        parse_node(
            "sidecar~127.0.0.1~reviews-v1.bookinfo~bookinfo.svc.cluster.local",
            {"LABELS": {"app": "reviews", "version": "v1"}},
        ),
        caller=Caller(
            (SpiffeId("cluster.local", "bookinfo", "bookinfo-reviews"),),
            ProvedBy.CLIENT_CERTIFICATE,
        ),
    ),
}


@pytest.fixture(scope="module")
def snapshots() -> dict[str, ProxySnapshot]:
    return asyncio.run(snapshot(EXAMPLES, PROXIES))


@pytest.mark.parametrize("short_type", list(TYPES))
@pytest.mark.parametrize("proxy", list(PROXIES))
def test_generated_config_matches_golden(
    snapshots: dict[str, ProxySnapshot], proxy: str, short_type: str
) -> None:
    generated = snapshots[proxy].json(short_type)
    assert generated, f"{proxy} gets no {short_type.upper()} resources at all"
    path = GOLDEN / proxy / f"{short_type}.json"
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(dump(generated))
    assert path.is_file(), f"{path} is missing; create it with UPDATE_GOLDEN=1"
    stored = json.loads(path.read_text())
    if generated != stored:
        changed = sorted(
            name
            for name in generated.keys() | stored.keys()
            if generated.get(name) != stored.get(name)
        )
        diff = "".join(
            difflib.unified_diff(
                dump(stored).splitlines(keepends=True),
                dump(generated).splitlines(keepends=True),
                fromfile=f"{path.relative_to(ROOT)} (stored)",
                tofile="generated",
                n=2,
            )
        )
        pytest.fail(
            f"{short_type.upper()} for {proxy} differs in {changed}; if intended, rerun with "
            f"UPDATE_GOLDEN=1 and review the diff:\n{diff[:6000]}"
        )


def test_no_stale_golden_files() -> None:
    expected = {f"{proxy}/{short}.json" for proxy in PROXIES for short in TYPES}
    stored = {str(path.relative_to(GOLDEN)) for path in GOLDEN.rglob("*.json")}
    assert stored == expected


def test_generation_is_deterministic(snapshots: dict[str, ProxySnapshot]) -> None:
    again = asyncio.run(snapshot(EXAMPLES, PROXIES))
    for proxy in PROXIES:
        for short_type in TYPES:
            first = dump(snapshots[proxy].json(short_type))
            assert dump(again[proxy].json(short_type)) == first, (proxy, short_type)


@pytest.mark.parametrize("proxy", list(PROXIES))
def test_references_close(snapshots: dict[str, ProxySnapshot], proxy: str) -> None:
    taken = snapshots[proxy]
    listeners = taken.resources["lds"].values()
    routes = taken.messages("rds", route_pb2.RouteConfiguration)
    clusters = taken.messages("cds", cluster_pb2.Cluster)
    assert route_names(listeners) == set(routes), "a listener names a missing route config"
    assert list(connection_managers(listeners)), "no HTTP listener at all"
    assert eds_cluster_names(taken.resources["cds"].values()) == set(taken.resources["eds"])
    referenced = set(_route_clusters(routes.values())) | set(_tcp_clusters(listeners))
    assert referenced, "nothing routes anywhere"
    assert referenced <= set(clusters), (
        f"routes name missing clusters: {referenced - set(clusters)}"
    )


def _route_clusters(configs: Any) -> Iterator[str]:
    for config in configs:
        for virtual_host in config.virtual_hosts:
            for route in virtual_host.routes:
                if not route.HasField("route"):
                    continue
                if route.route.cluster:
                    yield route.route.cluster
                for weighted in route.route.weighted_clusters.clusters:
                    yield weighted.name


def _tcp_clusters(listeners: Any) -> Iterator[str]:
    for packed in listeners:
        listener = listener_pb2.Listener()
        packed.Unpack(listener)
        for chain in listener.filter_chains:
            for network_filter in chain.filters:
                if network_filter.typed_config.Is(tcp_proxy_pb2.TcpProxy.DESCRIPTOR):
                    proxy = tcp_proxy_pb2.TcpProxy()
                    network_filter.typed_config.Unpack(proxy)
                    if proxy.cluster:
                        yield proxy.cluster
                    for weighted in proxy.weighted_clusters.clusters:
                        yield weighted.name

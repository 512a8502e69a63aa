"""The pieces of ``proxy-status`` and ``proxy-config`` that need no server: admin
addresses, tables, statuses from syncz entries (ours and istiod's), and the istioctl
columns of a real dump of the example mesh."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from pilothouse.cli.admin_client import BadAdminAddress, ReplicaAnswer, admin_url
from pilothouse.cli.columns import age, table
from pilothouse.cli.config_tables import (
    cluster_rows,
    clusters_of,
    describe_domains,
    endpoint_rows,
    endpoints_of,
    listener_rows,
    listeners_of,
    route_rows,
    routes_of,
)
from pilothouse.cli.main import build_parser
from pilothouse.cli.proxy_status import merged, status_table, type_state
from pilothouse.protocol.subscriptions import Subscription
from pilothouse.protocol.type_urls import CDS, EDS, LDS, RDS
from pilothouse.push.proxy import parse_node
from pilothouse.sources.fs import FileSource
from pilothouse.xds.protocol.sync_status import SyncStatus
from pilothouse.xds.server.config_dump import config_dump_json, proxy_dump
from pilothouse.xds.server.discovery import DiscoveryServer
from pilothouse.xds.server.rest import ResourceJsonCache

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
REVIEWS_V3 = "outbound|9080|v3|reviews.bookinfo.svc.cluster.local"
GATEWAY_ROUTES = "http.8080.127.0.0.1"


@pytest.mark.parametrize(
    ("given", "url"),
    [
        ("127.0.0.1:15014", "http://127.0.0.1:15014"),
        ("http://10.0.0.1:8080", "http://10.0.0.1:8080"),
        ("https://istiod.example:15014/", "https://istiod.example:15014"),
        ("[::1]:15014", "http://[::1]:15014"),
    ],
)
def test_admin_addresses(given: str, url: str) -> None:
    assert admin_url(given) == url


@pytest.mark.parametrize(
    "given", ["productpage-v1.bookinfo", "127.0.0.1", "ftp://h:1", "h:port", "http://h:1/debug"]
)
def test_bad_admin_addresses_say_what_is_expected(given: str) -> None:
    with pytest.raises(BadAdminAddress, match=repr(given)):
        admin_url(given)


def test_table_and_age() -> None:
    assert table(["A", "LONGER"], [["xyz", "1"], ["b", ""]]) == "A     LONGER\nxyz   1\nb\n"
    assert [age(s) for s in (-1, 5, 61, 7200, 3 * 86400)] == ["0s", "5s", "1m", "2h", "3d"]


def test_statuses_from_our_entries_and_from_istiods() -> None:
    ours = {
        "proxy": "a.ns",
        "resources": {
            CDS: {"sent": "n2", "acked": "n1", "status": "ERROR", "lastError": "bad",
                  "sentTime": "2026-01-01T00:00:00.000Z"},
        },
    }  # fmt: skip
    assert type_state(ours, CDS) == (SyncStatus.ERROR, 1767225600.0, "bad")
    assert type_state(ours, LDS, "listener") == (SyncStatus.NOT_SENT, None, "")
    ours["resources"][CDS]["envoyFilters"] = ["ns/buffers", "istio-system/lua"]
    assert type_state(ours, CDS)[2] == "bad (patched by EnvoyFilter ns/buffers, istio-system/lua)"
    del ours["resources"][CDS]["envoyFilters"]
    # istiod's syncz has nonces only
    istiod = {"proxy": "b.ns", "cluster_sent": "x", "cluster_acked": "x", "route_sent": "y"}
    assert type_state(istiod, CDS, "cluster")[0] is SyncStatus.SYNCED
    assert type_state(istiod, RDS, "route")[0] is SyncStatus.STALE
    assert type_state(istiod, EDS, "endpoint")[0] is SyncStatus.NOT_SENT
    answers = [
        ReplicaAnswer("http://10.0.0.2:15014", 200, [istiod]),
        ReplicaAnswer("http://10.0.0.1:15014", 200, [{**ours, "replica": "r1"}]),
        ReplicaAnswer("http://10.0.0.3:15014", problem="cannot reach"),
    ]
    entries = merged(answers)
    assert [(e["proxy"], e["replica"]) for e in entries] == [
        ("a.ns", "r1"),
        ("b.ns", "10.0.0.2:15014"),  # istiod names no replica: its address stands in
    ]
    text = status_table(entries, 1767225600.0 + 90)
    assert text.splitlines()[1].split() == [
        "a.ns", "-", "ERROR", "(1m)", "NOT", "SENT", "NOT", "SENT", "NOT", "SENT", "r1", "-",
    ]  # fmt: skip


def test_commands_parse_their_arguments() -> None:
    parser = build_parser()
    args = parser.parse_args(["proxy-status", "p.ns", "--admin", "a:1", "--admin", "b:2", "-o",
                              "json"])  # fmt: skip
    assert (args.proxy, args.admin, args.output) == ("p.ns", ["a:1", "b:2"], "json")
    args = parser.parse_args(["proxy-config", "ep", "p.ns", "--admin", "a:1"])
    assert (args.kind, args.proxy, args.output) == ("ep", "p.ns", "short")
    with pytest.raises(SystemExit) as exited:
        parser.parse_args(["proxy-config", "bootstrap", "p.ns"])
    assert exited.value.code == 2


@pytest.fixture(scope="module")
def dumps() -> dict[str, dict[str, Any]]:
    """The example mesh's config dump for the productpage sidecar and the gateway."""

    async def build() -> dict[str, dict[str, Any]]:
        source = FileSource(EXAMPLES)
        source.load_all()
        server = DiscoveryServer(source.store)
        task = asyncio.create_task(server.run())
        await asyncio.wait_for(server.wait_ready(), 10)
        render = ResourceJsonCache(1000).render
        everything = (CDS, EDS, LDS, RDS)
        out = {}
        for name, node, routes in (
            ("sidecar", "sidecar~127.0.0.1~productpage-v1.bookinfo~bookinfo.svc.cluster.local",
             "9080"),
            ("gateway", "router~127.0.0.1~ingressgateway-1.bookinfo~bookinfo.svc.cluster.local",
             "http.8080.127.0.0.1"),
        ):  # fmt: skip
            proxy = parse_node(node, {"LABELS": {"istio": "ingressgateway"}})
            watched = {
                CDS: Subscription(wildcard=True),
                EDS: Subscription(frozenset({REVIEWS_V3})),
                RDS: Subscription(frozenset({routes})),
            }
            out[name] = config_dump_json(proxy_dump(proxy, watched.get, server, everything), render)
        server.close()
        await task
        return out

    return asyncio.run(build())


def test_cluster_table_of_the_sidecar(dumps: dict[str, dict[str, Any]]) -> None:
    header, rows = cluster_rows(clusters_of(dumps["sidecar"]))
    assert header[0] == "SERVICE FQDN" and header[-1] == "DESTINATION RULE"
    # the DestinationRule behind a cluster, named as istioctl prints it (name.namespace)
    reviews = "reviews.bookinfo"
    assert ["reviews.bookinfo.svc.cluster.local", "9080", "v3", "outbound", "EDS", reviews] in rows
    assert ["reviews.bookinfo.svc.cluster.local", "9080", "-", "outbound", "EDS", reviews] in rows
    assert ["books.example.com", "443", "-", "outbound", "STRICT_DNS", "books-api.bookinfo"] in rows
    details = next(row for row in rows if row[0].startswith("details."))
    assert details[-1] == "-"  # no rule for details
    assert rows[-2:] == [
        ["BlackHoleCluster", "-", "-", "-", "STATIC", "-"],
        ["PassthroughCluster", "-", "-", "-", "ORIGINAL_DST", "-"],
    ]


def test_listener_and_route_tables_of_the_gateway(dumps: dict[str, dict[str, Any]]) -> None:
    assert listener_rows(listeners_of(dumps["gateway"])) == (
        ["ADDRESSES", "PORT", "TYPE"],
        [["127.0.0.1", "8080", "HTTP"]],
    )
    header, rows = route_rows(routes_of(dumps["gateway"]))
    assert header == ["NAME", "VHOST NAME", "DOMAINS", "MATCH", "VIRTUAL SERVICE"]
    assert [GATEWAY_ROUTES, "*:8080", "*", "/reviews* (end-user)", "bookinfo.bookinfo"] in rows
    assert [GATEWAY_ROUTES, "*:8080", "*", "/productpage", "bookinfo.bookinfo"] in rows


def test_endpoint_table_holds_eds_and_inline_assignments(dumps: dict[str, dict[str, Any]]) -> None:
    header, rows = endpoint_rows(endpoints_of(dumps["sidecar"]))
    assert header == ["ENDPOINT", "STATUS", "OUTLIER CHECK", "CLUSTER"]
    assert rows == [
        ["books.example.com:443", "HEALTHY", "-", "outbound|443||books.example.com"],
        ["127.0.0.1:19084", "HEALTHY", "-", REVIEWS_V3],
    ]


def test_domains_are_shortened_as_istioctl_does() -> None:
    assert describe_domains([]) == "" and describe_domains(["*"]) == "*"
    assert describe_domains(["a", "a:80", "a.ns", "a.ns:80", "a.ns.svc"]) == "a, a.ns + 1 more..."

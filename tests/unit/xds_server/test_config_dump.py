"""A proxy's config dump for the example mesh: what its subscriptions select, and the JSON
made from cached renderings equals protobuf's own JSON of the ConfigDump message."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from google.protobuf import json_format

from pilothouse.protocol.subscriptions import Subscription
from pilothouse.protocol.type_urls import CDS, EDS, LDS, RDS
from pilothouse.push.proxy import parse_node
from pilothouse.sources.fs import FileSource
from pilothouse.xds.server.config_dump import (
    BadTypes,
    config_dump,
    config_dump_json,
    dump_types,
    proxy_dump,
)
from pilothouse.xds.server.discovery import DiscoveryServer
from pilothouse.xds.server.rest import ResourceJsonCache

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
PRODUCTPAGE = parse_node("sidecar~127.0.0.1~productpage-v1.bookinfo~bookinfo.svc.cluster.local")
REVIEWS_V1 = "outbound|9080|v1|reviews.bookinfo.svc.cluster.local"


@pytest.fixture
async def server() -> AsyncIterator[DiscoveryServer]:
    source = FileSource(EXAMPLES)
    source.load_all()
    running = DiscoveryServer(source.store)
    task = asyncio.create_task(running.run())
    try:
        await asyncio.wait_for(running.wait_ready(), 10)
        yield running
    finally:
        running.close()
        await asyncio.wait_for(task, 10)


def test_dump_types_reads_short_names_and_urls_and_refuses_others() -> None:
    assert dump_types("", include_eds=False) == (CDS, LDS, RDS)
    assert dump_types("", include_eds=True) == (CDS, EDS, LDS, RDS)
    assert dump_types("rds, cds", include_eds=False) == (CDS, RDS)
    assert dump_types(f"EDS,{LDS}", include_eds=False) == (EDS, LDS)
    with pytest.raises(BadTypes, match="'sds' is not one of"):
        dump_types("cds,sds", include_eds=False)


async def test_the_dump_follows_the_subscriptions(server: DiscoveryServer) -> None:
    watched = {
        CDS: Subscription(wildcard=True),
        EDS: Subscription(frozenset({REVIEWS_V1})),
        RDS: Subscription(frozenset({"9080"})),
    }
    dump = proxy_dump(PRODUCTPAGE, watched.get, server, (CDS, EDS, LDS, RDS))
    assert dump.version == server.version
    clusters = [r.name for r in dump.resources[CDS]]
    assert REVIEWS_V1 in clusters and "BlackHoleCluster" in clusters
    assert clusters == sorted(clusters)
    assert [r.name for r in dump.resources[EDS]] == [REVIEWS_V1]
    assert [r.name for r in dump.resources[RDS]] == ["9080"]
    assert dump.resources[LDS]  # not watched, but a wildcard type: what it would get
    unwatched = proxy_dump(PRODUCTPAGE, {CDS: Subscription(wildcard=True)}.get, server, (RDS,))
    assert unwatched.resources == {RDS: ()}  # a per-name type nobody asked for


async def test_json_from_cached_renderings_equals_protobufs_json(server: DiscoveryServer) -> None:
    watched = {
        CDS: Subscription(wildcard=True),
        EDS: Subscription(frozenset({REVIEWS_V1})),
        RDS: Subscription(frozenset({"9080"})),
    }
    render = ResourceJsonCache(1000).render
    for types in ((CDS, EDS, LDS, RDS), (RDS,), (EDS,)):
        dump = proxy_dump(PRODUCTPAGE, watched.get, server, types)
        expected = json_format.MessageToDict(config_dump(dump), preserving_proto_field_name=True)
        assert config_dump_json(dump, render) == expected
    empty = proxy_dump(PRODUCTPAGE, {}.get, server, (EDS, RDS))
    expected = json_format.MessageToDict(config_dump(empty), preserving_proto_field_name=True)
    assert config_dump_json(empty, render) == expected
    kinds = [c["@type"].rsplit(".", 1)[-1] for c in expected["configs"]]
    assert kinds == ["EndpointsConfigDump", "RoutesConfigDump"]

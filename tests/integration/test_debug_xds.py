"""The debug types over ADS with real grpc clients: syncz as CSDS, config_dump, access, and
``control_plane.identifier`` on ordinary responses."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
from envoy.admin.v3 import config_dump_shared_pb2  # type: ignore[import-untyped]
from envoy.config.cluster.v3 import cluster_pb2  # type: ignore[import-untyped]
from envoy.service.status.v3 import csds_pb2  # type: ignore[import-untyped]
from google.protobuf import json_format, struct_pb2
from google.rpc import status_pb2

from pilothouse.protocol.type_urls import CDS, EDS, LDS, RDS
from pilothouse.push.debounce import DebounceSettings
from pilothouse.xds.server.control_plane import parse_identifier
from pilothouse.xds.server.debug_types import CONFIG_DUMP, SYNCZ
from pilothouse.xds.server.discovery import XdsSettings
from tests.e2e.harness.control_plane import ControlPlane
from tests.e2e.harness.remote_peer import RemoteRelay, non_loopback_address
from tests.integration.ads_stream import AdsStream, delta_request, open_ads, sotw_request

MESH = """\
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: db, namespace: data}
spec:
  hosts: [db.data.svc.cluster.local]
  resolution: STATIC
  ports: [{number: 5432, name: tcp, protocol: TCP}]
  endpoints: [{address: 10.0.0.9}]
"""
APP = "sidecar~10.0.0.1~app-1.data~data.svc.cluster.local"
ISTIOCTL = "sidecar~10.0.0.2~istioctl-1.istio-system~istio-system.svc.cluster.local"
SETTINGS = XdsSettings(
    debounce=DebounceSettings(debounce_after=0.02, debounce_max=1.0), replica_id="replica-a"
)


@pytest.fixture
async def plane() -> AsyncIterator[ControlPlane]:
    control_plane = ControlPlane(settings=SETTINGS)
    control_plane.apply_yaml(MESH)
    await control_plane.start()
    try:
        yield control_plane
    finally:
        await control_plane.stop()


def node_metadata(**values: str) -> struct_pb2.Struct:
    metadata = struct_pb2.Struct()
    metadata.update(values)
    return metadata


async def proxy_with_clusters(port: int, *, ack: bool = True) -> tuple[AdsStream, Any]:
    """A proxy stream that asked for CDS and (when ``ack``) ACKed the answer."""
    stream = await open_ads(port)
    await stream.send(
        sotw_request(
            CDS,
            APP,
            node={
                "id": APP,
                "metadata": node_metadata(
                    CLUSTER_ID="Kubernetes", ISTIO_VERSION="1.28.0", NAMESPACE="data"
                ),
            },
        )
    )
    response = await stream.read()
    if ack:
        await stream.send(
            sotw_request(CDS, version_info=response.version_info, response_nonce=response.nonce)
        )
    return stream, response


async def ask(port: int, type_url: str, names: tuple[str, ...] = (), *, delta: bool = False) -> Any:
    stream = await open_ads(port, delta=delta)
    metadata = node_metadata(GENERATOR="event", NAMESPACE="istio-system")
    try:
        if delta:
            await stream.send(
                delta_request(
                    type_url,
                    node={"id": ISTIOCTL, "metadata": metadata},
                    resource_names_subscribe=list(names),
                )
            )
        else:
            await stream.send(
                sotw_request(
                    type_url,
                    node={"id": ISTIOCTL, "metadata": metadata},
                    resource_names=list(names),
                )
            )
        return await stream.read()
    finally:
        await stream.close()


def client_configs(response: Any) -> list[Any]:
    found = []
    for packed in response.resources:
        config = csds_pb2.ClientConfig()
        assert packed.Unpack(config)
        found.append(config)
    return found


def statuses(config: Any) -> dict[str, str]:
    return {
        item.type_url: csds_pb2.ConfigStatus.Name(item.config_status)
        for item in config.generic_xds_configs
    }


async def wait_for_status(port: int, type_url: str, wanted: str) -> Any:
    for _ in range(100):
        configs = client_configs(await ask(port, SYNCZ))
        if configs and statuses(configs[0]).get(type_url) == wanted:
            return configs[0]
        await asyncio.sleep(0.02)
    raise AssertionError(f"{type_url} never became {wanted}: {configs}")


async def test_syncz_lists_the_proxy_as_csds_and_not_the_asking_client(
    plane: ControlPlane,
) -> None:
    stream, _ = await proxy_with_clusters(plane.port)
    try:
        config = await wait_for_status(plane.port, CDS, "SYNCED")
        response = await ask(plane.port, SYNCZ)
        assert response.type_url == SYNCZ
        assert parse_identifier(response.control_plane.identifier) == "replica-a"
        (only,) = client_configs(response)
        assert only.node.id == "app-1.data"
        metadata = json_format.MessageToDict(only.node.metadata)
        assert metadata == {
            "CLUSTER_ID": "Kubernetes",
            "NAMESPACE": "data",
            "ISTIO_VERSION": "1.28.0",
        }
        expected = {LDS: "NOT_SENT", RDS: "NOT_SENT", EDS: "NOT_SENT", CDS: "SYNCED"}
        assert statuses(config) == expected
        cds = next(c for c in config.generic_xds_configs if c.type_url == CDS)
        assert cds.version_info and cds.last_updated.seconds > 0
    finally:
        await stream.close()


async def test_a_stream_not_yet_acked_is_stale_and_a_nack_is_error(plane: ControlPlane) -> None:
    stream, response = await proxy_with_clusters(plane.port, ack=False)
    try:
        await wait_for_status(plane.port, CDS, "STALE")
        await stream.send(
            sotw_request(
                CDS,
                response_nonce=response.nonce,
                error_detail=status_pb2.Status(code=3, message="cluster db: bad thing"),
            )
        )
        config = await wait_for_status(plane.port, CDS, "ERROR")
        cds = next(c for c in config.generic_xds_configs if c.type_url == CDS)
        assert cds.error_state.details == "cluster db: bad thing"
    finally:
        await stream.close()


async def test_config_dump_over_xds_holds_what_the_proxy_was_sent(plane: ControlPlane) -> None:
    stream, sent = await proxy_with_clusters(plane.port)
    try:
        names_sent = set()
        for packed in sent.resources:
            cluster = cluster_pb2.Cluster()
            packed.Unpack(cluster)
            names_sent.add(cluster.name)
        assert "outbound|5432||db.data.svc.cluster.local" in names_sent
        for name in ("app-1.data", APP):
            response = await ask(plane.port, CONFIG_DUMP, (name,))
            kinds = [r.type_url.rsplit(".", 1)[-1] for r in response.resources]
            assert kinds == ["ClustersConfigDump", "ListenersConfigDump", "RoutesConfigDump"]
            clusters = config_dump_shared_pb2.ClustersConfigDump()
            response.resources[0].Unpack(clusters)
            dumped = set()
            for entry in clusters.dynamic_active_clusters:
                cluster = cluster_pb2.Cluster()
                entry.cluster.Unpack(cluster)
                dumped.add(cluster.name)
            assert dumped == names_sent
        unknown = await ask(plane.port, CONFIG_DUMP, ("nobody.nowhere",))
        assert list(unknown.resources) == []
    finally:
        await stream.close()


async def test_debug_types_answer_delta_streams_too(plane: ControlPlane) -> None:
    stream, _ = await proxy_with_clusters(plane.port)
    try:
        await wait_for_status(plane.port, CDS, "SYNCED")
        response = await ask(plane.port, SYNCZ, delta=True)
        assert [r.name for r in response.resources] == ["app-1.data"]
        assert parse_identifier(response.control_plane.identifier) == "replica-a"
        dump = await ask(plane.port, CONFIG_DUMP, ("app-1.data",), delta=True)
        assert [r.name for r in dump.resources] == [
            "app-1.data/ClustersConfigDump",
            "app-1.data/ListenersConfigDump",
            "app-1.data/RoutesConfigDump",
        ]
    finally:
        await stream.close()


async def test_ordinary_responses_carry_the_control_plane_identifier(plane: ControlPlane) -> None:
    stream, response = await proxy_with_clusters(plane.port)
    await stream.close()
    assert parse_identifier(response.control_plane.identifier) == "replica-a"
    delta = await open_ads(plane.port, delta=True)
    try:
        await delta.send(delta_request(CDS, APP))
        answer = await delta.read()
        assert answer.resources and parse_identifier(answer.control_plane.identifier) == "replica-a"
    finally:
        await delta.close()


async def test_a_peer_off_loopback_is_denied_unless_the_setting_opens_debug() -> None:
    source = non_loopback_address()
    if source is None:
        pytest.skip("this host has no address but loopback")
    for allow, expected in ((False, grpc.StatusCode.PERMISSION_DENIED), (True, None)):
        plane = ControlPlane(
            settings=XdsSettings(debounce=SETTINGS.debounce, debug_allow_remote=allow)
        )
        plane.apply_yaml(MESH)
        await plane.start()
        relay = RemoteRelay(source, plane.port)
        try:
            await relay.start()
            if expected is None:
                response = await ask(relay.port, SYNCZ)
                assert response.type_url == SYNCZ
                continue
            stream = await open_ads(relay.port)
            await stream.send(sotw_request(SYNCZ, ISTIOCTL))
            code, details = await stream.status()
            await stream.close()
            assert code is expected
            assert source in details and "PILOTHOUSE_DEBUG_ALLOW_REMOTE" in details
            # the same peer still gets ordinary config
            proxy, clusters = await proxy_with_clusters(relay.port)
            await proxy.close()
            assert clusters.resources
        finally:
            await relay.stop()
            await plane.stop()

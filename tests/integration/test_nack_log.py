"""A proxy's NACK in the server log, over a real discovery server and real grpc streams:
one warning per rejected response, naming the EnvoyFilters that patched that type."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from google.rpc import status_pb2

from pilothouse.protocol.type_urls import CDS, EDS
from pilothouse.xds.server.discovery import XdsSettings
from tests.integration.ads_stream import sotw_request
from tests.integration.test_debug_http import (
    APP,
    CLUSTER,
    CLUSTER_PATCH,
    FAST,
    MESH,
    OTHER,
    serving,
    subscribe,
)


async def test_a_nack_is_logged_once_naming_the_envoy_filters_that_patched_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, "pilothouse.xds.nack")
    mesh = tmp_path / "mesh"
    mesh.mkdir()
    (mesh / "db.yaml").write_text(MESH)
    (mesh / "patch.yaml").write_text(CLUSTER_PATCH)
    async with serving(mesh, XdsSettings(debounce=FAST)) as server:
        app, app_clusters = await subscribe(server.xds_port, APP, ack=False)
        other, other_clusters = await subscribe(server.xds_port, OTHER, ack=False)
        try:
            nack = status_pb2.Status(code=3, message="cluster db: rejected")
            for stream, sent in ((app, app_clusters), (other, other_clusters)):
                for _ in range(2):  # Envoy repeats the rejected nonce with the error
                    await stream.send(
                        sotw_request(CDS, response_nonce=sent.nonce, error_detail=nack)
                    )
                # answered after the NACKs: the server has read them
                await stream.send(sotw_request(EDS, resource_names=[CLUSTER]))
                await stream.read()
        finally:
            await app.close()
            await other.close()
    logged = [r for r in caplog.records if r.name == "pilothouse.xds.nack"]
    assert [r.getMessage() for r in logged] == [
        f"proxy {APP} rejected CDS (nonce {app_clusters.nonce}): code 3: cluster db: rejected"
        "; patched by EnvoyFilter data/buffers",
        f"proxy {OTHER} rejected CDS (nonce {other_clusters.nonce}): code 3:"
        " cluster db: rejected",  # not its namespace: no EnvoyFilter patched its clusters
    ]
    assert all(r.levelno == logging.WARNING for r in logged)

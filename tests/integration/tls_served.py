"""An in-process ``serve()`` with its TLS port on, and clients for it (the tests of
the TLS port, the certificate service and their authorisation share it)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import grpc
from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]
from google.protobuf import struct_pb2

from pilothouse.cli import serve as serve_module
from pilothouse.cli.serve import Bound
from pilothouse.settings import (
    AdminSettings,
    AuthSettings,
    CaSettings,
    ControlZSettings,
    DebounceSettings,
    KubeSettings,
    SdsSettings,
    Settings,
    XdsSettings,
)
from pilothouse.xds.server.discovery import DiscoveryServer
from tests.unit.security.tokens import Issuer

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
ADS = "/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources"
CDS = "type.googleapis.com/envoy.config.cluster.v3.Cluster"


@dataclass
class Served:
    bound: Bound
    ca_dir: Path
    issuer: Issuer
    discovery: DiscoveryServer

    @property
    def tls_target(self) -> str:
        return f"127.0.0.1:{self.bound.xds_tls_port}"

    def root_pem(self) -> bytes:
        return (self.ca_dir / "root-cert.pem").read_bytes()

    def channel(self, *, key: bytes | None = None, chain: bytes | None = None) -> grpc.aio.Channel:
        credentials = grpc.ssl_channel_credentials(
            root_certificates=self.root_pem(), private_key=key, certificate_chain=chain
        )
        return grpc.aio.secure_channel(self.tls_target, credentials)

    def bearer(self, namespace: str, account: str, **claims: Any) -> list[tuple[str, str]]:
        return [("authorization", f"Bearer {self.issuer.token(namespace, account, **claims)}")]

    async def metrics(self) -> str:
        url = f"http://127.0.0.1:{self.bound.admin_port}/metrics"
        async with aiohttp.ClientSession() as session, session.get(url) as answer:
            return await answer.text()


async def running(
    tmp_path: Path,
    *,
    server_keys: bool = True,
    config_dirs: tuple[Path, ...] = (EXAMPLES,),
    config_sources: tuple[str, ...] = (),
    kube: KubeSettings | None = None,
    **xds: Any,
) -> AsyncIterator[Served]:
    """``serve()`` on the example mesh (or ``config_dirs``, and ``config_sources`` read
    with ``kube``'s settings): both xDS ports on loopback
    ports of their own, the suite's CA (``PILOTHOUSE_CA_DIR``, made once by
    ``tests/conftest.py``), bearer tokens from a test issuer. ``server_keys``: SDS
    ``default`` from keys the server makes, for these tests' agentless proxies (the node
    agent's tests turn it off)."""
    issuer = Issuer()
    jwks = issuer.write_jwks(tmp_path / "jwks.json")
    ca_dir = Path(os.environ["PILOTHOUSE_CA_DIR"])
    settings = Settings(
        config_dirs=config_dirs,
        config_sources=config_sources,
        kube=kube if kube is not None else KubeSettings(),
        xds=XdsSettings(
            address="127.0.0.1:0",
            tls_address="127.0.0.1:0",
            debounce=DebounceSettings(debounce_after=0.01, debounce_max=0.1),
            **xds,
        ),
        admin=AdminSettings(address="127.0.0.1:0"),
        ctrlz=ControlZSettings(address="off"),
        ca=CaSettings(dir=str(ca_dir)),
        auth=AuthSettings(jwt_issuers=(f"{issuer.name}={jwks}",)),
        sds=SdsSettings(server_keys=server_keys),
        drain_seconds=0.2,
    )
    stop = asyncio.Event()
    bound: list[Bound] = []
    built: list[DiscoveryServer] = []
    real = serve_module.DiscoveryServer

    def record(*args: Any, **kwargs: Any) -> DiscoveryServer:
        built.append(real(*args, **kwargs))
        return built[-1]

    serve_module.DiscoveryServer = record  # type: ignore[assignment,misc]
    try:
        task = asyncio.create_task(serve_module.serve(settings, stop, bound.append))
        async with asyncio.timeout(20):
            while not built:
                await asyncio.sleep(0.01)
    finally:
        serve_module.DiscoveryServer = real  # type: ignore[misc]
    try:
        async with asyncio.timeout(20):
            while not bound:
                assert not task.done(), task.exception()
                await asyncio.sleep(0.02)
            await _ready(bound[0].admin_port)
        yield Served(bound[0], ca_dir, issuer, built[0])
    finally:
        stop.set()
        await asyncio.wait_for(task, 10)


async def _ready(admin_port: int) -> None:
    url = f"http://127.0.0.1:{admin_port}/ready"
    async with aiohttp.ClientSession() as session:
        while True:
            async with session.get(url) as answer:
                if answer.status == 200:
                    return
            await asyncio.sleep(0.05)


def node_request(
    node_id: str, metadata: dict[str, Any], type_url: str = CDS, names: Sequence[str] = ()
) -> Any:
    request = discovery_pb2.DiscoveryRequest(type_url=type_url, resource_names=list(names))
    request.node.id = node_id
    meta = struct_pb2.Struct()
    meta.update(metadata)
    request.node.metadata.CopyFrom(meta)
    return request


async def first_answer(
    channel: grpc.aio.Channel, request: Any, metadata: Sequence[tuple[str, str]] = ()
) -> Any:
    """The first response on an ADS stream opened with ``request``; raises AioRpcError."""
    call = channel.stream_stream(
        ADS,
        request_serializer=lambda m: m.SerializeToString(),
        response_deserializer=discovery_pb2.DiscoveryResponse.FromString,
    )(metadata=tuple(metadata))
    await call.write(request)
    try:
        async with asyncio.timeout(10):
            async for response in call:
                return response
    finally:
        call.cancel()
    raise AssertionError("the stream ended without a response")

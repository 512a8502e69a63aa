"""Mutual TLS between two real Envoy sidecars, with certificates pilothouse issues over SDS.

pilothouse runs its real ``serve`` wiring in process (TLS xDS port, CA, a JWT issuer).
Two Envoys authenticate on the TLS port with service account tokens of namespace
``shop``: a client sidecar (account ``client``) listening on an egress port, and a
server sidecar (account ``server``) whose Sidecar ``ingress`` listener forwards to a
local application that echoes the request headers it got. The server's endpoint is
labelled ``security.istio.io/tlsMode: istio``, so the client's cluster takes auto-mTLS.

- PERMISSIVE (no policy) and STRICT: the client's requests reach the application over
  mutual TLS, and the application sees the client's SPIFFE id in
  ``x-forwarded-client-cert``; STRICT refuses a plaintext client, PERMISSIVE serves it.
- DISABLE: the client sends plaintext, and no client certificate reaches the server.
- A PeerAuthentication written while both run reaches them: STRICT stops the plaintext
  client, DISABLE turns the client's traffic to plaintext.
- With a 4-second certificate lifetime, the certificates rotate under continuous
  traffic (a new upstream connection per request, so each request is a new handshake)
  and no request fails.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pilothouse.bootstrap.envoy import (
    EnvoyBootstrapOptions,
    XdsTls,
    XdsTransport,
    envoy_bootstrap,
)
from pilothouse.security import ca_dir
from tests.e2e.harness.client import RequestResult, fetch, send_requests
from tests.e2e.harness.envoy import EnvoyProcess
from tests.e2e.harness.fleet import EnvoyFleet
from tests.e2e.harness.ports import LOOPBACK, free_port, wait_for_port
from tests.e2e.harness.upstreams import Upstream, UpstreamPool
from tests.integration.serve_in_process import (
    ServeInProcess,
    serve_in_process,
    write_atomically,
)
from tests.unit.security.tokens import ISSUER, Issuer

NAMESPACE = "shop"
HOST = f"server.{NAMESPACE}.svc.cluster.local"
CLIENT_ID = f"spiffe://cluster.local/ns/{NAMESPACE}/sa/client"
SERVER_ID = f"spiffe://cluster.local/ns/{NAMESPACE}/sa/server"
XFCC = "x-forwarded-client-cert"
SIDECAR_LABEL = {"security.istio.io/tlsMode": "istio"}


@dataclass(frozen=True, slots=True)
class Ports:
    egress: int
    """The client sidecar's listener, and the service's port."""
    inbound: int
    """The server sidecar's listener: the service's endpoint."""


def mesh(
    ports: Ports,
    app: Upstream,
    mode: str | None,
    *,
    one_request_per_connection: bool,
    workload_policy: bool = False,
) -> str:
    """The server service, its workload, both Sidecars, and a PeerAuthentication for
    namespace ``shop`` (or, ``workload_policy``, for the server's workload) when ``mode``
    is given."""
    text = f"""\
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {{name: server, namespace: {NAMESPACE}}}
spec:
  hosts: [{HOST}]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{{number: {ports.egress}, name: http, protocol: HTTP}}]
  workloadSelector: {{labels: {{app: server}}}}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {{name: server-1, namespace: {NAMESPACE}}}
spec:
  address: 127.0.0.1
  ports: {{http: {ports.inbound}}}
  serviceAccount: server
  labels: {{app: server, security.istio.io/tlsMode: istio}}
---
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {{name: server, namespace: {NAMESPACE}}}
spec:
  workloadSelector: {{labels: {{app: server}}}}
  ingress:
  - port: {{number: {ports.inbound}, protocol: HTTP, name: http}}
    bind: 127.0.0.1
    defaultEndpoint: 127.0.0.1:{app.port}
  egress: [{{hosts: ["./*"]}}]
---
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {{name: client, namespace: {NAMESPACE}}}
spec:
  workloadSelector: {{labels: {{app: client}}}}
  egress:
  - port: {{number: {ports.egress}, protocol: HTTP, name: http}}
    bind: 127.0.0.1
    captureMode: NONE
    hosts: ["./*"]
"""
    if one_request_per_connection:
        text += f"""---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {{name: server, namespace: {NAMESPACE}}}
spec:
  host: {HOST}
  trafficPolicy:
    connectionPool: {{http: {{maxRequestsPerConnection: 1}}}}
"""
    if mode is not None:
        selector = "\n  selector: {matchLabels: {app: server}}" if workload_policy else ""
        text += f"""---
apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {{name: default, namespace: {NAMESPACE}}}
spec:{selector}
  mtls: {{mode: {mode}}}
"""
    return text


def sidecar_bootstrap(
    workload: str, labels: Mapping[str, str], tls_port: int, root: Path, token: str
) -> dict[str, Any]:
    """A sidecar bootstrap whose ADS goes to the TLS port, trusting the CA's root and
    proving the service account with its token."""
    options = EnvoyBootstrapOptions(
        node_id=f"sidecar~127.0.0.1~{workload}.{NAMESPACE}~{NAMESPACE}.svc.cluster.local",
        node_metadata={"NAMESPACE": NAMESPACE, "LABELS": dict(labels)},
        xds_port=tls_port,
        admin_port=0,
        transport=XdsTransport.DELTA,
        xds_tls=XdsTls(root_file=str(root), token=token),
    )
    return envoy_bootstrap(options)


@dataclass
class Pair:
    """The running mesh: pilothouse, both sidecars and the application."""

    running: ServeInProcess
    client: EnvoyProcess
    server: EnvoyProcess
    app: Upstream
    ports: Ports


@asynccontextmanager
async def two_sidecars(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    envoy_factory: EnvoyFleet,
    upstream_factory: UpstreamPool,
    mode: str | None,
    *,
    certificate_ttl: float | None = None,
    one_request_per_connection: bool = False,
    workload_policy: bool = False,
) -> AsyncIterator[Pair]:
    app = await upstream_factory("app")
    ports = Ports(egress=free_port(), inbound=free_port())
    config = tmp_path / "mesh"
    config.mkdir()
    (config / "mesh.yaml").write_text(
        mesh(
            ports,
            app,
            mode,
            one_request_per_connection=one_request_per_connection,
            workload_policy=workload_policy,
        )
    )
    issuer = Issuer()
    jwks = issuer.write_jwks(tmp_path / "jwks.json")
    ca = os.environ["PILOTHOUSE_CA_DIR"]  # tests/conftest.py: made once for the suite
    overrides: dict[str, Any] = {
        "xds.tls_address": "127.0.0.1:0",
        "sds.server_keys": True,  # these proxies have no node agent
        "ca.dir": ca,
        "auth.jwt_issuers": (f"{ISSUER}={jwks}",),
    }
    if certificate_ttl is not None:
        overrides["sds.workload_cert_ttl"] = certificate_ttl
    root = Path(ca) / ca_dir.ROOT_CERT
    async with serve_in_process(monkeypatch, config, overrides) as running:
        tls_port = running.bound.xds_tls_port
        server = await envoy_factory(
            sidecar_bootstrap(
                "server-1",
                {"app": "server", **SIDECAR_LABEL},
                tls_port,
                root,
                issuer.token(NAMESPACE, "server"),
            )
        )
        client = await envoy_factory(
            sidecar_bootstrap(
                "client-1", {"app": "client"}, tls_port, root, issuer.token(NAMESPACE, "client")
            )
        )
        await wait_for_port(ports.inbound, timeout=15)
        await wait_for_port(ports.egress, timeout=15)
        yield Pair(running, client, server, app, ports)


def echoed_headers(body: bytes) -> dict[str, str]:
    """The request headers the application echoed, names lower-cased."""
    headers = json.loads(body)["headers"]
    return {str(name).lower(): str(value) for name, value in headers.items()}


def forwarded_identity(result: RequestResult) -> str | None:
    """The ``x-forwarded-client-cert`` the application received, if any."""
    return echoed_headers(result.body).get(XFCC)


async def through_client(pair: Pair, count: int = 5) -> list[RequestResult]:
    """Requests to the server through the client sidecar; every one must succeed."""
    report = await send_requests(
        LOOPBACK, pair.ports.egress, count, authority=HOST, total_timeout=15
    )
    assert report.ok == count, report.summary()
    return list(report.results)


async def wait_through_client(pair: Pair, timeout: float = 15.0) -> None:
    """Until a request through the client sidecar succeeds (the sidecars are warm)."""
    async with asyncio.timeout(timeout):
        while True:
            report = await send_requests(LOOPBACK, pair.ports.egress, 1, authority=HOST)
            if report.ok == 1:
                return
            await asyncio.sleep(0.2)


def assert_mutual_tls(results: list[RequestResult]) -> None:
    for result in results:
        forwarded = forwarded_identity(result)
        assert forwarded is not None, "the application saw no client certificate"
        assert f"URI={CLIENT_ID}" in forwarded, forwarded
        assert f"By={SERVER_ID}" in forwarded, forwarded


@pytest.mark.parametrize("mode", [None, "PERMISSIVE", "STRICT"])
async def test_the_server_sees_the_client_identity_over_mutual_tls(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    envoy_factory: EnvoyFleet,
    upstream_factory: UpstreamPool,
    mode: str | None,
) -> None:
    async with two_sidecars(tmp_path, monkeypatch, envoy_factory, upstream_factory, mode) as pair:
        await wait_through_client(pair)
        assert_mutual_tls(await through_client(pair))
        handshakes = await pair.server.stat(
            f"listener.127.0.0.1_{pair.ports.inbound}.ssl.handshake", 0
        )
        assert handshakes >= 1
        plaintext = None
        try:
            plaintext = await fetch(LOOPBACK, pair.ports.inbound, "/direct", authority=HOST)
        except (OSError, asyncio.IncompleteReadError, ConnectionError, ValueError) as problem:
            refused: BaseException | None = problem
        else:
            refused = None
        if mode == "STRICT":
            assert refused is not None, f"STRICT served a plaintext client: {plaintext}"
        else:
            assert plaintext is not None and plaintext.status == 200, refused
            assert XFCC not in echoed_headers(plaintext.body)


@pytest.mark.parametrize("workload_policy", [False, True], ids=["namespace", "workload"])
async def test_disable_sends_plaintext(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    envoy_factory: EnvoyFleet,
    upstream_factory: UpstreamPool,
    workload_policy: bool,
) -> None:
    """Namespace-wide DISABLE turns auto-mTLS off on the client's cluster; a workload's
    DISABLE takes its endpoint out of auto-mTLS (the cluster keeps it for others)."""
    async with two_sidecars(
        tmp_path,
        monkeypatch,
        envoy_factory,
        upstream_factory,
        "DISABLE",
        workload_policy=workload_policy,
    ) as pair:
        await wait_through_client(pair)
        for result in await through_client(pair):
            assert forwarded_identity(result) is None
        handshakes = await pair.server.stat(
            f"listener.127.0.0.1_{pair.ports.inbound}.ssl.handshake", 0
        )
        assert handshakes == 0
        direct = await fetch(LOOPBACK, pair.ports.inbound, "/direct", authority=HOST)
        assert direct.status == 200


async def test_certificates_rotate_under_traffic_without_a_failed_request(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    envoy_factory: EnvoyFleet,
    upstream_factory: UpstreamPool,
) -> None:
    async with two_sidecars(
        tmp_path,
        monkeypatch,
        envoy_factory,
        upstream_factory,
        "STRICT",
        certificate_ttl=4.0,
        one_request_per_connection=True,
    ) as pair:
        await wait_through_client(pair)
        first = await pair.client.stat("sds.default.update_success", 0)
        report = await send_requests(
            LOOPBACK,
            pair.ports.egress,
            10_000,
            authority=HOST,
            concurrency=2,
            request_timeout=3.0,
            total_timeout=7.0,
        )
        rotated = await pair.client.stat("sds.default.update_success", 0)
    assert report.results and report.ok == len(report.results), report.summary()
    assert len(report.results) >= 50, report.summary()
    # the client's certificate was replaced at least twice during the traffic ...
    assert rotated - first >= 2, (first, rotated)
    # ... and the server saw more than one of them (each request is a new handshake)
    hashes = {
        part
        for result in report.results
        for part in (forwarded_identity(result) or "").split(";")
        if part.startswith("Hash=")
    }
    assert len(hashes) >= 2, hashes
    assert_mutual_tls(list(report.results))


def policy(mode: str) -> str:
    return f"""\
apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {{name: default, namespace: {NAMESPACE}}}
spec:
  mtls: {{mode: {mode}}}
"""


async def plaintext_served(pair: Pair) -> bool:
    """Whether a plaintext client gets an answer from the server sidecar."""
    try:
        answer = await fetch(LOOPBACK, pair.ports.inbound, "/direct", authority=HOST)
    except (OSError, asyncio.IncompleteReadError, ConnectionError, ValueError):
        return False
    return answer.status == 200


async def test_a_peer_authentication_edit_reaches_both_sidecars_live(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    envoy_factory: EnvoyFleet,
    upstream_factory: UpstreamPool,
) -> None:
    async with two_sidecars(tmp_path, monkeypatch, envoy_factory, upstream_factory, None) as pair:
        await wait_through_client(pair)
        assert await plaintext_served(pair)
        policy_file = pair.running.config_dir / "policy.yaml"

        write_atomically(policy_file, policy("STRICT"))
        async with asyncio.timeout(15):
            while await plaintext_served(pair):
                await asyncio.sleep(0.2)
        assert_mutual_tls(await through_client(pair))

        # The two sidecars take the change one after the other: for that moment one
        # speaks mutual TLS and the other plaintext (istiod's meshes too; migrations go
        # through PERMISSIVE), so requests may fail until both have it.
        write_atomically(policy_file, policy("DISABLE"))
        async with asyncio.timeout(15):
            while True:
                report = await send_requests(LOOPBACK, pair.ports.egress, 1, authority=HOST)
                if report.ok == 1 and forwarded_identity(report.results[0]) is None:
                    break
                await asyncio.sleep(0.2)
        for result in await through_client(pair):
            assert forwarded_identity(result) is None
        assert await plaintext_served(pair)
        assert pair.server.running() and pair.client.running()

"""Two sidecars run by ``pilothouse agent`` against a real ``pilothouse serve`` process:
real Envoys (started, configured and supervised by their agents), real mutual TLS.

One module, one pair: pilothouse (TLS port, its CA, a JWT issuer, no
``--sds-server-keys``) serves namespace ``shop`` with STRICT mutual TLS; a client and a
server agent each make their workload key locally, get it signed through the CSR
service with their service account token, serve it to their Envoy over SDS and carry
their Envoy's ADS to pilothouse. Certificates live 10 s, so they rotate every ~5 s.

- The client's Envoy speaks delta ADS to its agent, the server's SotW.
- The client's requests reach the application over mutual TLS with both SPIFFE ids;
  both agents report ``/healthz/ready``; each Envoy runs with istio-agent's flags and
  its bootstrap holds no token, no key and no TLS to pilothouse.
- Rotation under traffic (a new connection per request): no request fails, and the
  server sees more than one client certificate.
- pilothouse is killed and started again: each Envoy keeps its one stream to its agent
  (no reconnect, still connected), traffic flows while pilothouse is down, and the
  agents resume from the new process.
- Afterwards no private key is anywhere on the server's side: its log, its debug
  endpoints, config dumps and metrics hold no ``PRIVATE KEY``; its CA counted the CSRs
  the agents sent (and nothing else issued a certificate).
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import pytest_asyncio

from pilothouse.agent.envoy_bootstrap import agent_bootstrap
from pilothouse.agent.envoy_process import EnvoyCommand, EnvoyProcess
from pilothouse.agent.remote_authority import CaEndpoint
from pilothouse.agent.sidecar_agent import AgentOptions, SidecarAgent
from pilothouse.agent.status import StatusServer
from pilothouse.bootstrap.envoy import EnvoyBootstrapOptions, XdsTransport
from pilothouse.security import ca_dir
from pilothouse.security.identity import SpiffeId
from pilothouse.security.workload_keys import KeyAlgorithm
from tests.e2e.harness.client import fetch, send_requests
from tests.e2e.harness.envoy import envoy_binary
from tests.e2e.harness.ports import LOOPBACK, free_port, wait_for_port
from tests.e2e.harness.serve_process import ServeProcess
from tests.e2e.harness.upstreams import UpstreamPool
from tests.e2e.test_traffic_mtls import (
    CLIENT_ID,
    HOST,
    NAMESPACE,
    SERVER_ID,
    SIDECAR_LABEL,
    Ports,
    echoed_headers,
    mesh,
)
from tests.unit.security.tokens import ISSUER, Issuer

pytestmark = pytest.mark.asyncio(loop_scope="module")

TTL = 10.0
KEY_MARK = b"PRIVATE KEY"


@dataclass
class AgentMesh:
    serve: ServeProcess
    client: SidecarAgent
    server: SidecarAgent
    ports: Ports
    tls_port: int


async def start_agent(
    root: Path, name: str, labels: dict[str, str], account: str, mesh_: ServeProcess,
    tls_port: int, issuer: Issuer, ca_root: Path, transport: XdsTransport,
) -> SidecarAgent:  # fmt: skip
    home = root / name
    home.mkdir()
    token = home / "istio-token"
    token.write_text(issuer.token(NAMESPACE, account))
    options = AgentOptions(
        identity=SpiffeId("cluster.local", NAMESPACE, account),
        xds_addresses=(f"{LOOPBACK}:{tls_port}",),
        ca=CaEndpoint(f"{LOOPBACK}:{tls_port}", ca_root, token),
        sds_socket=home / "sds" / "socket",
        xds_socket=home / "XDS",
        ttl=TTL,
        key=KeyAlgorithm.ECDSA,
    )
    admin = free_port()
    node = f"sidecar~127.0.0.1~{name}-1.{NAMESPACE}~{NAMESPACE}.svc.cluster.local"
    bootstrap = agent_bootstrap(
        EnvoyBootstrapOptions(
            node_id=node, node_metadata={"NAMESPACE": NAMESPACE, "LABELS": labels},
            admin_port=admin, transport=transport,
        ),
        options.xds_socket,
        options.sds_socket,
    )  # fmt: skip
    command = EnvoyCommand(
        binary=str(envoy_binary()),
        bootstrap_path=home / "envoy-rev.json",
        admin_port=admin,
        drain_duration=1,
        termination_drain_duration=0.5,
        concurrency=1,
    )
    agent = SidecarAgent(
        options, envoy=EnvoyProcess(command, bootstrap), status=StatusServer(LOOPBACK, 0)
    )
    return agent


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def agent_mesh(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[AgentMesh]:
    root = tmp_path_factory.mktemp("agent-mesh")
    upstreams = UpstreamPool()
    app = await upstreams("app")
    ports = Ports(egress=free_port(), inbound=free_port())
    config = root / "mesh"
    config.mkdir()
    text = mesh(ports, app, "STRICT", one_request_per_connection=True)
    (config / "mesh.yaml").write_text(text)
    issuer = Issuer()
    jwks = issuer.write_jwks(root / "jwks.json")
    ca = os.environ["PILOTHOUSE_CA_DIR"]
    tls_port = free_port()
    serve = ServeProcess(
        [config],
        xds_port=free_port(),
        admin_port=free_port(),
        log_path=root / "serve.log",
        log_level="info",
        extra_args=(
            "--xds-tls-address", f"{LOOPBACK}:{tls_port}", "--ca-dir", ca,
            "--jwt-issuer", f"{ISSUER}={jwks}",
        ),
    )  # fmt: skip
    serve.start()
    agents: list[SidecarAgent] = []
    running: list[asyncio.Task[None]] = []
    try:
        await serve.wait_ready()
        ca_root = Path(ca) / ca_dir.ROOT_CERT
        server_labels = {"app": "server", **SIDECAR_LABEL}
        for name, labels, transport in (
            ("server", server_labels, XdsTransport.SOTW),
            ("client", {"app": "client"}, XdsTransport.DELTA),
        ):
            agent = await start_agent(
                root, name, labels, name, serve, tls_port, issuer, ca_root, transport
            )
            agents.append(agent)
            running.append(asyncio.create_task(agent.run()))
        await wait_for_port(ports.inbound, timeout=20)
        await wait_for_port(ports.egress, timeout=20)
        yield AgentMesh(serve, agents[1], agents[0], ports, tls_port)
    finally:
        for agent in agents:
            agent.close()
        for task in running:
            await asyncio.wait_for(task, 15)
        # SIGTERM's path: each Envoy's listeners were drained before it was stopped
        assert all(a.envoy is not None and a.envoy.drained for a in agents)
        await serve.stop()
        await upstreams.close_all()


async def status(agent: SidecarAgent) -> tuple[int, str]:
    assert agent.status is not None
    answer = await fetch(LOOPBACK, agent.status.port, "/healthz/ready")
    return answer.status, answer.body.decode()


async def wait_ready(agent: SidecarAgent) -> None:
    async with asyncio.timeout(20):
        while (await status(agent))[0] != 200:
            await asyncio.sleep(0.1)


async def wait_traffic(mesh_: AgentMesh) -> None:
    async with asyncio.timeout(20):
        while (await send_requests(LOOPBACK, mesh_.ports.egress, 1, authority=HOST)).ok != 1:
            await asyncio.sleep(0.1)


def identities(body: bytes) -> str:
    return echoed_headers(body).get("x-forwarded-client-cert", "")


async def test_agent_sidecars_carry_mutual_tls(agent_mesh: AgentMesh) -> None:
    for agent in (agent_mesh.client, agent_mesh.server):
        await wait_ready(agent)
    await wait_traffic(agent_mesh)
    report = await send_requests(LOOPBACK, agent_mesh.ports.egress, 5, authority=HOST)
    assert report.ok == 5, report.summary()
    for result in report.results:
        forwarded = identities(result.body)
        assert f"URI={CLIENT_ID}" in forwarded and f"By={SERVER_ID}" in forwarded, forwarded
    for agent in (agent_mesh.client, agent_mesh.server):
        envoy = agent.envoy
        assert envoy is not None and envoy.process is not None
        args = Path(f"/proc/{envoy.process.pid}/cmdline").read_bytes().split(b"\0")
        assert args[args.index(b"--drain-strategy") :][:2] == [b"--drain-strategy", b"immediate"]
        assert b"--disable-hot-restart" in args and b"--concurrency" in args
        written = envoy.command.bootstrap_path.read_bytes()
        assert KEY_MARK not in written and b"Bearer" not in written
        assert b"transport_socket" not in written  # no TLS, no credential towards pilothouse
        assert json.loads(written)["static_resources"]["clusters"][0]["load_assignment"]


async def test_rotation_under_traffic_fails_no_request(agent_mesh: AgentMesh) -> None:
    await wait_traffic(agent_mesh)
    issued = agent_mesh.client.identity.certificates.issued_count
    report = await send_requests(
        LOOPBACK, agent_mesh.ports.egress, 10_000, authority=HOST, concurrency=2,
        request_timeout=3.0, total_timeout=7.0,
    )  # fmt: skip
    assert report.results and report.ok == len(report.results), report.summary()
    assert agent_mesh.client.identity.certificates.issued_count > issued
    hashes = {
        part
        for result in report.results
        for part in identities(result.body).split(";")
        if part.startswith("Hash=")
    }
    assert len(hashes) >= 2, hashes


async def test_envoy_keeps_its_stream_while_pilothouse_restarts(agent_mesh: AgentMesh) -> None:
    """Both flavours: the client's Envoy speaks delta to its agent, the server's SotW."""
    await wait_traffic(agent_mesh)
    agents = (agent_mesh.client, agent_mesh.server)
    streams = [await envoy_stat(a, "cluster.xds-grpc.upstream_rq_total") for a in agents]
    relayed = [a.xds.responses for a in agents]
    connects = [a.upstream.connects for a in agents]
    agent_mesh.serve.kill()
    # pilothouse is gone: each Envoy is still connected to its agent and still routes
    report = await send_requests(LOOPBACK, agent_mesh.ports.egress, 3, authority=HOST)
    assert report.ok == 3, report.summary()
    for agent in agents:
        assert await envoy_stat(agent, "control_plane.connected_state") == 1
    agent_mesh.serve.start()
    await agent_mesh.serve.wait_ready()
    async with asyncio.timeout(20):
        for agent, before, dialled in zip(agents, relayed, connects, strict=True):
            while agent.xds.responses <= before or agent.upstream.connects <= dialled:
                await asyncio.sleep(0.1)
    for agent, opened in zip(agents, streams, strict=True):
        assert await envoy_stat(agent, "cluster.xds-grpc.upstream_rq_total") == opened
        assert await envoy_stat(agent, "control_plane.connected_state") == 1
    await wait_traffic(agent_mesh)


async def test_no_private_key_reaches_the_server(agent_mesh: AgentMesh) -> None:
    await wait_traffic(agent_mesh)
    serve = agent_mesh.serve
    for path in (
        "/debug/syncz", "/debug/adsz", "/debug/connections",
        "/debug/acked", "/debug/configz", "/debug/push_status", "/metrics",
        "/debug/config_dump?proxyID=client-1.shop", "/debug/config_dump?proxyID=server-1.shop",
    ):  # fmt: skip
        answer = await fetch(LOOPBACK, serve.admin_port, path, timeout=5.0)
        assert answer.status == 200, (path, answer.status)
        assert KEY_MARK not in answer.body, path
    # since the restart (an earlier test), the server issued only what the agents asked
    # for with a CSR; the agents rotate at half the TTL, so one comes within it (and,
    # should this test run first, both agents' first rotations within two TTLs)
    async with asyncio.timeout(2 * TTL):
        while True:
            metrics = (await fetch(LOOPBACK, serve.admin_port, "/metrics")).body.decode()
            csrs = sample(metrics, "citadel_server_csr_count")
            issued = sample(metrics, "citadel_server_success_cert_issuance_count")
            log = serve.log_path.read_bytes()
            if issued >= 1 and log.count(b"certificate issued") >= 4:
                break
            await asyncio.sleep(0.2)
    assert KEY_MARK not in log
    assert csrs >= issued
    signed_here = agent_mesh.client.authority.calls + agent_mesh.server.authority.calls
    assert signed_here >= 4  # both first issues and rotations went through the CSR path


async def envoy_stat(agent: SidecarAgent, name: str) -> int:
    assert agent.envoy is not None
    answer = await fetch(LOOPBACK, agent.envoy.command.admin_port, f"/stats?filter=^{name}$")
    for line in answer.body.decode().splitlines():
        key, _, value = line.partition(": ")
        if key == name:
            return int(value)
    raise AssertionError(f"no stat {name}: {answer.body!r}")


def sample(text: str, name: str) -> float:
    for line in text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"no {name} in metrics")

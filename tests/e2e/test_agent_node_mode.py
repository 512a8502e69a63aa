"""Node mode with real Envoys: one node agent, two workloads with different identities,
each workload's Envoy on its own sockets and running as its own uid, mutual TLS between
them, and a caller of one workload refused the other's certificate.

pilothouse runs its real ``serve`` wiring in process (TLS port, its CA, a JWT issuer, no
server-made keys) over the ``shop`` mesh of ``test_traffic_mtls`` in STRICT mode. One
:class:`~pilothouse.agent.node_agent.NodeAgent` serves ``client`` (account ``client``,
uid 2001) and ``server`` (account ``server``, uid 2002); each Envoy is started as its
workload's uid on the workload's public sockets, so the agent's peer-credential gates
(``SO_PEERCRED``) let it through as that workload and no other.

- The client's requests reach the application over mutual TLS carrying both SPIFFE ids,
  certificates made on the node for each workload's own identity.
- A process running as the client's uid (a Python gRPC client started by ``setpriv``
  as uid 2001, keeping only the capability to read the test's Python, which lives in
  root's home) asks the server's SDS socket for ``default``: the gate refuses it before
  a byte is read (UNAVAILABLE) and counts it. On its own socket, naming the server's SPIFFE id as
  a resource gets nothing: the only secrets there are its own (``default`` carries the
  client's id).

Needs root and ``setpriv`` (to run processes as other uids); elsewhere the test is
skipped, and
``tests/integration/test_node_agent.py`` covers the gates with one uid.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import pytest_asyncio

from pilothouse.agent.envoy_bootstrap import agent_bootstrap
from pilothouse.agent.node_agent import NodeAgent, read_node_config
from pilothouse.bootstrap.envoy import EnvoyBootstrapOptions, XdsTransport
from pilothouse.security.workload_keys import KeyAlgorithm
from tests.e2e.harness.client import send_requests
from tests.e2e.harness.envoy import envoy_binary
from tests.e2e.harness.ports import LOOPBACK, free_port, wait_for_port
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
from tests.integration.tls_served import running

pytestmark = [
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.skipif(
        os.geteuid() != 0 or shutil.which("setpriv") is None,
        reason="runs each Envoy and a caller as other uids: needs root and setpriv",
    ),
]

UIDS = {"client": 2001, "server": 2002}
SDS = "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret"

ROGUE = """\
import asyncio, json, sys
import grpc
from cryptography import x509
from envoy.extensions.transport_sockets.tls.v3 import secret_pb2
from envoy.service.discovery.v3 import discovery_pb2

METHOD = "/envoy.service.secret.v3.SecretDiscoveryService/StreamSecrets"

async def ask(socket, names):
    async with grpc.aio.insecure_channel(f"unix:{socket}") as channel:
        call = channel.stream_stream(
            METHOD, request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=discovery_pb2.DiscoveryResponse.FromString)()
        try:
            await call.write(discovery_pb2.DiscoveryRequest(type_url=sys.argv[3],
                                                            resource_names=names))
            async with asyncio.timeout(20):
                response = await call.read()
        except grpc.aio.AioRpcError as problem:
            return {"refused": problem.code().name}
        call.cancel()
    found = {}
    for resource in response.resources:
        secret = secret_pb2.Secret()
        resource.Unpack(secret)
        chain = secret.tls_certificate.certificate_chain.inline_bytes
        uris = []
        if chain:
            leaf = x509.load_pem_x509_certificates(chain)[0]
            sans = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName)
            uris = sans.value.get_values_for_type(x509.UniformResourceIdentifier)
        found[secret.name] = uris
    return {"secrets": found}

async def main():
    other = await ask(sys.argv[1], ["default"])
    own = await ask(sys.argv[2], ["default", sys.argv[4]])
    print(json.dumps({"other": other, "own": own}))

asyncio.run(main())
"""


@dataclass
class NodeMesh:
    agent: NodeAgent
    home: Path
    ports: Ports
    envoy_logs: list[Path]


async def start_envoy(home: Path, name: str, labels: dict[str, str]) -> asyncio.subprocess.Process:
    """The workload's Envoy on its public sockets, as the workload's uid."""
    bootstrap = agent_bootstrap(
        EnvoyBootstrapOptions(
            node_id=f"sidecar~127.0.0.1~{name}-1.{NAMESPACE}~{NAMESPACE}.svc.cluster.local",
            node_metadata={"NAMESPACE": NAMESPACE, "LABELS": labels},
            admin_port=free_port(),
            transport=XdsTransport.DELTA if name == "client" else XdsTransport.SOTW,
        ),
        home / name / "XDS",
        home / name / "sds",
    )
    path = home / name / "envoy-rev.json"
    path.write_text(json.dumps(bootstrap))
    path.chmod(0o644)
    uid = UIDS[name]
    with open(home / f"envoy-{name}.log", "wb") as log:
        return await asyncio.create_subprocess_exec(
            str(envoy_binary()), "-c", str(path), "--drain-strategy", "immediate",
            "--disable-hot-restart", "--concurrency", "1", "-l", "warning",
            user=uid, group=uid, stdout=log, stderr=asyncio.subprocess.STDOUT, cwd=home / name,
        )  # fmt: skip


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def node_mesh() -> AsyncIterator[NodeMesh]:
    # under /tmp itself (pytest's base directory is root's alone): the workloads' uids
    # must reach their sockets and bootstraps
    home = Path(tempfile.mkdtemp(prefix="node-mode-"))
    home.chmod(0o755)
    upstreams = UpstreamPool()
    envoys: list[asyncio.subprocess.Process] = []
    try:
        app = await upstreams("app")
        ports = Ports(egress=free_port(), inbound=free_port())
        (home / "mesh").mkdir()
        text = mesh(ports, app, "STRICT", one_request_per_connection=False)
        (home / "mesh" / "mesh.yaml").write_text(text)
        async for served in running(home, server_keys=False, config_dirs=(home / "mesh",)):
            root = home / "root-cert.pem"
            root.write_bytes(served.root_pem())
            config = f"xdsAddresses: [{served.tls_target}]\nrootCert: {root}\nworkloads:\n"
            for name, uid in UIDS.items():
                (home / name).mkdir(mode=0o755)
                token = home / name / "istio-token"
                token.write_text(served.issuer.token(NAMESPACE, name))
                config += (
                    f"- {{name: {name}, namespace: {NAMESPACE}, serviceAccount: {name}, "
                    f"uids: [{uid}], token: {token}, sdsSocket: {home / name / 'sds'}, "
                    f"xdsSocket: {home / name / 'XDS'}}}\n"
                )
            agent = NodeAgent(
                read_node_config(config, "node.yaml"), home / "private", key=KeyAlgorithm.ECDSA
            )
            task = asyncio.create_task(agent.run())
            try:
                async with asyncio.timeout(30):  # bounds a failure, not the start-up
                    await agent.serving.wait()
                envoys += await asyncio.gather(
                    start_envoy(home, "server", {"app": "server", **SIDECAR_LABEL}),
                    start_envoy(home, "client", {"app": "client"}),
                )
                logs = [home / "envoy-server.log", home / "envoy-client.log"]
                # each listener comes once its Envoy has started, had its certificate
                # made on the node and its config: seconds on a loaded machine
                try:
                    await asyncio.gather(
                        wait_for_port(ports.inbound, timeout=30),
                        wait_for_port(ports.egress, timeout=30),
                    )
                except TimeoutError as late:
                    tails = "\n".join(log.read_text(errors="replace")[-3000:] for log in logs)
                    raise AssertionError(f"{late}; the Envoys said:\n{tails}") from None
                yield NodeMesh(agent, home, ports, logs)
            finally:
                for envoy in envoys:
                    if envoy.returncode is None:
                        envoy.terminate()
                    await envoy.wait()
                agent.close()
                await asyncio.wait_for(task, 10)
    finally:
        await upstreams.close_all()
        shutil.rmtree(home, ignore_errors=True)


async def test_two_workloads_on_one_agent_talk_mutual_tls(node_mesh: NodeMesh) -> None:
    async with asyncio.timeout(30):
        while (report := await send_requests(LOOPBACK, node_mesh.ports.egress, 1,
                                             authority=HOST)).ok != 1:  # fmt: skip
            await asyncio.sleep(0.1)
    report = await send_requests(LOOPBACK, node_mesh.ports.egress, 5, authority=HOST)
    assert report.ok == 5, report.summary()
    for result in report.results:
        forwarded = echoed_headers(result.body).get("x-forwarded-client-cert", "")
        assert f"URI={CLIENT_ID}" in forwarded and f"By={SERVER_ID}" in forwarded, forwarded
    # each Envoy came in through its own workload's gate, as its own uid (its secrets
    # come on its ADS stream, answered by the agent); nobody was refused
    gates = {(gate.name, gate.public.name): gate for gate in node_mesh.agent.gates}
    for name in UIDS:
        assert gates[(name, "XDS")].admitted >= 1, name
    assert all(gate.refused == 0 for gate in gates.values()), gates
    for name in UIDS:
        assert node_mesh.agent.workloads[name].upstream.connects >= 1


async def test_a_workload_cannot_obtain_the_other_s_certificate(node_mesh: NodeMesh) -> None:
    home = node_mesh.home
    script = home / "rogue.py"
    script.write_text(ROGUE)
    script.chmod(0o644)
    uid = UIDS["client"]
    process = await asyncio.create_subprocess_exec(
        "setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
        "--inh-caps=+dac_read_search", "--ambient-caps=+dac_read_search", "--",
        sys.executable, str(script), str(home / "server" / "sds"), str(home / "client" / "sds"),
        SDS, SERVER_ID, cwd=home, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), 40)
    assert process.returncode == 0, err.decode()
    answers = json.loads(out)
    assert answers["other"] == {"refused": "UNAVAILABLE"}, answers
    assert answers["own"] == {"secrets": {"default": [CLIENT_ID]}}, answers
    refused = {g.public.name: g.refused for g in node_mesh.agent.gates if g.name == "server"}
    assert refused == {"sds": 1, "XDS": 0}

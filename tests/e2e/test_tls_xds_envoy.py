"""A real Envoy on pilothouse's TLS port: a bootstrap from ``pilothouse bootstrap
--xds-tls-root … --xds-token-file …`` (or a client certificate), pilothouse's own root,
a bearer token from a test issuer; Envoy gets its clusters. Without a token it gets
none: the stream is refused.

The tests only read from the server, each with an Envoy and credentials of its own, so
the module shares one ``serve`` and its issuer."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from tests.e2e.harness.cli_in_process import run_cli
from tests.e2e.harness.fleet import EnvoyFleet
from tests.e2e.harness.serve_process import ServeProcess
from tests.e2e.harness.token_served import served_with_issuer
from tests.unit.security.certs import csr_pem, ec_key, key_pem
from tests.unit.security.tokens import Issuer

pytestmark = pytest.mark.timeout(120)

NODE = "sidecar~127.0.0.1~productpage-v1.bookinfo~bookinfo.svc.cluster.local"
REVIEWS = "outbound|9080||reviews.bookinfo.svc.cluster.local"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def served(
    tmp_path_factory: pytest.TempPathFactory,
) -> AsyncIterator[tuple[ServeProcess, Issuer]]:
    async with served_with_issuer(tmp_path_factory.mktemp("served")) as served:
        yield served


def bootstrap(*args: str) -> dict[str, object]:
    """What ``pilothouse bootstrap`` prints (run in this process: it only prints; the
    command as a process is tests/e2e/test_bootstrap_cli.py's)."""
    done = run_cli("bootstrap", "--node", NODE, "--admin-port", "0", "-o", "json", *args)
    assert done.returncode == 0, done.stderr
    document: dict[str, object] = json.loads(done.stdout)
    return document


def root_file() -> Path:
    return Path(os.environ["PILOTHOUSE_CA_DIR"]) / "root-cert.pem"


async def clusters(envoy: object, wanted: str, timeout: float = 15.0) -> set[str]:
    names: set[str] = set()
    async with asyncio.timeout(timeout):
        while wanted not in names:
            statuses = (await envoy.clusters_json()).get("cluster_statuses", [])  # type: ignore[attr-defined]
            names = {status["name"] for status in statuses}
            await asyncio.sleep(0.1)
    return names


async def test_envoy_with_a_token_gets_its_clusters(
    served: tuple[ServeProcess, Issuer], envoy_factory: EnvoyFleet, tmp_path: Path
) -> None:
    process, issuer = served
    token = tmp_path / "istio-token"
    token.write_text(issuer.token("bookinfo", "bookinfo-productpage"))
    document = bootstrap(
        "--xds-address", f"127.0.0.1:{process.xds_tls_port}",
        "--xds-tls-root", str(root_file()), "--xds-token-file", str(token),
    )  # fmt: skip
    envoy = await envoy_factory(document)
    names = await clusters(envoy, REVIEWS)
    assert "xds-grpc" in names
    assert await envoy.stat("cluster.xds-grpc.ssl.handshake") >= 1


async def test_envoy_with_a_client_certificate_gets_its_clusters(
    served: tuple[ServeProcess, Issuer], envoy_factory: EnvoyFleet, tmp_path: Path
) -> None:
    import grpc

    from pilothouse.api.istio.security.v1alpha1 import ca_pb2, ca_pb2_grpc

    process, issuer = served
    key = ec_key()
    credentials = grpc.ssl_channel_credentials(root_certificates=root_file().read_bytes())
    async with grpc.aio.secure_channel(f"127.0.0.1:{process.xds_tls_port}", credentials) as ch:
        stub = ca_pb2_grpc.IstioCertificateServiceStub(ch)  # type: ignore[no-untyped-call]
        token = issuer.token("bookinfo", "bookinfo-productpage")
        answer = await stub.CreateCertificate(
            ca_pb2.IstioCertificateRequest(csr=csr_pem(key)),
            metadata=(("authorization", f"Bearer {token}"),),
        )
    (tmp_path / "cert-chain.pem").write_text("".join(answer.cert_chain[:-1]))
    (tmp_path / "key.pem").write_bytes(key_pem(key))
    document = bootstrap(
        "--xds-address", f"127.0.0.1:{process.xds_tls_port}",
        "--xds-tls-root", str(root_file()),
        "--xds-tls-cert", str(tmp_path / "cert-chain.pem"),
        "--xds-tls-key", str(tmp_path / "key.pem"),
    )  # fmt: skip
    envoy = await envoy_factory(document)
    await clusters(envoy, REVIEWS)


async def test_envoy_without_credentials_gets_nothing(
    served: tuple[ServeProcess, Issuer], envoy_factory: EnvoyFleet
) -> None:
    process, _ = served
    document = bootstrap(
        "--xds-address", f"127.0.0.1:{process.xds_tls_port}", "--xds-tls-root", str(root_file())
    )
    envoy = await envoy_factory(document, wait_ready=False)
    # The stream is refused (UNAUTHENTICATED) again and again; no cluster arrives.
    await envoy.wait_stat("cluster.xds-grpc.upstream_rq_total", 2, timeout=15)
    names = {s["name"] for s in (await envoy.clusters_json()).get("cluster_statuses", [])}
    assert names == {"xds-grpc"}

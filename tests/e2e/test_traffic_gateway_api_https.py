"""An HTTPS Gateway API listener whose certificate comes over SDS from ``--secrets DIR``:
pilothouse's real ``serve`` wiring in process (TLS xDS port, CA, JWT issuer), one real
Envoy labelled ``gateway.networking.k8s.io/gateway-name: web`` authenticated with a
token, and a real HTTPS client that checks the certificate it is shown."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pilothouse.security import ca_dir
from tests.e2e.harness.client import fetch
from tests.e2e.harness.fleet import EnvoyFleet
from tests.e2e.harness.ports import LOOPBACK, free_port, wait_for_port
from tests.e2e.harness.tls import ThrowawayCa, client_ssl_context
from tests.e2e.harness.upstreams import UpstreamPool
from tests.e2e.test_traffic_sds import CREDENTIAL, HOST, NAMESPACE, authenticated_bootstrap
from tests.e2e.test_traffic_sds import install as install_credential
from tests.e2e.traffic_mesh import render, service
from tests.integration.serve_in_process import serve_in_process
from tests.unit.security.tokens import ISSUER, Issuer

GW = "gateway.networking.k8s.io/v1"


async def test_an_https_listener_serves_the_secret_of_its_certificate_ref(
    tmp_path: Path, monkeypatch: Any, envoy_factory: EnvoyFleet, upstream_factory: UpstreamPool
) -> None:
    port = free_port()
    authority = ThrowawayCa(tmp_path / "web-ca")
    issued = authority.issue("web", (HOST,))
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    install_credential(secrets, issued.cert, issued.key)
    web = await upstream_factory("web")
    config = tmp_path / "mesh"
    config.mkdir()
    listener = {
        "name": "https",
        "port": port,
        "protocol": "HTTPS",
        "hostname": HOST,
        "tls": {"mode": "Terminate", "certificateRefs": [{"name": CREDENTIAL}]},
    }
    (config / "mesh.yaml").write_text(
        render(
            service("web", NAMESPACE, 8000, [(web, {})]),
            {
                "apiVersion": GW,
                "kind": "Gateway",
                "metadata": {"name": "web", "namespace": NAMESPACE},
                "spec": {"gatewayClassName": "istio", "listeners": [listener]},
            },
            {
                "apiVersion": GW,
                "kind": "HTTPRoute",
                "metadata": {"name": "web", "namespace": NAMESPACE},
                "spec": {
                    "parentRefs": [{"name": "web"}],
                    "rules": [{"backendRefs": [{"name": "web", "port": 8000}]}],
                },
            },
        )
    )
    issuer = Issuer()
    jwks = issuer.write_jwks(tmp_path / "jwks.json")
    ca = os.environ["PILOTHOUSE_CA_DIR"]  # tests/conftest.py: made once for the suite
    overrides = {
        "xds.tls_address": "127.0.0.1:0",
        "ca.dir": ca,
        "auth.jwt_issuers": (f"{ISSUER}={jwks}",),
        "sds.secrets_dir": str(secrets),
    }
    trusting = client_ssl_context(authority.cert_path)
    async with serve_in_process(monkeypatch, config, overrides) as running:
        bootstrap = authenticated_bootstrap(
            running.bound.xds_tls_port,
            Path(ca) / ca_dir.ROOT_CERT,
            issuer.token(NAMESPACE, "web-istio"),
            node_id=f"router~127.0.0.1~web-istio-1.{NAMESPACE}~{NAMESPACE}.svc.cluster.local",
            metadata={
                "NAMESPACE": NAMESPACE,
                "LABELS": {"gateway.networking.k8s.io/gateway-name": "web"},
            },
        )
        envoy = await envoy_factory(bootstrap)
        await wait_for_port(port, timeout=15)
        answer = await fetch(
            LOOPBACK, port, "/hello", authority=HOST, ssl_context=trusting, server_hostname=HOST
        )
        stats = await envoy.stats("sds")
    assert answer.status == 200 and answer.header("x-upstream") == "web"
    assert stats.get(f"sds.kubernetes_{CREDENTIAL}.update_success", 0) >= 1, stats

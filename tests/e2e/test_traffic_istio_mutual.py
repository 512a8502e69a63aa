"""ISTIO_MUTUAL between two real Envoys whose certificates come from pilothouse over SDS.

Both proxies authenticate on the TLS xDS port with their service account tokens and get
``default`` (a key pilothouse made, signed by its CA for their identity) and ``ROOTCA``.
A sidecar of ``shop`` calls the ``edge`` gateway through a DestinationRule with
``ISTIO_MUTUAL``; the gateway's server is ``ISTIO_MUTUAL`` too, so the request only gets
through when both sides hold certificates the other's roots verify. The workload
certificates live 4 s here: each proxy is pushed a new one at about half of that, and
traffic keeps flowing over the rotated certificates.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pilothouse.bootstrap.envoy import XdsTransport
from pilothouse.security import ca_dir
from tests.e2e.harness.client import send_requests
from tests.e2e.harness.fleet import EnvoyFleet
from tests.e2e.harness.ports import LOOPBACK, free_port, wait_for_port
from tests.e2e.harness.upstreams import UpstreamPool
from tests.e2e.test_traffic_sds import authenticated_bootstrap
from tests.e2e.traffic_mesh import (
    fqdn,
    gateway,
    render,
    service,
    sidecar,
    sidecar_node,
    to,
    virtual_service,
)
from tests.integration.serve_in_process import serve_in_process
from tests.unit.security.tokens import ISSUER, Issuer

EDGE, SHOP = "edge", "shop"


def mesh(gateway_port: int, egress_port: int, web: Any) -> str:
    ingress = {
        "apiVersion": "networking.istio.io/v1",
        "kind": "ServiceEntry",
        "metadata": {"name": "ingress", "namespace": EDGE},
        "spec": {
            "hosts": [fqdn("ingress", EDGE)],
            "location": "MESH_INTERNAL",
            "resolution": "STATIC",
            "ports": [{"number": egress_port, "name": "http", "protocol": "HTTP"}],
            "endpoints": [{"address": LOOPBACK, "ports": {"http": gateway_port}}],
        },
    }
    mutual = {
        "apiVersion": "networking.istio.io/v1",
        "kind": "DestinationRule",
        "metadata": {"name": "ingress", "namespace": SHOP},
        "spec": {"host": fqdn("ingress", EDGE), "trafficPolicy": {"tls": {"mode": "ISTIO_MUTUAL"}}},
    }
    return render(
        service("web", EDGE, 8000, [(web, {})]),
        gateway(EDGE, gateway_port, protocol="HTTPS", tls={"mode": "ISTIO_MUTUAL"}),
        virtual_service("web", EDGE, [{"route": [to(fqdn("web", EDGE))]}]),
        ingress,
        mutual,
        sidecar(SHOP, egress_port, hosts=(f"{EDGE}/*",)),
    )


async def test_sidecar_to_gateway_over_istio_mutual_with_rotating_certificates(
    tmp_path: Path,
    monkeypatch: Any,
    envoy_factory: EnvoyFleet,
    upstream_factory: UpstreamPool,
) -> None:
    gateway_port, egress_port = free_port(), free_port()
    web = await upstream_factory("web")
    config = tmp_path / "mesh"
    config.mkdir()
    (config / "mesh.yaml").write_text(mesh(gateway_port, egress_port, web))
    issuer = Issuer()
    jwks = issuer.write_jwks(tmp_path / "jwks.json")
    ca = os.environ["PILOTHOUSE_CA_DIR"]  # tests/conftest.py: made once for the suite
    overrides = {
        "xds.tls_address": "127.0.0.1:0",
        "sds.server_keys": True,  # these proxies have no node agent
        "ca.dir": ca,
        "auth.jwt_issuers": (f"{ISSUER}={jwks}",),
        "sds.workload_cert_ttl": 4.0,
        "sds.workload_key": "ecdsa",
    }
    root = Path(ca) / ca_dir.ROOT_CERT
    host = fqdn("ingress", EDGE)
    async with serve_in_process(monkeypatch, config, overrides) as running:
        tls_port = running.bound.xds_tls_port
        gateway_envoy = await envoy_factory(
            authenticated_bootstrap(tls_port, root, issuer.token(EDGE, "ingressgateway"))
        )
        sidecar_envoy = await envoy_factory(
            authenticated_bootstrap(
                tls_port,
                root,
                issuer.token(SHOP, "client"),
                node_id=sidecar_node(SHOP),
                metadata={"NAMESPACE": SHOP, "LABELS": {"app": "client"}},
                transport=XdsTransport.SOTW,
            )
        )
        await wait_for_port(gateway_port, timeout=15)
        await wait_for_port(egress_port, timeout=15)
        first = await send_requests(LOOPBACK, egress_port, 5, authority=host)
        for envoy in (sidecar_envoy, gateway_envoy):  # rotated at half of the 4 s lifetime
            await envoy.wait_stat("sds.default.update_success", at_least=2, timeout=10)
        second = await send_requests(LOOPBACK, egress_port, 5, authority=host)
        sidecar_stats = await sidecar_envoy.stats("sds|ssl")
        gateway_stats = await gateway_envoy.stats("sds|ssl")
    assert first.statuses == {200: 5}, first.summary()
    assert second.statuses == {200: 5}, second.summary()
    assert web.requests == 10
    for stats in (sidecar_stats, gateway_stats):
        assert stats.get("sds.default.update_success", 0) >= 2, stats
        assert stats.get("sds.ROOTCA.update_success", 0) >= 1, stats
    upstream = f"cluster.outbound|{egress_port}||{host}.ssl.handshake"
    assert sidecar_stats.get(upstream, 0) >= 1, sidecar_stats

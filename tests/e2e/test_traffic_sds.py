"""An HTTPS gateway whose certificate comes over SDS from the secrets directory, rotated by
replacing the files, with no restart of anything.

pilothouse runs its real ``serve`` wiring in process (TLS xDS port, CA, a JWT issuer,
``--secrets DIR``); a real Envoy gateway authenticates on the TLS port with a service
account token and gets its Gateway server's ``credentialName`` as SDS
``kubernetes://<name>``. A real HTTPS client checks the certificate the gateway serves;
after the files are replaced it sees the new one from the same Envoy process, and
``proxy-config secret`` shows the new one's serial, read from that Envoy.
"""

from __future__ import annotations

import asyncio
import os
import ssl
from pathlib import Path
from typing import Any

from cryptography import x509

from pilothouse.bootstrap.envoy import (
    EnvoyBootstrapOptions,
    XdsTls,
    XdsTransport,
    envoy_bootstrap,
)
from pilothouse.security import ca_dir
from tests.e2e.harness.cli_in_process import run_cli_in_thread
from tests.e2e.harness.client import fetch
from tests.e2e.harness.fleet import EnvoyFleet
from tests.e2e.harness.ports import LOOPBACK, free_port, wait_for_port
from tests.e2e.harness.tls import ThrowawayCa, client_ssl_context
from tests.e2e.harness.upstreams import UpstreamPool
from tests.e2e.traffic_mesh import (
    GATEWAY_LABELS,
    fqdn,
    gateway,
    gateway_node,
    render,
    service,
    to,
    virtual_service,
)
from tests.integration.serve_in_process import serve_in_process
from tests.unit.security.tokens import ISSUER, Issuer

HOST = "shop.example.test"
NAMESPACE = "edge"
CREDENTIAL = "shop-cert"


def authenticated_bootstrap(
    tls_port: int,
    root: Path,
    token: str,
    *,
    node_id: str = gateway_node(NAMESPACE),
    metadata: dict[str, Any] | None = None,
    transport: XdsTransport = XdsTransport.DELTA,
) -> dict[str, Any]:
    """A bootstrap whose ADS goes to the TLS port (``pilothouse bootstrap --xds-tls-root
    --xds-token-file``), trusting the CA's root and sending the token; a gateway of
    NAMESPACE unless told otherwise."""
    options = EnvoyBootstrapOptions(
        node_id=node_id,
        node_metadata=metadata or {"NAMESPACE": NAMESPACE, "LABELS": dict(GATEWAY_LABELS)},
        xds_port=tls_port,
        admin_port=0,
        transport=transport,
        xds_tls=XdsTls(root_file=str(root), token=token),
    )
    return envoy_bootstrap(options)


async def served_serial(port: int, context: ssl.SSLContext) -> int:
    """The serial number of the certificate the gateway presents for HOST."""
    _, writer = await asyncio.open_connection(LOOPBACK, port, ssl=context, server_hostname=HOST)
    try:
        der = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
    finally:
        writer.close()
        await writer.wait_closed()
    return int(x509.load_der_x509_certificate(der).serial_number)


def install(secrets: Path, cert: Path, key: Path) -> None:
    """Write the pair beside its place, then move both in (as a careful writer would)."""
    for source, target in ((cert, f"{CREDENTIAL}.crt"), (key, f"{CREDENTIAL}.key")):
        staged = secrets / f".{target}.tmp"
        staged.write_bytes(source.read_bytes())
        os.replace(staged, secrets / target)


async def test_a_gateway_serves_its_credential_over_sds_and_follows_its_replacement(
    tmp_path: Path,
    monkeypatch: Any,
    envoy_factory: EnvoyFleet,
    upstream_factory: UpstreamPool,
) -> None:
    port = free_port()
    authority = ThrowawayCa(tmp_path / "web-ca")
    first = authority.issue("first", (HOST,))
    second = authority.issue("second", (HOST,))
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    install(secrets, first.cert, first.key)
    web = await upstream_factory("web")
    config = tmp_path / "mesh"
    config.mkdir()
    tls = {"mode": "SIMPLE", "credentialName": CREDENTIAL}
    (config / "mesh.yaml").write_text(
        render(
            service("web", NAMESPACE, 8000, [(web, {})]),
            gateway(NAMESPACE, port, protocol="HTTPS", hosts=[HOST], tls=tls),
            virtual_service(
                "web", NAMESPACE, [{"route": [to(fqdn("web", NAMESPACE))]}], hosts=[HOST]
            ),
        )
    )
    issuer = Issuer()
    jwks = issuer.write_jwks(tmp_path / "jwks.json")
    ca = os.environ["PILOTHOUSE_CA_DIR"]  # tests/conftest.py: made once for the suite
    overrides = {
        "xds.tls_address": "127.0.0.1:0",
        "sds.server_keys": True,  # these proxies have no node agent
        "ca.dir": ca,
        "auth.jwt_issuers": (f"{ISSUER}={jwks}",),
        "sds.secrets_dir": str(secrets),
    }
    trusting = client_ssl_context(authority.cert_path)
    async with serve_in_process(monkeypatch, config, overrides) as running:
        bootstrap = authenticated_bootstrap(
            running.bound.xds_tls_port,
            Path(ca) / ca_dir.ROOT_CERT,
            issuer.token(NAMESPACE, "ingressgateway"),
        )
        envoy = await envoy_factory(bootstrap)
        await wait_for_port(port, timeout=15)
        answer = await fetch(
            LOOPBACK, port, "/hello", authority=HOST, ssl_context=trusting, server_hostname=HOST
        )
        assert answer.status == 200
        assert await served_serial(port, trusting) == _serial(first.cert)
        pid = envoy.pid
        install(secrets, second.cert, second.key)
        async with asyncio.timeout(15):
            while await served_serial(port, trusting) != _serial(second.cert):
                await asyncio.sleep(0.1)
        again = await fetch(
            LOOPBACK, port, "/again", authority=HOST, ssl_context=trusting, server_hostname=HOST
        )
        assert again.status == 200
        assert envoy.pid == pid and envoy.running()
        # proxy-config secret reads them from the gateway's Envoy, as istioctl does
        host, admin_port = await envoy.admin_address()
        shown = await run_cli_in_thread(
            "pc", "secret", gateway_node(NAMESPACE), "--envoy-admin", f"{host}:{admin_port}",
            "--admin", f"127.0.0.1:{running.bound.admin_port}",
        )  # fmt: skip
        assert shown.returncode == 0, shown.stderr
        row = next(r for r in shown.stdout.splitlines() if r.startswith(f"kubernetes://{CREDENTIAL}"))
        assert row.split()[1:6] == ["Cert", "Chain", "ACTIVE", "true", f"{_serial(second.cert):x}"]
        stats = await envoy.stats("sds")
        assert running.discovery.stats.secret_pushes >= 1
    assert stats.get(f"sds.kubernetes_{CREDENTIAL}.update_success", 0) >= 2, stats
    assert web.requests == 2


def _serial(cert: Path) -> int:
    return int(x509.load_pem_x509_certificate(cert.read_bytes()).serial_number)

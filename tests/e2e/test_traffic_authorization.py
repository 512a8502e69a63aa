"""AuthorizationPolicy and RequestAuthentication enforced by real Envoys.

One mesh, three sidecars with certificates from pilothouse's CA (over SDS, after
proving their service accounts on the TLS xDS port): ``server`` (an HTTP and a TCP
ingress port in front of an application that echoes what it got), ``client`` and
``intruder`` (each calling the server through its own egress listener; auto-mTLS
carries their SPIFFE identities). A local HTTP server in the test publishes the JSON Web
Key Set of a token issuer (keys made here with PyJWT); pilothouse fetches it and inlines
it into the server's ``jwt_authn`` filter.

The server's policies: ALLOW the client's principal on every path but ``/secure*``;
ALLOW any request principal of the issuer on ``/secure*``; DENY ``/admin*`` on the HTTP
port (a DENY with only HTTP fields would refuse every TCP connection, as in istiod); on
the TCP port ALLOW the client's principal. The test checks, over real traffic:

- the client gets 200, the intruder 403; ``/admin`` is 403 even for the client;
- ``/secure`` without a token is 403, with a valid token 200, with an expired or
  wrongly signed one 401 (an invalid token is refused on any path);
- the TCP port serves the client (mutual TLS) and closes a plaintext connection;
- a new policy reaches only the proxy it selects, as LDS alone (Envoy's own counters).

Envoy applies a changed filter chain to new connections (the ones it had drain with the
old chain), so the client opens one upstream connection per request (a DestinationRule
with ``maxRequestsPerConnection: 1``): each request meets the policies in force.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from pilothouse.bootstrap.envoy import EnvoyBootstrapOptions, XdsTls, XdsTransport, envoy_bootstrap
from pilothouse.security import ca_dir
from tests.e2e.harness.client import fetch
from tests.e2e.harness.envoy import EnvoyProcess
from tests.e2e.harness.fleet import EnvoyFleet
from tests.e2e.harness.ports import LOOPBACK, free_port, wait_for_port
from tests.e2e.harness.upstreams import Upstream, UpstreamPool
from tests.integration.push_settled import quiet
from tests.integration.serve_in_process import serve_in_process, write_atomically
from tests.unit.security.tokens import ISSUER, Issuer

NAMESPACE = "shop"
HOST = f"server.{NAMESPACE}.svc.cluster.local"
ALT_HOST = f"server-alt.{NAMESPACE}.svc.cluster.local"
TOKEN_ISSUER = "https://issuer.test"
CLIENT = f"cluster.local/ns/{NAMESPACE}/sa/client"
KIND = "AuthorizationPolicy"


def mesh(ports: dict[str, int], app: Upstream, jwks_uri: str) -> str:
    return f"""\
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {{name: server, namespace: {NAMESPACE}}}
spec:
  hosts: [{HOST}]
  location: MESH_INTERNAL
  resolution: STATIC
  ports:
  - {{number: {ports["egress"]}, name: http, protocol: HTTP}}
  - {{number: {ports["egress_tcp"]}, name: tcp, protocol: TCP}}
  workloadSelector: {{labels: {{app: server}}}}
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {{name: server-alt, namespace: {NAMESPACE}}}
spec:
  hosts: [{ALT_HOST}]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{{number: {ports["intruder"]}, name: http, protocol: HTTP}}]
  workloadSelector: {{labels: {{app: server}}}}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {{name: server, namespace: {NAMESPACE}}}
spec:
  host: {HOST}
  trafficPolicy:
    connectionPool: {{http: {{maxRequestsPerConnection: 1}}}}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {{name: server-1, namespace: {NAMESPACE}}}
spec:
  address: 127.0.0.1
  ports: {{http: {ports["inbound"]}, tcp: {ports["inbound_tcp"]}}}
  serviceAccount: server
  labels: {{app: server, security.istio.io/tlsMode: istio}}
---
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {{name: server, namespace: {NAMESPACE}}}
spec:
  workloadSelector: {{labels: {{app: server}}}}
  ingress:
  - port: {{number: {ports["inbound"]}, protocol: HTTP, name: http}}
    bind: 127.0.0.1
    defaultEndpoint: 127.0.0.1:{app.port}
  - port: {{number: {ports["inbound_tcp"]}, protocol: TCP, name: tcp}}
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
  - port: {{number: {ports["egress"]}, protocol: HTTP, name: http}}
    bind: 127.0.0.1
    captureMode: NONE
    hosts: ["./*"]
  - port: {{number: {ports["egress_tcp"]}, protocol: TCP, name: tcp}}
    bind: 127.0.0.1
    captureMode: NONE
    hosts: ["./{HOST}"]
---
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {{name: intruder, namespace: {NAMESPACE}}}
spec:
  workloadSelector: {{labels: {{app: intruder}}}}
  egress:
  - port: {{number: {ports["intruder"]}, protocol: HTTP, name: http}}
    bind: 127.0.0.1
    captureMode: NONE
    hosts: ["./*"]
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {{name: allow-client, namespace: {NAMESPACE}}}
spec:
  selector: {{matchLabels: {{app: server}}}}
  rules:
  - from: [{{source: {{principals: [{CLIENT}]}}}}]
    to: [{{operation: {{notPaths: ["/secure*"]}}}}]
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {{name: allow-token, namespace: {NAMESPACE}}}
spec:
  selector: {{matchLabels: {{app: server}}}}
  rules:
  - from: [{{source: {{requestPrincipals: ["{TOKEN_ISSUER}/*"]}}}}]
    to: [{{operation: {{paths: ["/secure*"]}}}}]
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {{name: deny-admin, namespace: {NAMESPACE}}}
spec:
  selector: {{matchLabels: {{app: server}}}}
  action: DENY
  rules: [{{to: [{{operation: {{ports: ["{ports["inbound"]}"], paths: ["/admin*"]}}}}]}}]
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {{name: tcp-client, namespace: {NAMESPACE}}}
spec:
  selector: {{matchLabels: {{app: server}}}}
  rules:
  - from: [{{source: {{principals: [{CLIENT}]}}}}]
    to: [{{operation: {{ports: ["{ports["inbound_tcp"]}"]}}}}]
---
apiVersion: security.istio.io/v1
kind: RequestAuthentication
metadata: {{name: jwt, namespace: {NAMESPACE}}}
spec:
  selector: {{matchLabels: {{app: server}}}}
  jwtRules:
  - issuer: {TOKEN_ISSUER}
    jwksUri: {jwks_uri}
"""


def sidecar(workload: str, app: str, tls_port: int, root: Path, token: str) -> dict[str, Any]:
    labels = {"app": app, **({"security.istio.io/tlsMode": "istio"} if app == "server" else {})}
    options = EnvoyBootstrapOptions(
        node_id=f"sidecar~127.0.0.1~{workload}.{NAMESPACE}~{NAMESPACE}.svc.cluster.local",
        node_metadata={"NAMESPACE": NAMESPACE, "LABELS": labels},
        xds_port=tls_port,
        admin_port=0,
        transport=XdsTransport.DELTA,
        xds_tls=XdsTls(root_file=str(root), token=token),
    )
    return envoy_bootstrap(options)


@asynccontextmanager
async def key_server(issuer: Issuer) -> AsyncIterator[str]:
    """The issuer's JWKS over HTTP on a loopback port; yields its URL."""

    async def keys(_request: web.Request) -> web.Response:
        return web.json_response(issuer.jwks())

    app = web.Application()
    app.router.add_get("/jwks", keys)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, LOOPBACK, 0).start()
    try:
        yield f"http://{LOOPBACK}:{runner.addresses[0][1]}/jwks"
    finally:
        await runner.cleanup()


async def status(port: int, path: str = "/", token: str | None = None, host: str = HOST) -> int:
    headers = {"authorization": f"Bearer {token}"} if token else {}
    answer = await fetch(LOOPBACK, port, path, headers=headers, authority=host, timeout=5)
    return answer.status


async def eventually(port: int, expected: int, path: str = "/", **kw: Any) -> None:
    """Until a request answers ``expected`` (the config is still arriving)."""
    last: object = None
    try:
        async with asyncio.timeout(20):
            while True:
                try:
                    last = await status(port, path, **kw)
                except (OSError, EOFError, ValueError) as e:
                    last = e
                if last == expected:
                    return
                await asyncio.sleep(0.2)
    except TimeoutError:
        pytest.fail(f"{path} on {port} never answered {expected}; last: {last!r}")


async def plaintext_refused(port: int) -> bool:
    try:
        await fetch(LOOPBACK, port, "/", authority=HOST, timeout=5)
    except (OSError, EOFError, ValueError):
        return True
    return False


async def xds_updates(envoy: EnvoyProcess) -> tuple[int, int]:
    return (
        await envoy.stat("listener_manager.lds.update_success", 0),
        await envoy.stat("cluster_manager.cds.update_success", 0),
    )


async def test_policies_and_tokens_over_real_traffic(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    envoy_factory: EnvoyFleet,
    upstream_factory: UpstreamPool,
) -> None:
    app = await upstream_factory("app")
    ports = {
        name: free_port() for name in ("egress", "egress_tcp", "intruder", "inbound", "inbound_tcp")
    }
    tokens = Issuer(TOKEN_ISSUER, kid="signing")
    forger = Issuer(TOKEN_ISSUER, kid="signing")  # same kid, another key
    accounts = Issuer()
    jwks = accounts.write_jwks(tmp_path / "accounts.json")
    ca = os.environ["PILOTHOUSE_CA_DIR"]  # tests/conftest.py: made once for the suite
    root = Path(ca) / ca_dir.ROOT_CERT
    overrides = {
        "xds.tls_address": "127.0.0.1:0",
        "sds.server_keys": True,  # these proxies have no node agent
        "ca.dir": ca,
        "auth.jwt_issuers": (f"{ISSUER}={jwks}",),
        "xds.jwks_allowed_hosts": (LOOPBACK,),  # the key server is on loopback: opt in
    }
    async with key_server(tokens) as jwks_uri:
        config = tmp_path / "mesh"
        config.mkdir()
        (config / "mesh.yaml").write_text(mesh(ports, app, jwks_uri))
        async with serve_in_process(monkeypatch, config, overrides) as running:
            tls = running.bound.xds_tls_port
            server = await envoy_factory(
                sidecar("server-1", "server", tls, root, accounts.token(NAMESPACE, "server"))
            )
            client = await envoy_factory(
                sidecar("client-1", "client", tls, root, accounts.token(NAMESPACE, "client"))
            )
            intruder = await envoy_factory(
                sidecar("other-1", "intruder", tls, root, accounts.token(NAMESPACE, "other"))
            )
            for port in ports.values():
                await wait_for_port(port, timeout=15)
            egress, intruding = ports["egress"], ports["intruder"]

            # ALLOW by source principal; DENY on a path beats the ALLOW
            await eventually(egress, 200)
            await eventually(intruding, 403, host=ALT_HOST)
            assert await status(egress, "/admin/users") == 403

            # RequestAuthentication: the key set arrives from the key server
            await eventually(egress, 200, "/secure", token=tokens.token(NAMESPACE, "alice"))
            assert await status(egress, "/secure") == 403
            expired = tokens.token(NAMESPACE, "alice", lifetime=-120)
            assert await status(egress, "/secure", expired) == 401
            forged = forger.token(NAMESPACE, "alice")
            assert await status(egress, "/secure", forged) == 401
            assert await status(egress, "/", forged) == 401  # invalid anywhere is refused
            assert app.requests >= 2

            # TCP: the client's mutual-TLS connection passes, plaintext is closed
            tcp = await fetch(LOOPBACK, ports["egress_tcp"], "/over-tcp", authority=HOST)
            assert tcp.status == 200
            assert await plaintext_refused(ports["inbound_tcp"])
            rbac = await server.stats(r"tcp\.rbac")
            assert rbac.get("tcp.rbac.allowed", 0) >= 1 and rbac.get("tcp.rbac.denied", 0) >= 1

            # a new policy: the server's listeners change, nothing else and no one else
            before = {e: await xds_updates(e) for e in (server, client, intruder)}
            blocked = f"{{ports: ['{ports['inbound']}'], paths: [/blocked]}}"
            write_atomically(
                config / "blocked.yaml",
                "apiVersion: security.istio.io/v1\nkind: AuthorizationPolicy\n"
                f"metadata: {{name: blocked, namespace: {NAMESPACE}}}\n"
                "spec:\n  selector: {matchLabels: {app: server}}\n  action: DENY\n"
                f"  rules: [{{to: [{{operation: {blocked}}}]}}]\n",
            )
            try:
                await eventually(egress, 403, "/blocked")
            except BaseException:
                # what to look at if this ever fails: did the store, the push, Envoy see it
                held = sorted(c.name for c in running.discovery.store.configs(KIND))
                dump = (await server.admin("/config_dump?resource=dynamic_listeners")).body
                print(f"store: {held}; listener has it: {b'policy[blocked]' in dump}")
                print(f"server LDS/CDS updates: {before[server]} -> {await xds_updates(server)}")
                raise
            await quiet(running)  # anything else the change caused has been taken (ACKed)
            after = {e: await xds_updates(e) for e in (server, client, intruder)}
    assert after[server][0] > before[server][0]
    assert after[server][1] == before[server][1]
    assert after[client] == before[client]
    assert after[intruder] == before[intruder]

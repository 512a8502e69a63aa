"""A fetched key set with bad keys never makes Envoy reject a listener; its good keys work.

A real Envoy ingress gateway, an in-process pilothouse, and a key server on loopback
(opted in with ``jwks_allowed_hosts``) whose set holds, in this order: the malformed
RSA key of the attacker test (``"n": "SECRET-DATA-IN-N"``, which Envoy refused with
``invalid local jwks`` and took the whole listener down with), a real RSA key of 1024
bits (below the 2048 pilothouse relays), a real EC P-256 key with an ``x5u`` pointing
at the server's admin port and a member nobody knows, and a key of an unknown type. A
second rule's URI answers the malformed key alone (the attacker test's set): nothing in
it may be relayed, so that rule keeps the key set that verifies nothing.

Envoy must ACK every listener (its ``update_rejected`` counter stays 0 and pilothouse
records no NACK), a token signed by the good key must pass (200), and a token signed by
the dropped 1024-bit key must be refused (401), as must a token that names the
malformed key's ``kid``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import jwt
from aiohttp import web
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from pilothouse.bootstrap.envoy import XdsTransport
from tests.e2e.harness.client import fetch
from tests.e2e.harness.control_plane import FAST, ControlPlane
from tests.e2e.harness.fleet import EnvoyFleet
from tests.e2e.harness.ports import LOOPBACK, free_port
from tests.e2e.harness.upstreams import UpstreamPool
from tests.e2e.traffic_mesh import (
    GATEWAY_LABELS,
    fqdn,
    gateway,
    render,
    service,
    start_gateway,
    to,
    virtual_service,
)

NS = "keys"
ISSUER = "https://issuer.test"
OTHER_ISSUER = "https://other.test"


class KeyServer:
    """The issuer: a good EC key, a weak RSA key, and junk, all in one published set."""

    def __init__(self) -> None:
        self.good = ec.generate_private_key(ec.SECP256R1())
        self.weak = rsa.generate_private_key(65537, 1024)
        self.hits = 0

    def jwks(self) -> dict[str, Any]:
        good = json.loads(jwt.algorithms.ECAlgorithm.to_jwk(self.good.public_key()))
        good.update(kid="good", alg="ES256", x5u="http://127.0.0.1:15014/debug/adsz", z=1)
        weak = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.weak.public_key()))
        weak.update(kid="weak", alg="RS256")
        malformed = {"kty": "RSA", "n": "SECRET-DATA-IN-N", "e": "AQAB", "kid": "x"}
        return {"keys": [malformed, weak, good, {"kty": "XYZ", "kid": "odd"}]}

    def token(self, key: Any, kid: str, algorithm: str, issuer: str = ISSUER) -> str:
        now = int(time.time())
        claims = {"iss": issuer, "sub": "alice", "iat": now, "exp": now + 600}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # PyJWT warns about the 1024-bit key: on purpose
            return jwt.encode(claims, key, algorithm=algorithm, headers={"kid": kid})


@asynccontextmanager
async def key_server(issuer: KeyServer) -> AsyncIterator[str]:
    async def keys(_request: web.Request) -> web.Response:
        issuer.hits += 1
        return web.json_response(issuer.jwks())

    async def only_bad(_request: web.Request) -> web.Response:
        return web.json_response({"keys": [issuer.jwks()["keys"][0]]})

    app = web.Application()
    app.router.add_get("/jwks", keys)
    app.router.add_get("/only-bad", only_bad)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, LOOPBACK, 0).start()
    try:
        yield f"http://{LOOPBACK}:{runner.addresses[0][1]}/jwks"
    finally:
        await runner.cleanup()


def request_authentication(jwks_uri: str) -> dict[str, Any]:
    return {
        "apiVersion": "security.istio.io/v1",
        "kind": "RequestAuthentication",
        "metadata": {"name": "jwt", "namespace": NS},
        "spec": {
            "selector": {"matchLabels": dict(GATEWAY_LABELS)},
            "jwtRules": [
                {"issuer": ISSUER, "jwksUri": jwks_uri},
                {"issuer": OTHER_ISSUER, "jwksUri": jwks_uri.replace("/jwks", "/only-bad")},
            ],
        },
    }


async def status(port: int, token: str | None) -> int:
    headers = {"authorization": f"Bearer {token}"} if token else {}
    return (await fetch(LOOPBACK, port, "/", headers=headers, timeout=5)).status


async def test_bad_fetched_keys_are_dropped_and_envoy_keeps_its_listener(
    envoy_factory: EnvoyFleet, upstream_factory: UpstreamPool
) -> None:
    app = await upstream_factory("web")
    listen = free_port()
    issuer = KeyServer()
    async with key_server(issuer) as jwks_uri:
        plane = ControlPlane(settings=dataclasses.replace(FAST, jwks_allowed_hosts=(LOOPBACK,)))
        plane.apply_yaml(
            render(
                service("web", NS, 8080, [(app, {"app": "web"})]),
                gateway(NS, listen),
                virtual_service("web", NS, [{"route": [to(fqdn("web", NS))]}]),
                request_authentication(jwks_uri),
            )
        )
        await plane.start()
        try:
            envoy = await start_gateway(envoy_factory, plane, NS, listen, XdsTransport.SOTW)
            good = issuer.token(issuer.good, "good", "ES256")
            deadline = time.monotonic() + 20
            while (seen := await status(listen, good)) != 200:
                assert time.monotonic() < deadline, f"the good key's token still gets {seen}"
                await asyncio.sleep(0.2)
            assert issuer.hits >= 1
            assert await status(listen, None) == 200  # no token: nothing requires one
            weak = issuer.token(issuer.weak, "weak", "RS256")
            assert await status(listen, weak) == 401
            other = rsa.generate_private_key(65537, 2048)
            assert await status(listen, issuer.token(other, "x", "RS256")) == 401
            forged = issuer.token(other, "x", "RS256", issuer=OTHER_ISSUER)
            assert await status(listen, forged) == 401
            assert await envoy.stat("listener_manager.lds.update_rejected", 0) == 0
            assert await envoy.stat("listener_manager.lds.update_success", 0) >= 2
            assert plane.discovery is not None
            assert not plane.discovery.stats.rejects, plane.discovery.stats.rejects
            dump = (await envoy.admin("/config_dump?resource=dynamic_listeners")).body
            assert b"SECRET-DATA-IN-N" not in dump and b"x5u" not in dump
            assert b'\\"kid\\":\\"good\\"' in dump or b'"kid":"good"' in dump
        finally:
            await plane.stop()

"""JwksResolver against a real local HTTP server: fetch on first lookup, refresh, keep the
last good key set through failures, relay public key members only."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web

from pilothouse.backoff import Backoff
from pilothouse.security.jwks import JwksError, JwksResolver, public_key_set

RSA_PUBLIC = {
    "kty": "RSA",
    "kid": "one",
    "n": "sXchDaQebHnPiGvyDOAT4saGEUetSyo9MKLOoWFsueri",
    "e": "AQAB",
}
RSA_PRIVATE = {**RSA_PUBLIC, "kid": "two", "d": "secret", "p": "x", "q": "y"}


class Issuer:
    """A JWKS endpoint whose answer the test changes."""

    def __init__(self) -> None:
        self.status = 200
        self.body: Any = {"keys": [RSA_PUBLIC]}
        self.hits = 0

    async def handle(self, _request: web.Request) -> web.Response:
        self.hits += 1
        text = self.body if isinstance(self.body, str) else json.dumps(self.body)
        return web.Response(status=self.status, text=text, content_type="application/json")


@pytest.fixture
async def issuer() -> AsyncIterator[tuple[Issuer, str]]:
    served = Issuer()
    app = web.Application()
    app.router.add_get("/jwks", served.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield served, f"http://127.0.0.1:{port}/jwks"
    finally:
        await runner.cleanup()


async def _until(condition: Any, timeout: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "condition not met in time"
        await asyncio.sleep(0.02)


async def test_fetch_refresh_and_last_good(issuer: tuple[Issuer, str]) -> None:
    served, uri = issuer
    changed: list[str] = []
    resolver = JwksResolver(changed.append, refresh=0.2, backoff=Backoff(0.05, 0.1))
    task = asyncio.create_task(resolver.run())
    try:
        # not fetched yet: asked for, and meanwhile a key set that verifies nothing
        placeholder = json.loads(resolver(uri))
        assert [k["kid"] for k in placeholder["keys"]] == ["pilothouse-unfetched"]
        assert "d" not in placeholder["keys"][0]
        await _until(lambda: changed == [uri])
        held = resolver(uri)
        assert json.loads(held) == {"keys": [RSA_PUBLIC]}

        # the issuer fails: the last good key set stays, no change is reported
        served.status = 500
        hits = served.hits
        await _until(lambda: served.hits >= hits + 2)
        assert resolver(uri) == held and changed == [uri]

        # the issuer rotates its keys: the refresh picks them up and reports the change
        served.status = 200
        served.body = {"keys": [RSA_PUBLIC, RSA_PRIVATE]}
        await _until(lambda: len(changed) == 2)
        rotated = json.loads(resolver(uri))
        assert [k["kid"] for k in rotated["keys"]] == ["one", "two"]
        assert all("d" not in k and "p" not in k for k in rotated["keys"])
    finally:
        resolver.close()
        await asyncio.wait_for(task, 5)


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (b"<html>internal page</html>", "not JSON"),
        (b'{"issuer": "x"}', '"keys" list'),
        (b'{"keys": [{"kty": "oct", "k": "c2VjcmV0"}]}', "no usable public key"),
        (b'{"keys": [{"kty": "RSA", "e": "AQAB"}]}', "no usable public key"),
    ],
)
def test_only_key_sets_with_public_keys_are_kept(body: bytes, problem: str) -> None:
    with pytest.raises(JwksError, match=problem):
        public_key_set(body)


async def test_a_page_that_is_not_a_key_set_is_never_kept(issuer: tuple[Issuer, str]) -> None:
    served, uri = issuer
    served.body = "<html>admin console</html>"
    resolver = JwksResolver(lambda _uri: None, backoff=Backoff(0.05, 0.1))
    task = asyncio.create_task(resolver.run())
    try:
        assert resolver(uri) == resolver.placeholder
        await _until(lambda: served.hits >= 2)
        assert resolver.fetched(uri) is None and resolver(uri) == resolver.placeholder
    finally:
        resolver.close()
        await asyncio.wait_for(task, 5)


async def test_fetching_off_makes_no_request_and_refuses_tokens(
    issuer: tuple[Issuer, str], caplog: pytest.LogCaptureFixture
) -> None:
    """PILOTHOUSE_JWKS_FETCH=false: the issuer is never contacted, the rule gets the key
    set that verifies nothing, and the log says why, once."""
    served, uri = issuer
    changed: list[str] = []
    resolver = JwksResolver(changed.append, refresh=0.1, fetch=False)
    task = asyncio.create_task(resolver.run())
    try:
        with caplog.at_level("WARNING", logger="pilothouse.jwks"):
            first, second = resolver(uri), resolver(uri)
        assert first == second == resolver.placeholder
        await asyncio.sleep(0.4)  # several refresh periods
        assert served.hits == 0 and changed == [] and resolver.fetched(uri) is None
        warnings = [r.getMessage() for r in caplog.records if "fetching is off" in r.getMessage()]
        assert len(warnings) == 1 and uri in warnings[0]
    finally:
        resolver.close()
        await asyncio.wait_for(task, 5)

"""JwksResolver against a real local HTTP server: fetch on first lookup, refresh, keep the
last good key set through failures, relay checked keys' public members only.

The key server listens on loopback, which the fetcher refuses by default: each test opts
it in (``JwksAddressPolicy(["127.0.0.1"])``) unless it tests that refusal."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web

from pilothouse.backoff import Backoff
from pilothouse.security.jwks import JwksError, JwksResolver, checked_key_set
from pilothouse.security.jwks_addresses import JwksAddressPolicy
from pilothouse.security.jwks_fetch import FetchFailed, fetch_jwks
from tests.unit.config.test_json_web_key import rsa_key

RSA_PUBLIC = rsa_key(kid="one")
RSA_PRIVATE = {**rsa_key(kid="two"), "d": "secret", "p": "x", "q": "y"}
LOOPBACK_ALLOWED = JwksAddressPolicy(["127.0.0.1"])


class Issuer:
    """A JWKS endpoint whose answer the test changes."""

    def __init__(self) -> None:
        self.status = 200
        self.body: Any = {"keys": [RSA_PUBLIC]}
        self.hits = 0
        self.paths: list[str] = []
        self.redirects: dict[str, str] = {}

    async def handle(self, request: web.Request) -> web.Response:
        self.hits += 1
        self.paths.append(request.path)
        if request.path in self.redirects:
            raise web.HTTPFound(self.redirects[request.path])
        text = self.body if isinstance(self.body, str) else json.dumps(self.body)
        return web.Response(status=self.status, text=text, content_type="application/json")


@pytest.fixture
async def issuer() -> AsyncIterator[tuple[Issuer, str]]:
    served = Issuer()
    app = web.Application()
    app.router.add_get("/{path}", served.handle)
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
    resolver = JwksResolver(
        changed.append, refresh=0.2, backoff=Backoff(0.05, 0.1), policy=LOOPBACK_ALLOWED
    )
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
        public = {"kty", "kid", "n", "e"}
        assert rotated["keys"][1] == {k: v for k, v in RSA_PRIVATE.items() if k in public}
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
        (b'{"keys": [{"kty":"RSA","n":"SECRET-DATA-IN-N","e":"AQAB","kid":"x"}]}', "modulus"),
        (b'{"keys": []}', "the set is empty"),
    ],
)
def test_only_key_sets_with_public_keys_are_kept(body: bytes, problem: str) -> None:
    with pytest.raises(JwksError, match=problem):
        checked_key_set(body)


async def test_a_page_that_is_not_a_key_set_is_never_kept(issuer: tuple[Issuer, str]) -> None:
    served, uri = issuer
    served.body = "<html>admin console</html>"
    resolver = JwksResolver(lambda _uri: None, backoff=Backoff(0.05, 0.1), policy=LOOPBACK_ALLOWED)
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


async def _running(resolver: JwksResolver) -> asyncio.Task[None]:
    return asyncio.create_task(resolver.run())


async def test_loopback_is_refused_by_default_and_logged_once(
    issuer: tuple[Issuer, str], caplog: pytest.LogCaptureFixture
) -> None:
    """The server's own loopback (where its admin port is) is never contacted without an
    opt-in: the rule keeps the key set that verifies nothing, the log names the rule."""
    served, uri = issuer
    resolver = JwksResolver(
        lambda _uri: None,
        backoff=Backoff(0.02, 0.05),
        named_by=lambda _uri: ["RequestAuthentication shop/jwt"],
    )
    task = await _running(resolver)
    try:
        with caplog.at_level("WARNING", logger="pilothouse.jwks"):
            assert resolver(uri) == resolver.placeholder
            await asyncio.sleep(0.5)  # many retries
        assert served.hits == 0 and resolver.fetched(uri) is None
        told = [r.getMessage() for r in caplog.records if "is not fetched" in r.getMessage()]
        assert len(told) == 1, told
        assert "127.0.0.1 is loopback" in told[0] and "RequestAuthentication shop/jwt" in told[0]
        assert "PILOTHOUSE_JWKS_ALLOWED_HOSTS" in told[0]
    finally:
        resolver.close()
        await asyncio.wait_for(task, 5)


async def test_the_checked_address_is_the_one_connected_to(issuer: tuple[Issuer, str]) -> None:
    """DNS rebinding: the name resolves once per fetch, and the fetch connects to that
    answer. The second answer (a private address) is refused; the last good set stays.
    The names resolve through a table (no DNS server the test controls can run here):
    had the fetch resolved the name again itself, ``keys.test`` would not resolve."""
    served, uri = issuer
    port = uri.split(":")[2].split("/")[0]
    answers = [["127.0.0.1"], ["10.9.8.7"]]
    asked: list[str] = []

    async def resolve(host: str, _port: int) -> list[str]:
        asked.append(host)
        return answers[0] if len(asked) == 1 else answers[1]

    policy = JwksAddressPolicy(["127.0.0.1"], resolve=resolve)
    changed: list[str] = []
    resolver = JwksResolver(changed.append, refresh=0.1, backoff=Backoff(0.02, 0.05), policy=policy)
    named = f"http://keys.test:{port}/jwks"
    task = await _running(resolver)
    try:
        resolver(named)
        await _until(lambda: changed == [named])
        assert asked[0] == "keys.test" and served.hits == 1
        held = resolver(named)
        await _until(lambda: len(asked) >= 3)
        assert served.hits == 1 and resolver(named) == held
    finally:
        resolver.close()
        await asyncio.wait_for(task, 5)


async def test_every_redirect_is_checked(issuer: tuple[Issuer, str]) -> None:
    """A redirect to an allowed place is followed; one to a refused place is not."""
    served, uri = issuer
    base = uri.rsplit("/", 1)[0]
    port = base.rsplit(":", 1)[1]
    served.redirects = {"/hop": "/jwks", "/escape": f"http://127.0.0.2:{port}/jwks"}
    changed: list[str] = []
    resolver = JwksResolver(changed.append, backoff=Backoff(0.02, 0.05), policy=LOOPBACK_ALLOWED)
    task = await _running(resolver)
    try:
        resolver(f"{base}/hop")
        resolver(f"{base}/escape")
        await _until(lambda: changed == [f"{base}/hop"] and served.hits >= 3)
        assert json.loads(resolver(f"{base}/hop")) == {"keys": [RSA_PUBLIC]}
        assert resolver.fetched(f"{base}/escape") is None
        assert served.paths.count("/jwks") == 1  # through /hop only
    finally:
        resolver.close()
        await asyncio.wait_for(task, 5)


async def test_bad_keys_are_dropped_and_the_good_ones_relayed(
    issuer: tuple[Issuer, str], caplog: pytest.LogCaptureFixture
) -> None:
    served, uri = issuer
    bad = {"kty": "RSA", "n": "SECRET-DATA-IN-N", "e": "AQAB", "kid": "x"}
    served.body = {"keys": [bad, {**RSA_PUBLIC, "x5u": "http://127.0.0.1:15014/x"}]}
    changed: list[str] = []
    resolver = JwksResolver(
        changed.append,
        refresh=0.05,
        policy=LOOPBACK_ALLOWED,
        named_by=lambda _uri: ["RequestAuthentication shop/jwt"],
    )
    task = await _running(resolver)
    try:
        with caplog.at_level("WARNING", logger="pilothouse.jwks"):
            resolver(uri)
            await _until(lambda: served.hits >= 4)  # refreshed, same answer
        assert json.loads(resolver(uri)) == {"keys": [RSA_PUBLIC]}
        told = [r.getMessage() for r in caplog.records if "dropped" in r.getMessage()]
        assert len(told) == 1, told
        assert "kid 'x'" in told[0] and "modulus" in told[0] and "shop/jwt" in told[0]
        assert "SECRET" not in told[0]
    finally:
        resolver.close()
        await asyncio.wait_for(task, 5)


async def test_a_redirect_loop_ends(issuer: tuple[Issuer, str]) -> None:
    served, uri = issuer
    base = uri.rsplit("/", 1)[0]
    served.redirects = {"/loop": "/loop"}
    with pytest.raises(FetchFailed, match="more than 5 redirects"):
        await fetch_jwks(f"{base}/loop", LOOPBACK_ALLOWED, timeout=5, max_bytes=1000)
    assert served.paths == ["/loop"] * 6

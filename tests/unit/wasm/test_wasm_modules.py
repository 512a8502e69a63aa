"""Fetching WasmPlugin modules: file:// and http(s)://, checked (Wasm magic, sha256),
kept by digest, refused where the JWKS address rules refuse, counted by result."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from aiohttp import web

from pilothouse.backoff import Backoff
from pilothouse.security.jwks_addresses import JwksAddressPolicy
from pilothouse.security.wasm_modules import (
    CHECKSUM_MISMATCH,
    NOT_WASM,
    OK,
    REFUSED,
    WasmModules,
)

from .plugins import MODULE, MODULE_SHA

LOOPBACK_ALLOWED = JwksAddressPolicy(["127.0.0.1"])


async def until(condition: Callable[[], object], timeout: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "condition not met in time"
        await asyncio.sleep(0.02)


@pytest.fixture
async def modules() -> AsyncIterator[tuple[WasmModules, list[str]]]:
    arrived: list[str] = []
    found = WasmModules(arrived.append, backoff=Backoff(0.05, 0.1), policy=LOOPBACK_ALLOWED)
    task = asyncio.create_task(found.run())
    try:
        yield found, arrived
    finally:
        found.close()
        await asyncio.wait_for(task, 5)


@pytest.fixture
async def server() -> AsyncIterator[tuple[dict[str, bytes], str, list[str]]]:
    bodies: dict[str, bytes] = {}
    hits: list[str] = []

    async def handle(request: web.Request) -> web.Response:
        hits.append(request.path)
        body = bodies.get(request.path)
        if body is None:
            return web.Response(status=404)
        return web.Response(body=body, content_type="application/wasm")

    app = web.Application()
    app.router.add_get("/{path}", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield bodies, f"http://127.0.0.1:{runner.addresses[0][1]}", hits
    finally:
        await runner.cleanup()


async def test_a_file_module_is_read_checked_and_kept(
    modules: tuple[WasmModules, list[str]], tmp_path: Path
) -> None:
    found, arrived = modules
    path = tmp_path / "m.wasm"
    path.write_bytes(MODULE)
    url = f"file://{path}"
    assert found(url, MODULE_SHA) is None  # asked for; not there yet
    await until(lambda: arrived)
    module = found(url, MODULE_SHA)
    assert module is not None and module.body == MODULE and module.digest == MODULE_SHA
    assert arrived == [url] and found.fetches[OK] == 1
    path.unlink()  # fetched once: still served from memory
    assert found(url, MODULE_SHA) == module


async def test_a_checksum_mismatch_is_not_kept_and_is_counted(
    modules: tuple[WasmModules, list[str]], tmp_path: Path
) -> None:
    found, arrived = modules
    path = tmp_path / "m.wasm"
    path.write_bytes(MODULE)
    wrong = "0" * 64
    assert found(f"file://{path}", wrong) is None
    await until(lambda: found.fetches[CHECKSUM_MISMATCH] >= 2)  # tried again, with backoff
    assert found(f"file://{path}", wrong) is None and not arrived
    (reason,) = found.problems.values()
    assert reason.startswith("checksum_mismatch") and MODULE_SHA in reason


async def test_not_wasm_is_refused(modules: tuple[WasmModules, list[str]], tmp_path: Path) -> None:
    found, _ = modules
    path = tmp_path / "key.pem"
    path.write_text("-----BEGIN PRIVATE KEY-----\n")
    assert found(f"file://{path}", "") is None
    await until(lambda: found.fetches[NOT_WASM])
    assert found(f"file://{path}", "") is None


async def test_http_modules_are_fetched_once_and_shared_by_digest(
    modules: tuple[WasmModules, list[str]], server: tuple[dict[str, bytes], str, list[str]]
) -> None:
    found, arrived = modules
    bodies, base, hits = server
    bodies["/a.wasm"] = MODULE
    assert found(f"{base}/a.wasm", MODULE_SHA) is None
    await until(lambda: arrived)
    assert found(f"{base}/a.wasm", MODULE_SHA) is not None
    # another URL naming the same digest is not fetched at all
    assert found(f"{base}/elsewhere.wasm", MODULE_SHA) is not None
    other = MODULE + b"\0"
    bodies["/b.wasm"] = other
    assert found(f"{base}/b.wasm", "") is None
    await until(lambda: len(arrived) == 2)
    module = found(f"{base}/b.wasm", "")
    assert module is not None and module.digest == hashlib.sha256(other).hexdigest()
    assert hits == ["/a.wasm", "/b.wasm"]


async def test_an_address_the_policy_refuses_is_never_fetched(
    server: tuple[dict[str, bytes], str, list[str]],
) -> None:
    bodies, base, hits = server
    bodies["/a.wasm"] = MODULE
    found = WasmModules(lambda url: None, backoff=Backoff(0.05, 0.1))  # default policy
    task = asyncio.create_task(found.run())
    try:
        assert found(f"{base}/a.wasm", MODULE_SHA) is None
        await until(lambda: found.fetches[REFUSED])
        assert not hits
    finally:
        found.close()
        await asyncio.wait_for(task, 5)

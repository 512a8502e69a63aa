"""The containment middleware on a real aiohttp server (127.0.0.1, a free port)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

import aiohttp
import pytest
from aiohttp import web

from pilothouse.boundary.contain import INTERNAL_ERROR, containment, json_error, text_error

LOG = logging.getLogger("pilothouse.test.contain")


async def explode(request: web.Request) -> web.Response:
    raise ZeroDivisionError("division by zero in a handler")


async def forbid(request: web.Request) -> web.Response:
    raise web.HTTPForbidden(text="ours to say\n")


async def echo(request: web.Request) -> web.Response:
    return web.Response(body=await request.read())


@pytest.fixture
async def served() -> AsyncIterator[tuple[str, list[int]]]:
    faults: list[int] = []
    app = web.Application(
        middlewares=[containment(json_error, LOG, on_fault=lambda: faults.append(1))]
    )
    app.router.add_get("/explode", explode)
    app.router.add_get("/forbid", forbid)
    app.router.add_post("/echo", echo)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"http://127.0.0.1:{port}", faults
    finally:
        await runner.cleanup()


async def test_an_exception_is_a_generic_500_logged_once_and_the_server_serves_on(
    served: tuple[str, list[int]], caplog: pytest.LogCaptureFixture
) -> None:
    base, faults = served
    async with aiohttp.ClientSession() as session:
        with caplog.at_level(logging.ERROR):
            async with session.get(f"{base}/explode") as response:
                assert response.status == 500
                assert await response.json() == {"error": INTERNAL_ERROR, "status": 500}
        logged = [r for r in caplog.records if r.exc_info]
        assert len(logged) == 1 and logged[0].exc_info is not None
        assert logged[0].exc_info[0] is ZeroDivisionError
        assert faults == [1]
        async with session.post(f"{base}/echo", data=b"still here") as response:
            assert response.status == 200 and await response.read() == b"still here"


async def test_http_exceptions_raised_on_purpose_pass_through(
    served: tuple[str, list[int]],
) -> None:
    base, faults = served
    async with aiohttp.ClientSession() as session, session.get(f"{base}/forbid") as response:
        assert response.status == 403 and await response.text() == "ours to say\n"
    assert faults == []


async def test_a_client_that_stops_sending_is_not_a_fault(
    served: tuple[str, list[int]], caplog: pytest.LogCaptureFixture
) -> None:
    base, faults = served
    port = int(base.rsplit(":", 1)[1])
    with caplog.at_level(logging.DEBUG, logger=LOG.name):
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nonly ten.")
        await writer.drain()
        writer.close()  # 91 bytes short
        for _ in range(100):
            if caplog.records:
                break
            await asyncio.sleep(0.02)
    assert [r.getMessage() for r in caplog.records] == ["request body not read whole"]
    assert faults == []
    async with aiohttp.ClientSession() as session, session.post(f"{base}/echo", data=b"x") as r:
        assert r.status == 200


def test_the_text_shape() -> None:
    response = text_error(404, "no such path: /x")
    assert response.status == 404 and response.text == "no such path: /x\n"

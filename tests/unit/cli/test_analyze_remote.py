"""``pilothouse analyze --admin``: a server's findings read through the shared admin
client, printed and judged as local ones; a server's refusal is shown in its own words.

The server is a stand-in aiohttp app serving ``/debug/analyzez`` over loopback (a real
``serve`` answers there only once it has analysed, and never with the errors needed
here; test_serve_analysis reads a real one).
"""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from pilothouse.cli.main import main

FOUND = {
    "messages": [
        {
            "code": "IST0101",
            "level": "Error",
            "message": 'Referenced host not found: "detials"',
            "origin": "VirtualService bookinfo/broken",
            "reference": "routing.yaml:12",
        }
    ]
}


async def analyze_against(status: int, body: Any, *flags: str) -> tuple[int, str]:
    """``analyze --admin`` against a server answering ``body`` with ``status``: the exit
    status and the address given."""

    async def analyzez(request: web.Request) -> web.Response:
        return web.json_response(body, status=status)

    app = web.Application()
    app.router.add_get("/debug/analyzez", analyzez)
    async with TestServer(app, host="127.0.0.1") as server:
        admin = f"127.0.0.1:{server.port}"
        code = await asyncio.to_thread(main, ["analyze", "--admin", admin, *flags])
    return code, admin


async def test_the_servers_findings_are_judged_as_local_ones(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, admin = await analyze_against(200, FOUND)
    printed = capsys.readouterr().out
    assert code == 79
    assert "Error [IST0101] (VirtualService bookinfo/broken routing.yaml:12)" in printed
    assert "Referenced host not found" in printed
    suppress = ["-S", "IST0101=VirtualService bookinfo/broken"]
    code, admin = await analyze_against(200, FOUND, *suppress)
    assert code == 0
    assert f"http://{admin}/debug/analyzez" in capsys.readouterr().err  # no issues in it


async def test_a_refusal_is_shown_in_the_servers_words(
    capsys: pytest.CaptureFixture[str],
) -> None:
    refused = {"error": "pilothouse is not ready: config has not synced yet", "status": 503}
    code, admin = await analyze_against(503, refused)
    assert code == 2
    assert capsys.readouterr().err == (
        f"pilothouse analyze: cannot read http://{admin}/debug/analyzez: http://{admin}: "
        "pilothouse is not ready: config has not synced yet\n"
    )
    code, admin = await analyze_against(200, {"nothing": []})
    assert code == 2
    assert capsys.readouterr().err == (
        f"pilothouse analyze: cannot read http://{admin}/debug/analyzez: KeyError('messages')\n"
    )


def test_a_bad_address_or_no_server_is_said_so(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", "--admin", "127.0.0.1:15014/debug"]) == 2
    assert "give the address only, without a path" in capsys.readouterr().err
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))  # bound, not listening: connections are refused
        port = taken.getsockname()[1]
        assert main(["analyze", "--admin", f"127.0.0.1:{port}"]) == 2
    assert "cannot reach" in capsys.readouterr().err

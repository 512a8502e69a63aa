"""host_check: the one ``Host`` check of the admin port, ControlZ and the webhook —
421 for a name that is not this server's, 400 without a ``Host``, else the handler."""

from __future__ import annotations

from unittest import mock

import pytest
from aiohttp import web
from aiohttp.test_utils import make_mocked_request

from pilothouse.boundary.contain import text_error
from pilothouse.boundary.host_check import host_check
from pilothouse.boundary.host_names import ServerNames

NAMES = ServerNames.of_this_host(extra=["istiod.istio-system.svc"])


async def answer(headers: dict[str, str], **wording: str) -> tuple[int, str, list[str]]:
    """The status and text ``host_check`` gives a request with ``headers``, and the
    paths its handler saw."""
    reached: list[str] = []

    async def handler(request: web.Request) -> web.StreamResponse:
        reached.append(request.path)
        return web.Response(text="handled")

    transport = mock.Mock()
    transport.get_extra_info.side_effect = lambda name, default=None: (
        ("127.0.0.1", 15014) if name == "sockname" else default
    )
    request = make_mocked_request("GET", "/ready", headers=headers, transport=transport)
    check = host_check(lambda: NAMES, text_error, **wording)
    response = await check(request, handler)
    assert isinstance(response, web.Response)
    return response.status, response.text or "", reached


@pytest.mark.parametrize(
    "host", ["localhost:15014", "127.0.0.1", "[::1]:15014", "istiod.istio-system.svc"]
)
async def test_a_name_of_this_server_reaches_the_handler(host: str) -> None:
    assert await answer({"Host": host}) == (200, "handled", ["/ready"])


@pytest.mark.parametrize("host", ["evil.example", "attacker.com:15014", "10.9.9.9:15014"])
async def test_another_name_is_misdirected(host: str) -> None:
    status, text, reached = await answer({"Host": host})
    assert (status, reached) == (421, [])
    assert text.startswith(f"Host {host!r} is not a name of this server; use localhost")
    assert "PILOTHOUSE_ADMIN_HOST_NAMES" in text and "DNS rebinding" in text


@pytest.mark.parametrize("headers", [{}, {"Host": ""}, {"Host": "  "}])
async def test_no_host_is_a_bad_request(headers: dict[str, str]) -> None:
    assert await answer(headers) == (400, "a Host header is required\n", [])


async def test_each_server_says_how_to_reach_it() -> None:
    status, text, _ = await answer({"Host": "evil.example"}, server="webhook", advice="ask")
    assert (status, text) == (421, "Host 'evil.example' is not a name of this webhook; ask\n")

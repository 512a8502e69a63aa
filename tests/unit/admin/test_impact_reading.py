"""``POST /debug/impact`` reads and validates its objects, and writes its answer, in a
worker thread, not on the event loop that serves the proxies, and still names each
problem precisely.

The handler runs in a real aiohttp server over loopback; the discovery server behind
it is a stand-in (only ``ready`` and ``impact``: the prediction itself is
test_impact_serve's, against a real ``serve``), which records what it was handed.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any, cast

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from pilothouse.admin import impact as impact_module
from pilothouse.admin.impact import MAX_OBJECTS, PATH, impact_handler
from pilothouse.config.load import Loader, LoadResult
from pilothouse.config.model import Config
from pilothouse.xds.server.debug_view import DebugView

VIRTUAL_SERVICE = """\
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {{name: web-{n}}}
spec:
  hosts: [web.shop.svc.cluster.local]
  http:
  - timeout: {timeout}
    route: [{{destination: {{host: web.shop.svc.cluster.local}}}}]
"""


class Discovery:
    """Ready, and answering every prediction with the objects it was handed."""

    def __init__(self) -> None:
        self.handed: list[Config] = []

    def ready(self) -> bool:
        return True

    async def impact(self, candidates: Sequence[Config], timeout: float) -> dict[str, Any]:
        self.handed = list(candidates)
        return {"changed": [f"{c.kind}/{c.namespace}/{c.name}" for c in candidates]}


async def post(discovery: Discovery, body: str) -> tuple[int, dict[str, Any]]:
    app = web.Application()
    app.router.add_routes([impact_handler(cast(DebugView, discovery))])
    async with (
        TestServer(app, host="127.0.0.1") as server,
        aiohttp.ClientSession() as session,
        session.post(server.make_url(f"{PATH}?namespace=shop"), data=body) as answer,
    ):
        return answer.status, await answer.json()


async def test_the_objects_are_read_and_answered_off_the_event_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    readers: list[int] = []
    real = Loader.load_text

    def recording(self: Loader, text: str, file: str) -> LoadResult:
        readers.append(threading.get_ident())
        return real(self, text, file)

    monkeypatch.setattr(impact_module.Loader, "load_text", recording)
    writers: list[int] = []
    real_answer = impact_module.json_answer

    def writing(data: Any, status: int = 200) -> web.Response:
        writers.append(threading.get_ident())
        return real_answer(data, status)

    monkeypatch.setattr(impact_module, "json_answer", writing)
    discovery = Discovery()
    body = "---\n".join(VIRTUAL_SERVICE.format(n=n, timeout="3s") for n in range(3))
    status, answer = await post(discovery, body)
    assert status == 200, answer
    assert answer["changed"] == [f"VirtualService/shop/web-{n}" for n in range(3)]
    assert readers and threading.get_ident() not in readers  # the loop's thread never read
    assert writers and threading.get_ident() not in writers  # ...nor wrote the answer


async def test_problems_keep_their_line_and_nothing_is_predicted() -> None:
    discovery = Discovery()
    good = VIRTUAL_SERVICE.format(n=0, timeout="3s")
    bad = VIRTUAL_SERVICE.format(n=1, timeout="soon")
    status, answer = await post(discovery, f"{good}---\n{bad}")
    assert status == 400
    assert answer["error"].startswith("1 error(s), nothing predicted: request:")
    line = int(answer["error"].split("request:")[1].split(":")[0])
    assert f"{good}---\n{bad}".splitlines()[line - 1].strip() == "- timeout: soon"
    assert discovery.handed == []
    status, answer = await post(discovery, "")
    assert (status, answer["error"]) == (400, "no Istio objects in the request body")
    many = "---\n".join(VIRTUAL_SERVICE.format(n=n, timeout="3s") for n in range(MAX_OBJECTS + 1))
    status, answer = await post(discovery, many)
    assert (status, answer["error"]) == (400, "1001 objects: at most 1000 per request")
    assert discovery.handed == []

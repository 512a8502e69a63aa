"""``POST /debug/impact`` on ``serve --workers``, and the table ``analyze --impact`` prints.

Two admin apps stand in for two workers (the set-up of test_worker_debug), each
answering the impact for its own proxy only when handed the very objects sent: the
request on one's shared port must hand the same body to the other worker too, and
merge both proxies with the figures summed. The table is then rendered from that
merged answer.
"""

from __future__ import annotations

import io
import json
import multiprocessing
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from pilothouse.admin.server import AdminServer
from pilothouse.cli.impact_merge import merged
from pilothouse.cli.impact_report import render, rows
from pilothouse.cli.worker_board import WorkerBoard
from pilothouse.cli.worker_debug import PRIVATE_HOST, whole_answers

BODY = "apiVersion: networking.istio.io/v1\nkind: VirtualService\n"


def answer(proxy: str, changed: int) -> dict[str, Any]:
    diff = {"added": [], "changed": ["8080"] * changed, "removed": []}
    counts = {"addedCount": 0, "changedCount": changed, "removedCount": 0}
    return {
        "changed": ["VirtualService/shop/web"],
        "unchanged": [],
        "connected": 3,
        "pushed": 1,
        "complete": True,
        "skipped": 0,
        "seconds": 0.5 if changed else 0.25,
        "proxies": [{"proxy": proxy, "nodeID": proxy, "types": {"RDS": {**diff, **counts}}}],
        "failed": [],
    }


def worker_app(board: WorkerBoard, index: int) -> web.Application:
    async def impact(request: web.Request) -> web.Response:
        body = await request.text()
        if body != BODY:  # a worker handed nothing (or something else) has no answer
            return web.json_response({"error": f"got {body!r}"}, status=400)
        return web.json_response(answer(f"p{index}.ns", 1 - index))

    app = web.Application(middlewares=[whole_answers(board, index)])
    app.router.add_post("/debug/impact", impact)
    return app


@pytest.fixture
async def workers() -> AsyncIterator[list[AdminServer]]:
    board = WorkerBoard(2, multiprocessing.get_context("fork"))
    servers = [AdminServer(worker_app(board, i)) for i in range(2)]
    for index, server in enumerate(servers):
        await server.start(PRIVATE_HOST, 0)
        board.publish_admin_port(index, await server.listen_also(PRIVATE_HOST))
    yield servers
    for server in servers:
        await server.stop()


async def test_every_worker_is_handed_the_objects_and_the_answers_merge(
    workers: list[AdminServer],
) -> None:
    url = f"http://{PRIVATE_HOST}:{workers[1].port}/debug/impact"
    async with aiohttp.ClientSession() as session, session.post(url, data=BODY) as response:
        assert response.status == 200
        body = json.loads(await response.text())
    assert [p["proxy"] for p in body["proxies"]] == ["p0.ns", "p1.ns"]
    assert {p["proxy"]: p["source"] for p in body["proxies"]} == {
        "p0.ns": "worker 0",
        "p1.ns": "worker 1",
    }
    assert body["connected"] == 6 and body["pushed"] == 2 and body["complete"]
    assert body["seconds"] == 0.5

    out = io.StringIO()
    render(body, "table", out)
    assert out.getvalue().splitlines() == [
        "2 of 6 connected proxies would be pushed, 1 with resources that change",
        "PROXY  TYPES  ADDED  CHANGED  REMOVED",
        "p0.ns  RDS    0      1        0",
        "p1.ns  -      0      0        0",
    ]


def test_an_incomplete_answer_says_so_and_replicas_merge_by_url() -> None:
    first = answer("a.ns", 1)
    second = {**answer("b.ns", 0), "complete": False, "skipped": 7}
    both = merged([("http://one:15014", first), ("http://two:15014", second)])
    assert both["complete"] is False and both["skipped"] == 7
    assert [p["source"] for p in both["proxies"]] == ["http://one:15014", "http://two:15014"]
    assert rows(both)[1] == ("b.ns", "-", "0", "0", "0")
    out = io.StringIO()
    render(both, "table", out)
    assert "(not complete: 7 proxies not reached in time)" in out.getvalue()
    out = io.StringIO()
    render(both, "json", out)
    assert json.loads(out.getvalue()) == both

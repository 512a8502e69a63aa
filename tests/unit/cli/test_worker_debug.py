"""The merge of the workers' debug answers over real loopback HTTP, in one process: two
admin apps stand in for two workers' (each with its own ``/debug/syncz`` answer and the
merging middleware), served on a shared-port stand-in and on private ports as
``serve --workers`` serves them. A request on one's shared port gets both workers'
proxies; on a private port, that worker's alone; with a worker not listening, the answer
says which is missing. (The same over real worker processes:
tests/e2e/test_serve_workers.py.)"""

from __future__ import annotations

import json
import multiprocessing
import socket
from collections.abc import AsyncIterator

import aiohttp
import pytest
from aiohttp import web

from pilothouse.admin.server import AdminServer
from pilothouse.cli.worker_board import WorkerBoard
from pilothouse.cli.worker_debug import PARTIAL, PRIVATE_HOST, whole_answers


def worker_app(board: WorkerBoard, index: int, proxies: list[str]) -> web.Application:
    async def syncz(request: web.Request) -> web.Response:
        return web.json_response([{"proxy": proxy} for proxy in proxies])

    app = web.Application(middlewares=[whole_answers(board, index)])
    app.router.add_get("/debug/syncz", syncz)
    return app


@pytest.fixture
async def workers() -> AsyncIterator[tuple[WorkerBoard, list[AdminServer]]]:
    board = WorkerBoard(2, multiprocessing.get_context("fork"))
    servers = [AdminServer(worker_app(board, i, [f"p{i}.ns"])) for i in range(2)]
    for index, server in enumerate(servers):
        await server.start(PRIVATE_HOST, 0)  # each its own "shared" port, for the test
        board.publish_admin_port(index, await server.listen_also(PRIVATE_HOST))
    yield board, servers
    for server in servers:
        await server.stop()


async def get(port: int) -> tuple[int, list[dict[str, object]], str]:
    url = f"http://{PRIVATE_HOST}:{port}/debug/syncz"
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        body = json.loads(await response.text())
        return response.status, body, response.headers.get(PARTIAL, "")


async def test_the_shared_port_answers_for_every_worker_a_private_one_for_its_own(
    workers: tuple[WorkerBoard, list[AdminServer]],
) -> None:
    board, servers = workers
    status, body, missing = await get(servers[0].port)
    assert (status, missing) == (200, "")
    assert body == [{"proxy": "p0.ns", "worker": 0}, {"proxy": "p1.ns", "worker": 1}]
    status, body, _ = await get(servers[1].port)
    assert sorted(str(e["proxy"]) for e in body) == ["p0.ns", "p1.ns"]
    assert (await get(board.rows()[1].admin_port))[1] == [{"proxy": "p1.ns"}]  # no loop

    with socket.socket() as closed:  # worker 1 gone: a port nobody listens on
        closed.bind((PRIVATE_HOST, 0))
        board.publish_admin_port(1, closed.getsockname()[1])
        status, body, missing = await get(servers[0].port)
    assert status == 200 and body == [{"proxy": "p0.ns", "worker": 0}]
    assert missing.startswith("1 (")
    board.clear(1)
    assert (await get(servers[0].port))[2] == "1 (not listening)"

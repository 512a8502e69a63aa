"""One worker of ``pilothouse serve --workers N``: a full ``serve`` in a forked process.

:func:`worker_main` is what the supervising parent (:mod:`pilothouse.cli.supervisor`)
runs in each process it forks: the parent's imports come along, shared copy-on-write,
and nothing of gRPC (the parent never starts it). The worker runs the ordinary
``serve`` with its :class:`WorkerRole`: its listening ports shared with the other workers
(``SO_REUSEPORT``), ``/ready`` answering for every worker, ``/debug/workers``, debug
answers about proxies merged from every worker through a private admin port each
(:mod:`pilothouse.cli.worker_debug`), and a
task that writes its row of the :class:`~pilothouse.cli.worker_board.WorkerBoard` and
stops the worker if the parent is gone (no orphan serves on after it). Every log line
carries ``worker=<index>``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from aiohttp import web
from aiohttp.typedefs import Middleware

from pilothouse import logfmt
from pilothouse.admin.debug_routes import debug_only
from pilothouse.admin.server import AdminServer
from pilothouse.cli.worker_board import WorkerBoard
from pilothouse.cli.worker_debug import PRIVATE_HOST, whole_answers
from pilothouse.settings import Settings

log = logging.getLogger("pilothouse.serve")

REPORT_INTERVAL = 0.1
"""Seconds between two writes of a worker's row (and two looks at its parent)."""


class Connected(Protocol):
    """What the report reads of the discovery server."""

    def ready(self) -> bool: ...

    @property
    def connections(self) -> Mapping[str, Any]: ...


@dataclass(frozen=True)
class WorkerRole:
    """What makes a ``serve`` one worker among several."""

    index: int
    board: WorkerBoard
    parent_pid: int

    async def report(self, discovery: Connected, stop: asyncio.Event) -> None:
        """Write this worker's row until cancelled; set ``stop`` if the parent died."""
        pid = os.getpid()
        try:
            while True:
                self.board.publish(
                    self.index,
                    pid,
                    ready=discovery.ready(),
                    connections=len(discovery.connections),
                )
                if os.getppid() != self.parent_pid:
                    log.warning("the supervising parent is gone: stopping")
                    stop.set()
                await asyncio.sleep(REPORT_INTERVAL)
        finally:
            self.board.publish(self.index, pid, ready=False, connections=0)

    def routes(self, *, allow_remote: bool) -> list[web.RouteDef]:
        """``/debug/workers``: every worker's pid, readiness and xDS connections, and
        which worker answered (the admin port is shared: any of them may)."""

        async def workers(request: web.Request) -> web.Response:
            rows = self.board.rows()
            return web.json_response(
                {
                    "answered_by": self.index,
                    "workers": [row.as_dict() for row in rows],
                    "connections": sum(row.connections for row in rows),
                }
            )

        return [web.get("/debug/workers", debug_only(workers, allow_remote=allow_remote))]

    def middleware(self) -> Middleware:
        """The admin app's merge of the workers' debug answers
        (:mod:`pilothouse.cli.worker_debug`)."""
        return whole_answers(self.board, self.index)

    async def listen_privately(self, admin: AdminServer) -> int:
        """Serve ``admin`` on this worker's own loopback port too, and say so on the board
        (the other workers ask it there); returns the port."""
        port = await admin.listen_also(PRIVATE_HOST)
        self.board.publish_admin_port(self.index, port)
        return port


class Serve(Protocol):
    """``pilothouse.cli.serve.serve``, passed in by name so this module need not import it."""

    def __call__(
        self,
        settings: Settings,
        stop: asyncio.Event,
        on_bound: Callable[[Any], None] | None = None,
        *,
        worker: WorkerRole | None = None,
    ) -> Coroutine[Any, Any, None]: ...


class WorkerTag(logging.Filter):
    """Adds ``worker=<index>`` to every record a handler writes."""

    def __init__(self, index: int) -> None:
        super().__init__()
        self.index = index

    def filter(self, record: logging.LogRecord) -> bool:
        record.worker = self.index
        return True


def worker_main(serve: Serve, settings: Settings, role: WorkerRole) -> None:
    """The forked worker's entry point: serve until SIGTERM or SIGINT, then drain."""
    for sig in (signal.SIGINT, signal.SIGTERM):  # not the parent's handlers: its own, below
        signal.signal(sig, signal.SIG_DFL)
    logfmt.configure(settings.log_level, sys.stderr)
    for handler in logging.getLogger(logfmt.ROOT).handlers:
        handler.addFilter(WorkerTag(role.index))

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError):
                loop.add_signal_handler(sig, stop.set)
        await serve(settings, stop, worker=role)

    asyncio.run(main())

"""Whole debug answers from ``serve --workers N``: every worker's proxies, not one's.

The workers share the admin port (``SO_REUSEPORT``): the kernel hands each request to
one of them, and a worker knows only the xDS streams it holds. So each worker also
listens on a private loopback port (its row of the
:class:`~pilothouse.cli.worker_board.WorkerBoard` says which), and :func:`whole_answers`,
a middleware on the admin app, makes the answers about proxies whole: a request on the
shared port to one of :data:`MERGED` is answered by this worker and, at once, by every
other worker on its private port, and the answers are merged. A request on a private
port is answered by that worker alone (so the merge never loops).

========================  ===========================================================
path                      merged answer
========================  ===========================================================
``/debug/syncz``          every worker's entries, each with ``worker`` (its index)
``/debug/connections``    every worker's streams
``/debug/adsz``           every worker's streams
``/debug/config_dump``,   the answer of the worker that holds the proxy (a 404 only
``/debug/acked?proxyID=`` when none does)
``/debug/acked``          every worker's proxies
``/debug/refusals``       counts summed per reason (the latest of each reason kept),
                          the recent refusals of all, newest first
``POST /debug/impact``    every worker's proxies the change would push (the body is
                          handed to each worker), the figures summed
========================  ===========================================================

A worker that does not answer (restarting, say) leaves its proxies out: the answer then
carries the header :data:`PARTIAL` naming it, and a warning is logged.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Final

import aiohttp
from aiohttp import web
from aiohttp.typedefs import Middleware

from pilothouse.admin.impact import MAX_TIMEOUT
from pilothouse.boundary.contain import json_answer
from pilothouse.cli.impact_merge import merged
from pilothouse.cli.partial_answer import PARTIAL
from pilothouse.cli.worker_board import WorkerBoard

log = logging.getLogger("pilothouse.serve")

PRIVATE_HOST: Final = "127.0.0.1"
"""Where each worker's private admin port listens."""
ASK_TIMEOUT: Final = 5.0
"""Seconds a worker waits for the others' answers."""

Answer = tuple[int, Any]
"""A worker's answer: HTTP status and parsed JSON body (None: not JSON)."""
Merge = Callable[[list[tuple[int, Answer]]], Answer]
"""Answers by worker index (this worker's first) to one answer."""


def _concat(answers: list[tuple[int, Answer]]) -> Answer:
    merged: list[Any] = []
    for _, (status, body) in answers:
        if status == 200 and isinstance(body, list):
            merged.extend(body)
    return 200, merged


def _syncz(answers: list[tuple[int, Answer]]) -> Answer:
    merged: list[Any] = []
    for index, (status, body) in answers:
        if status == 200 and isinstance(body, list):
            merged.extend({**e, "worker": index} if isinstance(e, dict) else e for e in body)
    return 200, merged


def _holder(answers: list[tuple[int, Answer]]) -> Answer:
    """The answer of the worker that knows the proxy: the first that is not a 404."""
    for _, answer in answers:
        if answer[0] != 404:
            return answer
    return answers[0][1]


def _acked(answers: list[tuple[int, Answer]]) -> Answer:
    first = answers[0][1]
    if not (first[0] == 200 and isinstance(first[1], dict) and "proxies" in first[1]):
        return _holder(answers)  # ?proxyID=: one proxy's digests
    proxies: list[Any] = []
    for _, (status, body) in answers:
        if status == 200 and isinstance(body, dict):
            proxies.extend(body.get("proxies") or ())
    return 200, {"proxies": proxies}


def _refusals(answers: list[tuple[int, Answer]]) -> Answer:
    reasons: dict[str, dict[str, Any]] = {}
    recent: list[dict[str, Any]] = []
    for _, (status, body) in answers:
        if status != 200 or not isinstance(body, dict):
            continue
        for reason, seen in (body.get("reasons") or {}).items():
            held = reasons.get(reason)
            if held is None:
                reasons[reason] = dict(seen)
                continue
            count = int(held.get("count", 0)) + int(seen.get("count", 0))
            if str(seen.get("lastTime", "")) > str(held.get("lastTime", "")):
                held.update(seen)
            held["count"] = count
        recent.extend(body.get("recent") or ())
    recent.sort(key=lambda entry: str(entry.get("time", "")), reverse=True)
    return 200, {"reasons": dict(sorted(reasons.items())), "recent": recent}


def _impact(answers: list[tuple[int, Answer]]) -> Answer:
    """Every worker's proxies (``source``: ``worker N``), the figures summed."""
    first = answers[0][1]
    if first[0] != 200 or not isinstance(first[1], dict):
        return first
    return 200, merged(
        (f"worker {index}", body)
        for index, (status, body) in answers
        if status == 200 and isinstance(body, dict)
    )


MERGED: Final[Mapping[str, Merge]] = MappingProxyType(
    {
        "/debug/syncz": _syncz,
        "/debug/connections": _concat,
        "/debug/adsz": _concat,
        "/debug/config_dump": _holder,
        "/debug/acked": _acked,
        "/debug/refusals": _refusals,
        "/debug/impact": _impact,
    }
)


def whole_answers(board: WorkerBoard, index: int) -> Middleware:
    """The admin app's middleware for worker ``index`` of ``board``'s workers."""

    @web.middleware
    async def middleware(
        request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        response = await handler(request)
        merge = MERGED.get(request.path)
        if (
            merge is None
            or not isinstance(response, web.Response)
            or response.status not in (200, 404)  # refused or malformed: said once is enough
            or _on_private(request, board.rows()[index].admin_port)
        ):
            return response
        rows = board.rows()
        others = [(r.index, r.admin_port) for r in rows if r.index != index]
        body = await request.read() if request.method == "POST" else None
        asked = await _ask_others(others, request.path_qs, body)
        answers = [(index, (response.status, _parsed(response.text)))]
        missing = []
        for (other, _), answer in zip(others, asked, strict=True):
            if isinstance(answer, str):
                missing.append(f"{other} ({answer})")
            else:
                answers.append((other, answer))
        status, body = merge(answers)
        merged = json_answer(body, status)
        if missing:
            merged.headers[PARTIAL] = ", ".join(missing)
            log.warning(
                "debug answer without some workers' part",
                extra={"path": request.path, "missing": merged.headers[PARTIAL]},
            )
        return merged

    return middleware


def _on_private(request: web.Request, private_port: int) -> bool:
    """Whether ``request`` came in on this worker's private port (not the shared one)."""
    transport = request.transport
    sockname = transport.get_extra_info("sockname") if transport is not None else None
    if not isinstance(sockname, tuple) or len(sockname) < 2:
        return False
    return bool(private_port) and sockname[1] == private_port


def _parsed(text: str | None) -> Any:
    try:
        return json.loads(text or "")
    except ValueError:
        return None


async def _ask_others(
    others: Sequence[tuple[int, int]], path_qs: str, body: bytes | None = None
) -> list[Answer | str]:
    """Each other worker's answer (to a GET, or to a POST of ``body``), or why there is
    none."""
    # an impact is computed within its own bound (at most MAX_TIMEOUT): wait that long
    timeout = aiohttp.ClientTimeout(total=ASK_TIMEOUT + (0 if body is None else MAX_TIMEOUT))
    async with aiohttp.ClientSession(timeout=timeout) as session:

        async def ask(port: int) -> Answer | str:
            if not port:
                return "not listening"
            try:
                url = f"http://{PRIVATE_HOST}:{port}{path_qs}"
                method = "GET" if body is None else "POST"
                async with session.request(method, url, data=body) as reply:
                    return reply.status, _parsed(await reply.text())
            except TimeoutError:
                return "no answer in time"
            except aiohttp.ClientError as failure:
                return str(failure) or type(failure).__name__

        return list(await asyncio.gather(*(ask(port) for _, port in others)))

"""The ``Host`` check in front of every HTTP server of pilothouse's: 421 or 400.

A request must name the server it reached in its ``Host`` header: one of the server's
names (:class:`~pilothouse.boundary.host_names.ServerNames`). One that names another
host was not meant for this server (a misrouted client, or a web page that rebound its
own name to this server's address, DNS rebinding) and is answered ``421 Misdirected
Request`` before a handler (or its body) is touched; one with no ``Host`` (or an empty
one) is malformed HTTP/1.1 and answered 400. The admin port, ControlZ and the
validation webhook all check so; each says in the 421 how to reach it by name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from aiohttp import hdrs, web
from aiohttp.typedefs import Middleware

from pilothouse.boundary.contain import ErrorRenderer
from pilothouse.boundary.host_names import ADVICE, Handler, ServerNames

NO_HOST: Final = "a Host header is required"


def host_check(
    names: Callable[[], ServerNames],
    render: ErrorRenderer,
    *,
    server: str = "server",
    advice: str = ADVICE,
) -> Middleware:
    """400 without a ``Host``, 421 when it is not one of ``names()`` (the answer saying
    it is not a name of this ``server``, then ``advice``), else the handler."""

    @web.middleware
    async def check(request: web.Request, handler: Handler) -> web.StreamResponse:
        header = request.headers.get(hdrs.HOST, "")
        if not header.strip():
            return render(400, NO_HOST)
        if names().refusal(request) is not None:
            return render(421, f"Host {header!r} is not a name of this {server}; {advice}")
        return await handler(request)

    return check

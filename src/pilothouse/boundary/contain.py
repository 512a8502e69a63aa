"""Per-request containment for pilothouse's aiohttp applications.

:func:`containment` is a middleware that every HTTP application mounts (the admin app
with REST discovery, the admission webhook). Whatever one request's handler lets out
becomes that request's answer, and the server goes on serving:

- a body the client stopped sending, or sent malformed (chunked encoding, a short
  ``Content-Length``), is 400;
- aiohttp's own 404 (no such path) and 405 (wrong method, with ``Allow``) are
  answered in the application's error shape and in our words;
- any other exception is a fault of ours: the traceback is logged once, and the client
  gets a 500 with :data:`INTERNAL_ERROR`, never the exception's text (which may quote
  Python's internals or the request's data).

Handlers still answer the faults they know about themselves, and count them; this is
the net under them, so that an exception nobody foresaw stops at its request too.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Final

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError
from aiohttp.typedefs import Middleware

INTERNAL_ERROR: Final = "internal error: pilothouse could not answer this request (see its log)"
"""The whole explanation a client gets for a fault of ours."""

ErrorRenderer = Callable[[int, str], web.Response]
"""Builds an error answer in an application's own shape: (status, reason) -> response."""

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def json_error_body(status: int, reason: str) -> bytes:
    """``{"error": reason, "status": status}``: the JSON error shape of the admin app."""
    return json.dumps({"error": reason, "status": status}).encode()


def json_error(status: int, reason: str) -> web.Response:
    return web.Response(
        status=status, body=json_error_body(status, reason), content_type="application/json"
    )


def json_answer(data: Any, status: int = 200) -> web.Response:
    """``data`` as indented JSON (the debug views are read by people too)."""
    return web.Response(
        status=status, text=json.dumps(data, indent=2) + "\n", content_type="application/json"
    )


def text_error(status: int, reason: str) -> web.Response:
    return web.Response(status=status, text=reason + "\n")


def containment(
    render: ErrorRenderer,
    log: logging.Logger,
    on_fault: Callable[[], None] | None = None,
) -> Middleware:
    """The middleware: answers with ``render``, logs faults to ``log``, and calls
    ``on_fault`` (a counter, say) once per 500 it makes."""

    @web.middleware
    async def contain(request: web.Request, handler: Handler) -> web.StreamResponse:
        try:
            return await handler(request)
        except web.HTTPMethodNotAllowed as refused:
            allowed = sorted(refused.allowed_methods)
            response = render(
                405,
                f"method {request.method} is not allowed on {request.path}; "
                f"use {' or '.join(allowed)}",
            )
            response.headers["Allow"] = ",".join(allowed)
            return response
        except web.HTTPNotFound:
            return render(404, f"no such path: {request.path}")
        except web.HTTPException:
            raise
        except (HttpProcessingError, ConnectionError):
            log.debug("request body not read whole", extra={"path": request.path})
            return render(400, "the request body could not be read whole")
        except Exception:
            log.exception("fault answering %s %s", request.method, request.path)
            if on_fault is not None:
                on_fault()
            return render(500, INTERNAL_ERROR)

    return contain

"""``/debug/refusals``: the xDS connections and streams this replica refused lately.

A GET, read-only: the discovery server's
:class:`~pilothouse.xds.server.refusals.RefusalLog`, read through its debug view, as
JSON: ``reasons`` (per reason since start: ``count``, and the ``lastTime``,
``lastPeer``, ``lastNodeId`` and ``lastMessage`` of its latest refusal) and ``recent``
(the latest refusals, newest first, at most ``PILOTHOUSE_XDS_REFUSALS_KEPT``).
``pilothouse proxy-status`` reads it.
"""

from __future__ import annotations

from typing import Final

from aiohttp import web

from pilothouse.boundary.contain import json_answer
from pilothouse.xds.server.debug_view import DebugView

PATH: Final = "/debug/refusals"


def refusal_routes(discovery: DebugView) -> list[web.RouteDef]:
    """The ``/debug/refusals`` route for ``discovery``'s refusal record."""

    async def refusals(request: web.Request) -> web.Response:
        return json_answer(discovery.refusals())

    return [web.get(PATH, refusals)]

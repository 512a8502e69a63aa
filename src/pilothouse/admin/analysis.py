"""``serve``'s analysis on the admin port: ``/debug/analyzez`` and its metric.

``/debug/analyzez`` answers the latest analysis of the served config (see
:mod:`pilothouse.analysis.follower`) as JSON, ``{"analyzedAt", "objects", "runs",
"messages": [...]}``, each message in istioctl's ``-o json`` shape (``pilothouse analyze
--admin`` reads it); ``?output=log`` gives the lines ``pilothouse analyze`` prints. It
follows the other debug endpoints' access rule (loopback only by default).
``pilothouse_analysis_messages{level,code}`` counts the latest run's messages (istiod
has no metric for its analysis; this one is pilothouse's own).
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator

from aiohttp import web
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from pilothouse.admin.debug_routes import debug_only
from pilothouse.analysis.follower import AnalysisFollower
from pilothouse.boundary.contain import json_answer

PATH = "/debug/analyzez"


def analysis_routes(follower: AnalysisFollower, *, allow_remote: bool) -> list[web.RouteDef]:
    async def analyzez(request: web.Request) -> web.Response:
        latest = follower.latest
        if request.query.get("output") == "log":
            lines = "".join(f"{m}\n" for m in latest.messages)
            return web.Response(text=lines, content_type="text/plain")
        stamp = (
            datetime.datetime.fromtimestamp(latest.analyzed_at, datetime.UTC).isoformat()
            if latest.analyzed_at
            else None
        )
        body = {
            "analyzedAt": stamp,
            "objects": latest.objects,
            "runs": latest.runs,
            "messages": [m.as_dict() for m in latest.messages],
        }
        return json_answer(body)

    return [web.get(PATH, debug_only(analyzez, allow_remote=allow_remote))]


class AnalysisCollector(Collector):
    """``pilothouse_analysis_messages{level,code}``: the latest analysis's messages."""

    def __init__(self, follower: AnalysisFollower) -> None:
        self._follower = follower

    def collect(self) -> Iterator[Metric]:
        family = GaugeMetricFamily(
            "pilothouse_analysis_messages",
            "Messages of the latest analysis of the served config (pilothouse analyze's"
            " checks), by level and code.",
            labels=["level", "code"],
        )
        for (level, code), count in sorted(self._follower.latest.counts().items()):
            family.add_metric([level, code], count)
        yield family

"""The admin side of ``serve``: the admin HTTP server's routes and the runtime knobs.

``serve`` builds the parts (discovery, REST xDS, the config sources, the analysis) and
hands them here: :func:`admin_server` mounts ``/ready``, ``/metrics``, ``/debug``, REST
xDS, the admin API and, as a worker, the workers' pages on one aiohttp app;
:func:`runtime_knobs` is where each part registers the knobs the admin API and ControlZ
serve.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pilothouse.admin.access import AccessPolicy
from pilothouse.admin.analysis import analysis_routes
from pilothouse.admin.api import AdminApi
from pilothouse.admin.app import build_admin_app
from pilothouse.admin.debug_routes import debug_routes
from pilothouse.admin.knobs import KnobRegistry
from pilothouse.admin.metrics import ServerMetrics, metrics_routes
from pilothouse.admin.readiness import ReadinessCheck
from pilothouse.admin.server import AdminServer
from pilothouse.admin.server_knobs import (
    register_admission_knobs,
    register_log_knobs,
    register_push_knobs,
)
from pilothouse.analysis.follower import AnalysisFollower
from pilothouse.cli.worker import WorkerRole
from pilothouse.settings import Settings
from pilothouse.sources.addresses import ConfigSource
from pilothouse.sources.availability import Availability
from pilothouse.xds.server.debug_view import DebugView
from pilothouse.xds.server.discovery import DiscoveryServer
from pilothouse.xds.server.rest import RestDiscovery


def runtime_knobs(discovery: DiscoveryServer, view: DebugView) -> KnobRegistry:
    """The admin API's and ControlZ's runtime knobs: each part registers its own here,
    where the parts are wired (the push knobs through ``discovery``'s debug ``view``)."""
    knobs = KnobRegistry()
    register_push_knobs(knobs, view)
    register_admission_knobs(knobs, discovery.admission, settings_prefix="xds.admission")
    register_log_knobs(knobs)
    return knobs


def admin_server(
    settings: Settings,
    view: DebugView,
    rest: RestDiscovery,
    sources: Sequence[ConfigSource],
    source_states: Callable[[], list[Availability]],
    *,
    metrics: ServerMetrics,
    knobs: KnobRegistry,
    access: AccessPolicy,
    readiness: Sequence[ReadinessCheck],
    worker: WorkerRole | None,
    analysis: AnalysisFollower | None = None,
) -> AdminServer:
    """The admin HTTP server: ``/ready`` (with the ``readiness`` checks), ``/metrics``,
    ``/debug`` (all three reading the discovery server's debug ``view``), REST xDS, the
    admin API and, as a worker, the workers' pages."""
    return AdminServer(
        build_admin_app(
            view,
            readiness,
            rest=rest,
            source_states=source_states,
            names=access.names,
            sources=lambda: sources,
            routes=[
                *metrics_routes(metrics.registry),
                *debug_routes(view, sources),
                *(
                    analysis_routes(analysis, allow_remote=settings.xds.debug_allow_remote)
                    if analysis is not None
                    else ()
                ),
                *AdminApi(knobs, view, access).routes(),
                *(
                    worker.routes(allow_remote=settings.xds.debug_allow_remote)
                    if worker is not None
                    else ()
                ),
            ],
            middlewares=(worker.middleware(),) if worker is not None else (),
        )
    )

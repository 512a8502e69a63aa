"""`pilothouse serve`: load and watch the mesh config and serve it over xDS.

Start-up: the mesh config and the config sources are loaded
(:mod:`pilothouse.cli.serve_config`), file sources load (xDS streams get UNAVAILABLE
until they have), the discovery server builds its first PushContext, and the gRPC
server accepts proxies.
The admin HTTP server carries the admin API, whose runtime knobs each part registers
(:mod:`pilothouse.cli.serve_admin`); ControlZ serves the same knobs and the process's
figures on its own port.
Each port is a listener (:mod:`pilothouse.cli.serve_listeners`), opened in order and
closed on one path. SIGTERM or SIGINT drains: every stream is closed (proxies reconnect
elsewhere), the xDS ports wait up to ``drain_seconds`` for them to finish, the other
ports close, and the process exits 0.

With the TLS port on, proxies that authenticate there get SDS secrets over their ADS
stream (:class:`~pilothouse.xds.server.secret_delivery.SecretDelivery`): their workload
certificate and the CA's roots, and the credentials of ``--secrets DIR``.

With ``--workers N`` (N > 1) this process only supervises
(:mod:`pilothouse.cli.supervisor`): it creates the CA directory's root (so that workers
only load it), holds the shared ports and runs N workers, each a full :func:`serve` with
a :class:`~pilothouse.cli.worker.WorkerRole`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import logging
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass

from pilothouse import logfmt, logscopes
from pilothouse.addresses import HostPort
from pilothouse.admin.access import AccessPolicy
from pilothouse.admin.analysis import AnalysisCollector
from pilothouse.admin.controlz.app import ControlZ
from pilothouse.admin.metrics import server_metrics
from pilothouse.analysis.follower import AnalysisFollower
from pilothouse.analysis.status import status_writer
from pilothouse.cli.config_sources import (
    MissingConfigDirectory,
    SourceSetupError,
    check_config_directories,
)
from pilothouse.cli.mcp_roles import mcp_roles
from pilothouse.cli.serve_admin import admin_server, runtime_knobs
from pilothouse.cli.serve_args import add_arguments, settings_from
from pilothouse.cli.serve_config import load_mesh, load_served_config
from pilothouse.cli.serve_listen import listen_address, server_names
from pilothouse.cli.serve_listeners import (
    AdminListener,
    ControlZListener,
    Listener,
    Listeners,
    WebhookListener,
    XdsListener,
)
from pilothouse.cli.serve_security import RootWait, Security, create_ca, wire_security
from pilothouse.cli.serve_status import GatewayApiStatusWriter
from pilothouse.cli.supervisor import supervise
from pilothouse.cli.worker import WorkerRole
from pilothouse.descriptors import raise_open_file_limit
from pilothouse.environment import SettingsError
from pilothouse.heap import HeapKeeper, set_collector_thresholds
from pilothouse.security.ca_metrics import CaCollector
from pilothouse.settings import (
    Settings,
)
from pilothouse.sources.availability import Availability, ReportsAvailability
from pilothouse.sources.etcd import EtcdSource
from pilothouse.sources.events import ConfigEvent
from pilothouse.sources.kubernetes.config_source import KubeConfigSource
from pilothouse.webhook.server import WebhookServer
from pilothouse.xds.server.ads import add_discovery_services, new_grpc_server
from pilothouse.xds.server.discovery import DiscoveryServer
from pilothouse.xds.server.discovery_debug import DiscoveryDebugView
from pilothouse.xds.server.rest import RestDiscovery

log = logging.getLogger("pilothouse.serve")


@dataclass(frozen=True, slots=True)
class Bound:
    """Where the servers actually listen (ports chosen at run time when asked for 0)."""

    xds_port: int
    admin_port: int
    webhook_port: int = 0
    ctrlz_port: int = 0
    """0 when ControlZ is off or could not listen."""
    xds_tls_port: int = 0
    """0 when the TLS port is off."""


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    add_arguments(commands).set_defaults(run=run)


class ConfigLog:
    """What ``serve`` logs of the config: the initial load (maybe 100,000 objects) summed
    up in one line once discovery is ready, every change after that in its own line."""

    def __init__(self, discovery: DiscoveryServer) -> None:
        self._discovery = discovery
        self._initial = 0

    def on_event(self, event: ConfigEvent) -> None:
        level = logging.INFO
        if not self._discovery.ready():
            level = logging.DEBUG
            self._initial += 1
        if log.isEnabledFor(level):
            log.log(
                level,
                "config %s",
                event.type,
                extra={"key": str(event.key), "origin": str(event.config.origin)},
            )

    async def report_loaded(self) -> None:
        await self._discovery.wait_ready()
        # What the initial load built lives as long as the process: move it out of the
        # cyclic collector's sight so that later collections do not rescan all of it.
        gc.freeze()
        log.info("config loaded", extra={"events": self._initial})


def webhook_listener(settings: Settings, address: HostPort, *, shared: bool) -> WebhookListener:
    """The validation webhook's port (on when a certificate and key are given)."""
    server = WebhookServer(
        settings.webhook.cert,
        settings.webhook.key,
        read_timeout=settings.webhook.read_timeout,
        host_names=settings.webhook.host_names,
    )
    return WebhookListener(server, address, settings.webhook.address, shared=shared)


async def serve(
    settings: Settings,
    stop: asyncio.Event,
    on_bound: Callable[[Bound], None] | None = None,
    *,
    worker: WorkerRole | None = None,
) -> None:
    """Run until ``stop`` is set, then drain and return. As a ``worker``, the listening
    ports are shared with the other workers (``SO_REUSEPORT``) and ``/ready`` waits for
    all of them."""
    shared = worker is not None
    set_collector_thresholds(settings.gc)  # in each worker: its own process's collector
    xds_address = listen_address(settings.xds.address, "xds.address")
    admin_address = listen_address(settings.admin.address, "admin.address")
    tls_address = (
        listen_address(settings.xds.tls_address, "xds.tls_address")
        if settings.xds.tls_address
        else None
    )
    webhook_address = listen_address(settings.webhook.address, "webhook.address")
    config = await load_served_config(settings)
    sources, kube_registry, store = config.sources, config.kube_registry, config.store

    discovery = DiscoveryServer(
        store,
        config.mesh,
        settings.xds,
        envoy_generators=settings.role == "all",
        kube=kube_registry.feeds if kube_registry is not None else None,
    )
    config_log = ConfigLog(discovery)
    store.subscribe(config_log.on_event)
    # one worker of several logs new findings (each analyzes the same config)
    analysis = AnalysisFollower(
        store,
        lambda: discovery.mesh,
        logs=worker is None or worker.index == 0,
        ready=discovery.wait_ready,
        on_result=status_writer(sources),  # --write-status: into the objects' status
    )
    store.subscribe(analysis.on_event)
    if config.kube_mesh is not None:
        config.kube_mesh.on_change = discovery.set_mesh
    try:
        roles = mcp_roles(
            settings,
            store,
            discovery.admission,
            config.mesh.root_namespace,
            kube=kube_registry.feeds if kube_registry is not None else None,
        )
    except SourceSetupError as problem:
        raise SystemExit(f"pilothouse: {problem}") from None
    if config.reverse is not None:
        roles.sink_server = config.reverse
        roles.runners.append(config.reverse)
    grpc_server = new_grpc_server(settings.xds, reuse_port=shared)
    add_discovery_services(grpc_server, discovery)
    roles.add_to(grpc_server)

    def source_states() -> list[Availability]:
        shown = [*sources, *([kube_registry] if kube_registry is not None else [])]
        return [s.availability() for s in shown if isinstance(s, ReportsAvailability)]

    root = RootWait(settings, config.mesh, config.mesh_sources)
    rest = RestDiscovery(discovery, settings.rest)
    view = DiscoveryDebugView(discovery, rest.json.render)
    metrics = server_metrics(view, sources)
    metrics.registry.register(AnalysisCollector(analysis))
    webhook_on = bool(settings.webhook.cert and settings.webhook.key)
    names = server_names(
        settings,
        (xds_address, admin_address, tls_address, webhook_address if webhook_on else None),
    )
    access = AccessPolicy(allow_remote=settings.admin.allow_remote, names=names)
    knobs = runtime_knobs(discovery, view)
    admin = admin_server(
        settings,
        view,
        rest,
        sources,
        source_states,
        metrics=metrics,
        knobs=knobs,
        access=access,
        readiness=(root.pending, *((worker.board.not_ready,) if worker is not None else ())),
        worker=worker,
        analysis=analysis,
    )
    # Every port opens at once (streams are refused until the sources have synced); only
    # the TLS port waits for the CA's root, which may live in a store not reachable yet.
    opening: list[Listener] = [
        XdsListener(grpc_server, xds_address, settings.xds.address, discovery),
        AdminListener(admin, admin_address, settings.admin.address, shared=shared),
    ]
    if webhook_on:
        opening.append(webhook_listener(settings, webhook_address, shared=shared))
    opening.append(ControlZListener(ControlZ(settings.ctrlz, knobs, access)))
    listeners = Listeners()
    ports = await listeners.start(*opening)
    if worker is not None:  # so that the other workers can ask this one (worker_debug)
        await worker.listen_privately(admin)

    # The CA (an Authority) for the certificate service, SDS and the TLS port is opened
    # inside the task group, so that the sources run while its shared store is asked
    # again (/ready says why); discovery starts after it, with SDS wired.
    security: Security | None = None
    fatal: SystemExit | None = None
    try:
        async with asyncio.TaskGroup() as tasks:
            # waits for the first PushContext, which never comes if a source never syncs
            loaded = tasks.create_task(config_log.report_loaded())
            config.start(tasks)
            for runner in roles.runners:
                tasks.create_task(runner.run())
            # every stream's state lives as long as the stream: keep it out of the
            # collector's full scans (pilothouse/heap.py)
            keeper = HeapKeeper(busy=lambda: discovery.pushes.pending() > 0)
            endless: list[asyncio.Task[None]] = [
                tasks.create_task(keeper.run()),
                tasks.create_task(analysis.run()),
                loaded,
            ]
            try:  # a SystemExit raised in a task group's body would leave it as a group
                authority = await root.open(stop)
                if not stop.is_set():
                    wired = wire_security(
                        settings,
                        config.mesh,
                        discovery,
                        roles,
                        authority,
                        tls_address,
                        shared=shared,
                    )
                    if wired.listener is not None:
                        ports |= await listeners.start(wired.listener)
                    security = wired
            except SystemExit as problem:
                fatal = problem
            if security is not None:
                if security.tls is not None:
                    tls = security.tls
                    metrics.registry.register(
                        CaCollector(tls.counters, tls.ca.root_expiry, tls.ca.chain_expiry)
                    )
                tasks.create_task(discovery.run())
                tasks.create_task(security.secrets.run())
                writers = [s for s in sources if isinstance(s, KubeConfigSource | EtcdSource)]
                if settings.kube.write_status and writers:
                    gateway_status = GatewayApiStatusWriter(view, writers)
                    endless.append(tasks.create_task(gateway_status.run()))
                if worker is not None:
                    endless.append(tasks.create_task(worker.report(discovery, stop)))
                if security.tls is not None:  # renewal and root checks never end by themselves
                    endless += [
                        tasks.create_task(security.tls.run()),
                        tasks.create_task(security.tls.ca.run()),
                    ]
                if on_bound is not None:
                    on_bound(
                        Bound(
                            xds_port=ports["xds"],
                            admin_port=ports["admin"],
                            webhook_port=ports.get("webhook", 0),
                            ctrlz_port=ports["ctrlz"],
                            xds_tls_port=ports.get("xds-tls", 0),
                        )
                    )
                await stop.wait()
            log.info("draining", extra={"streams": len(discovery.connections)})
            discovery.close()
            roles.close()
            if security is not None:
                security.secrets.close()
            config.close()
            for task in endless:
                task.cancel()
    finally:
        # the xDS ports drain together (streams get drain_seconds), then the rest stop
        await listeners.stop(settings.drain_seconds)
        log.info("stopped")
    if fatal is not None:
        raise fatal


def run(args: argparse.Namespace) -> int:
    try:
        settings = settings_from(args)
    except SettingsError as problem:
        print(f"pilothouse serve: {problem}", file=sys.stderr)
        return 2
    try:
        logscopes.check_level_spec(settings.log_level)
        logfmt.configure(settings.log_level, sys.stderr)
    except logfmt.LevelSpecError as problem:
        print(f"pilothouse serve: {problem}", file=sys.stderr)
        return 2

    try:  # before anything starts (workers included); the mesh config's are checked in serve
        check_config_directories(settings)
    except MissingConfigDirectory as problem:
        print(f"pilothouse serve: {problem}", file=sys.stderr)
        return 2
    raise_open_file_limit()  # as istiod's Go runtime does: one descriptor per stream
    if settings.workers > 1:
        create_ca(settings, *load_mesh(settings))
        return supervise(settings, serve)

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError):
                loop.add_signal_handler(sig, stop.set)
        await serve(settings, stop)

    asyncio.run(main())
    return 0

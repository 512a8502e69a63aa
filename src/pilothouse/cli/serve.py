"""`pilothouse serve`: load and watch the mesh config and serve it over xDS.

Start-up: file sources load (xDS streams get UNAVAILABLE until they have), the
discovery server builds its first PushContext, and the gRPC server accepts proxies.
SIGTERM or SIGINT drains: every stream is closed (proxies reconnect elsewhere), the
server waits up to ``drain_seconds`` for them to finish, and the process exits 0.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from pilothouse import logfmt
from pilothouse.admin.app import build_admin_app
from pilothouse.admin.server import AdminServer
from pilothouse.bootstrap.envoy import XDS_REST_CLUSTER
from pilothouse.config.load import Loader
from pilothouse.push.debounce import DebounceSettings
from pilothouse.settings import Settings, from_environment
from pilothouse.sources.aggregate import AggregateStore
from pilothouse.sources.events import ConfigEvent
from pilothouse.sources.fs import FileSource
from pilothouse.webhook.server import WebhookServer
from pilothouse.xds.builders.cluster import RestPolling
from pilothouse.xds.server.ads import add_discovery_services, new_grpc_server
from pilothouse.xds.server.discovery import DiscoveryServer, XdsSettings
from pilothouse.xds.server.rest import RestSettings

log = logging.getLogger("pilothouse.serve")


@dataclass(frozen=True, slots=True)
class Bound:
    """Where the servers actually listen (ports chosen at run time when asked for 0)."""

    xds_port: int
    admin_port: int
    webhook_port: int = 0


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "serve",
        help="serve the mesh config over xDS",
        description="Load Istio config from directories, keep it current, serve it over xDS.",
    )
    parser.add_argument(
        "--config",
        action="append",
        type=Path,
        metavar="DIR",
        help="a directory of Istio YAML (repeatable; default ./mesh if present)",
    )
    parser.add_argument("--xds-address", metavar="HOST:PORT", help="default 127.0.0.1:15010")
    parser.add_argument(
        "--admin-address",
        metavar="HOST:PORT",
        help="HTTP for /ready and REST xDS; default 127.0.0.1:15014",
    )
    parser.add_argument(
        "--webhook-address",
        metavar="HOST:PORT",
        help="HTTPS validation webhook, with --webhook-cert/-key (default 127.0.0.1:15017)",
    )
    parser.add_argument(
        "--webhook-cert", type=Path, metavar="FILE", help="webhook certificate (PEM)"
    )
    parser.add_argument(
        "--webhook-key", type=Path, metavar="FILE", help="webhook private key (PEM)"
    )
    parser.add_argument(
        "--log-level",
        metavar="LEVELS",
        help="info (default), or per scope as istiod: default:info,xds:debug",
    )
    parser.set_defaults(run=run)


def settings_from(args: argparse.Namespace) -> Settings:
    overrides = from_environment()
    if args.config:
        overrides["config_dirs"] = tuple(args.config)
    if args.log_level:
        overrides["log_level"] = args.log_level
    if args.xds_address:
        overrides["xds_address"] = args.xds_address
    if args.admin_address:
        overrides["admin_address"] = args.admin_address
    for name in ("webhook_address", "webhook_cert", "webhook_key"):
        value = getattr(args, name, None)
        if value:
            overrides[name] = str(value)
    return Settings().with_overrides(overrides)


def xds_settings(settings: Settings) -> XdsSettings:
    return XdsSettings(
        debounce=DebounceSettings(
            debounce_after=settings.debounce_after,
            debounce_max=settings.debounce_max,
            eds_debounce=settings.eds_debounce,
        ),
        push_throttle=settings.push_throttle,
        max_receive_bytes=settings.max_receive_bytes,
    )


def rest_settings(settings: Settings) -> RestSettings:
    delay = timedelta(seconds=settings.rest_refresh_delay)
    return RestSettings(polling=RestPolling(XDS_REST_CLUSTER, delay, timedelta(seconds=1)))


async def serve(
    settings: Settings, stop: asyncio.Event, on_bound: Callable[[Bound], None] | None = None
) -> None:
    """Run until ``stop`` is set, then drain and return."""
    sources = [
        FileSource(
            directory,
            Loader(default_namespace=settings.default_namespace, source=f"fs://{directory}"),
            debounce=settings.file_debounce,
        )
        for directory in settings.effective_config_dirs()
    ]
    store = AggregateStore([s.store for s in sources])
    if not sources:
        log.warning("no config directory given and ./mesh does not exist: serving no config")

    def on_event(event: ConfigEvent) -> None:
        log.info(
            "config %s",
            event.type,
            extra={"key": str(event.key), "origin": str(event.config.origin)},
        )

    store.subscribe(on_event)
    discovery = DiscoveryServer(store, settings=xds_settings(settings))
    grpc_server = new_grpc_server(settings.max_receive_bytes)
    add_discovery_services(grpc_server, discovery)
    try:
        port = grpc_server.add_insecure_port(settings.xds_address)
    except RuntimeError as problem:
        raise SystemExit(
            f"pilothouse: cannot listen on {settings.xds_address}: {problem}"
        ) from None
    if port == 0:
        raise SystemExit(f"pilothouse: cannot listen on {settings.xds_address}")
    await grpc_server.start()
    admin_host, _, admin_port_text = settings.admin_address.rpartition(":")
    admin = AdminServer(build_admin_app(discovery, rest=rest_settings(settings)))
    try:
        admin_port = await admin.start(admin_host, int(admin_port_text))
    except (OSError, ValueError) as problem:
        await grpc_server.stop(0)
        raise SystemExit(
            f"pilothouse: cannot listen on {settings.admin_address}: {problem}"
        ) from None
    webhook: WebhookServer | None = None
    webhook_port = 0
    if settings.webhook_cert and settings.webhook_key:
        webhook = WebhookServer(settings.webhook_cert, settings.webhook_key)
        webhook_host, _, webhook_port_text = settings.webhook_address.rpartition(":")
        try:
            webhook_port = await webhook.start(webhook_host, int(webhook_port_text))
        except (OSError, ValueError) as problem:
            await grpc_server.stop(0)
            await admin.stop()
            raise SystemExit(
                f"pilothouse: cannot serve the webhook on {settings.webhook_address}: {problem}"
            ) from None
        log.info(
            "validation webhook (HTTPS) listening",
            extra={"address": f"{webhook_host}:{webhook_port}"},
        )
    bound = Bound(xds_port=port, admin_port=admin_port, webhook_port=webhook_port)
    host = settings.xds_address.rsplit(":", 1)[0]
    log.info("xDS listening on %s:%d", host, port, extra={"address": f"{host}:{port}"})
    log.info(
        "admin (/ready, REST xDS) listening on %s:%d",
        admin_host,
        admin_port,
        extra={"address": f"{admin_host}:{admin_port}"},
    )
    if on_bound is not None:
        on_bound(bound)
    try:
        async with asyncio.TaskGroup() as tasks:
            for source in sources:
                tasks.create_task(source.run())
            tasks.create_task(discovery.run())
            await stop.wait()
            log.info("draining", extra={"streams": len(discovery.connections)})
            discovery.close()
            for source in sources:
                source.close()
    finally:
        await grpc_server.stop(settings.drain_seconds)
        await admin.stop()
        if webhook is not None:
            await webhook.stop()
        log.info("stopped")


def run(args: argparse.Namespace) -> int:
    settings = settings_from(args)
    try:
        logfmt.configure(settings.log_level, sys.stderr)
    except logfmt.LevelSpecError as problem:
        print(f"pilothouse serve: {problem}", file=sys.stderr)
        return 2

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError):
                loop.add_signal_handler(sig, stop.set)
        await serve(settings, stop)

    asyncio.run(main())
    return 0

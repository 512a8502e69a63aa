"""`pilothouse serve`: load and watch the mesh config and keep it validated in memory.

Today this runs the config pipeline's first stages (file sources → aggregate store) and
logs every change and every problem; the xDS server joins it in the next milestone.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
from pathlib import Path

from pilothouse.config.load import Loader
from pilothouse.settings import Settings, from_environment
from pilothouse.sources.aggregate import AggregateStore
from pilothouse.sources.events import ConfigEvent
from pilothouse.sources.fs import FileSource

log = logging.getLogger("pilothouse.serve")


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "serve",
        help="load, validate and watch the mesh config",
        description="Load Istio config from directories and keep it current.",
    )
    parser.add_argument(
        "--config",
        action="append",
        type=Path,
        metavar="DIR",
        help="a directory of Istio YAML (repeatable; default ./mesh if present)",
    )
    parser.add_argument("--log-level", choices=("debug", "info", "warning", "error"))
    parser.set_defaults(run=run)


def settings_from(args: argparse.Namespace) -> Settings:
    overrides = from_environment()
    if args.config:
        overrides["config_dirs"] = tuple(args.config)
    if args.log_level:
        overrides["log_level"] = args.log_level
    return Settings().with_overrides(overrides)


async def serve(settings: Settings, stop: asyncio.Event) -> None:
    sources = [
        FileSource(
            directory,
            Loader(default_namespace=settings.default_namespace, source=f"fs://{directory}"),
            debounce=settings.file_debounce,
        )
        for directory in settings.effective_config_dirs()
    ]
    store = AggregateStore([s.store for s in sources])

    def on_event(event: ConfigEvent) -> None:
        log.info("%s %s (%s)", event.type, event.key, event.config.origin)

    store.subscribe(on_event)
    async with asyncio.TaskGroup() as tasks:
        for source in sources:
            tasks.create_task(source.run())
        while not store.has_synced():
            await asyncio.sleep(0.01)
        log.info(
            "config synced: %d objects from %d source(s)",
            len(store.keys()),
            len(sources),
        )
        await stop.wait()
        for source in sources:
            source.close()


def run(args: argparse.Namespace) -> int:
    settings = settings_from(args)
    logging.basicConfig(
        level=settings.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
    )

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError):
                loop.add_signal_handler(sig, stop.set)
        await serve(settings, stop)

    asyncio.run(main())
    return 0

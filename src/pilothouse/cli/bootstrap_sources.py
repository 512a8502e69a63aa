"""Reading ``pilothouse bootstrap --config-source`` addresses: each source is started,
read once it has synced (its first full list), and closed.

:func:`pilothouse.cli.bootstrap_inputs.configs_from_sources` imports this module only when
addresses are given, so that a bootstrap from files (or none) loads no source client.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import time
from collections.abc import Sequence

from pilothouse.cli.bootstrap_inputs import SYNC_POLL, BootstrapInputError
from pilothouse.cli.config_sources import SourceSetupError, check_config_directories
from pilothouse.config.model import Config
from pilothouse.mcp.sink_client import McpSinkClient
from pilothouse.settings import Settings
from pilothouse.sources.addresses import (
    AddressError,
    ConfigSource,
    Scheme,
    build_source,
    parse_address,
)


def read_sources(
    addresses: Sequence[str], settings: Settings, timeout: float, kinds: frozenset[str]
) -> list[Config]:
    """Every object of ``kinds`` the sources at ``addresses`` hold, in address order;
    BootstrapInputError naming the first address that cannot be read."""
    try:  # a file source's directory must exist, as for serve
        check_config_directories(
            settings.with_overrides({"config_dirs": (), "config_sources": tuple(addresses)})
        )
    except SourceSetupError as problem:
        raise BootstrapInputError(str(problem)) from None
    sources = [_source(address, settings) for address in addresses]
    with concurrent.futures.ThreadPoolExecutor(1, "bootstrap-sources") as thread:
        return thread.submit(asyncio.run, _read(addresses, sources, timeout, kinds)).result()


def _source(address: str, settings: Settings) -> ConfigSource:
    try:
        parsed = parse_address(address)
        if parsed.scheme is Scheme.MCP:
            return McpSinkClient.from_url(f"mcp://{parsed.host}:{parsed.port}")
        return build_source(
            parsed,
            default_namespace=settings.default_namespace,
            kube=settings.kube,
            etcd=settings.etcd,
        )
    except (AddressError, ValueError) as problem:
        raise BootstrapInputError(f"--config-source {address}: {problem}") from None


async def _read(
    addresses: Sequence[str],
    sources: Sequence[ConfigSource],
    timeout: float,
    kinds: frozenset[str],
) -> list[Config]:
    tasks = [asyncio.create_task(source.run()) for source in sources]
    try:
        deadline = time.monotonic() + timeout
        for address, source, task in zip(addresses, sources, tasks, strict=True):
            while not source.has_synced():
                if task.done():
                    raise BootstrapInputError(
                        f"--config-source {address}: stopped before it synced ({_failure(task)})"
                    )
                if time.monotonic() >= deadline:
                    raise BootstrapInputError(
                        f"--config-source {address}: not synced within {timeout:g} s{_why(source)}"
                    )
                await asyncio.sleep(SYNC_POLL)
        found: list[Config] = []
        for source in sources:
            for kind in sorted(kinds):
                found.extend(source.store.configs(kind))
        return found
    finally:
        for source in sources:
            with contextlib.suppress(Exception):
                source.close()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def _failure(task: asyncio.Task[None]) -> str:
    if task.cancelled():
        return "cancelled"
    problem = task.exception()
    return str(problem) if problem is not None else "it ended"


def _why(source: ConfigSource) -> str:
    """``: <reason>`` when the source says why it is unavailable."""
    availability = getattr(source, "availability", None)
    if availability is None:
        return ""
    state = availability()
    return f": {state.reason}" if not state.available and state.reason else ""

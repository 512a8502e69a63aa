"""The Istio objects ``pilothouse bootstrap`` reads: ProxyConfig and EnvoyFilter.

They come from ``--config`` paths (files or directories of Istio YAML, read as
``serve --config`` reads them; objects of other kinds are ignored) and from
``--config-source`` addresses, any that ``serve --config-source`` takes: ``etcd://``,
``k8s://``, ``xds://`` (MCP over xDS), ``mcp://`` and ``fs://``. Each source is started,
read once it has synced (its first full list), and closed; the ``PILOTHOUSE_ETCD_*`` and
``PILOTHOUSE_KUBECONFIG`` variables say how to reach a protected etcd or a cluster, as for
``serve``. A path that cannot be read (an ``fs://`` source's directory too, as ``serve``
refuses one), a source that has not synced within the timeout, or an object of these
kinds that does not validate is a :class:`BootstrapInputError` naming it: the bootstrap
would otherwise silently differ from what the mesh says.

Sources are read on a thread of their own, with their own event loop, so the readers
can be called from a running loop too. ``workload entry configure`` reads its
WorkloadGroup with the same readers (``kinds``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from pilothouse.cli.config_sources import SourceSetupError, check_config_directories
from pilothouse.config.load import Loader
from pilothouse.config.model import Config
from pilothouse.config.validation.report import Severity
from pilothouse.kinds.envoy_filter import KIND as ENVOY_FILTER
from pilothouse.kinds.proxy_config import KIND as PROXY_CONFIG
from pilothouse.kinds.table import SCHEMAS
from pilothouse.mcp.sink_client import McpSinkClient
from pilothouse.settings import Settings
from pilothouse.sources.addresses import (
    AddressError,
    ConfigSource,
    Scheme,
    build_source,
    parse_address,
)
from pilothouse.sources.fs_tree import RootUnavailable, scan_tree

READ_KINDS: Final = frozenset({PROXY_CONFIG.name, ENVOY_FILTER.name})
"""The kinds a bootstrap depends on."""
SYNC_POLL: Final = 0.02
"""How often a starting source is asked whether it has synced (seconds)."""


class BootstrapInputError(ValueError):
    """A path, source or object the bootstrap cannot use; the message names it."""


def configs_in_paths(
    paths: Sequence[Path], kinds: frozenset[str] = READ_KINDS, flag: str = "--config"
) -> list[Config]:
    """Every object of ``kinds`` (ProxyConfig and EnvoyFilter unless told) in ``paths``;
    an unreadable path or a rejected object of these kinds is an error (naming ``flag``),
    problems of other kinds are not."""
    loader = Loader(SCHEMAS, source="bootstrap", skip_plain=True)
    found: list[Config] = []
    for path in paths:
        try:
            files = scan_tree(path).files if path.is_dir() else [str(path)]
        except RootUnavailable as gone:
            raise BootstrapInputError(f"{flag} {path}: {gone.reason}") from None
        for file in files:
            try:
                result = loader.load_bytes(Path(file).read_bytes(), file)
            except OSError as unreadable:
                reason = unreadable.strerror or str(unreadable)
                raise BootstrapInputError(f"{flag} {file}: {reason}") from None
            for problem in result.problems:
                if problem.severity is Severity.ERROR and (
                    problem.key is None or problem.key.kind in kinds
                ):
                    where = f"{problem.file}:{problem.line}" if problem.line else problem.file
                    raise BootstrapInputError(f"{flag} {where}: {problem.message}")
            found.extend(c for c in result.configs if c.kind in kinds)
    return found


def configs_from_sources(
    addresses: Sequence[str],
    settings: Settings,
    timeout: float,
    kinds: frozenset[str] = READ_KINDS,
) -> list[Config]:
    """Every object of ``kinds`` (ProxyConfig and EnvoyFilter unless told) the sources at
    ``addresses`` hold, in address order; BootstrapInputError naming the first address
    that cannot be read."""
    if not addresses:
        return []
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

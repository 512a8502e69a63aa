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
can be called from a running loop too (:mod:`pilothouse.cli.bootstrap_sources`, imported
only when there are addresses to read). ``workload entry configure`` reads its
WorkloadGroup with the same readers (``kinds``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Final

from pilothouse.config.load import Loader
from pilothouse.config.model import Config
from pilothouse.config.validation.report import Severity
from pilothouse.kinds.envoy_filter import KIND as ENVOY_FILTER
from pilothouse.kinds.proxy_config import KIND as PROXY_CONFIG
from pilothouse.kinds.table import SCHEMAS
from pilothouse.settings import Settings
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
    # Starting sources needs their clients (etcd, Kubernetes, gRPC): imported only here,
    # so that reading --config paths alone loads none of them.
    from pilothouse.cli.bootstrap_sources import read_sources

    return read_sources(addresses, settings, timeout, kinds)

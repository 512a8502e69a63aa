"""Which config sources a `serve` runs, from flags and the mesh config (its MCP roles:
:mod:`pilothouse.cli.mcp_roles`).

Sources, in precedence order (the first to define an object wins, see the aggregate
store): ``--config`` directories, ``--config-source`` addresses, then the mesh config's
``configSources``, then (with ``--accept-mcp-sources``) whatever an MCP source that
dials in sends. Addresses: ``fs:///dir`` or a path, ``xds://host:port`` (MCP over xDS),
``mcp://host:port`` (a legacy MCP ResourceSource), ``etcd://host:port[,host:port…]/prefix``
(objects kept in etcd, see :mod:`pilothouse.sources.etcd`), ``k8s://`` (Istio custom
resources of a Kubernetes cluster, reached with ``--kubeconfig`` or in-cluster).

A file source's directory must exist when ``serve`` starts (:func:`check_config_directories`):
a typo in ``--config`` would otherwise serve an empty mesh and call it ready. One that
goes away later is *unavailable*, not empty, as ever.
"""

from __future__ import annotations

import contextlib
import difflib
import os
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path

from pilothouse.mcp.sink_client import McpSinkClient
from pilothouse.registry.kubernetes.registry_feeds import RegistryFeeds
from pilothouse.settings import Settings
from pilothouse.sources.addresses import (
    AddressError,
    ConfigSource,
    Scheme,
    build_source,
    parse_address,
)
from pilothouse.sources.kubernetes.client import KubeConfigError, check_config
from pilothouse.sources.kubernetes.mesh_config import KubeMeshConfig


class SourceSetupError(ValueError):
    """A config source or MCP role cannot be set up; the message says which and why."""


class MissingConfigDirectory(SourceSetupError):
    """A file source's directory does not exist at start (``serve`` exits 2)."""


def check_config_directories(settings: Settings, mesh_sources: Sequence[str] = ()) -> None:
    """Raise :class:`MissingConfigDirectory` for the first file source whose directory
    does not exist (or is not a directory), naming where it was given and, when a
    sibling's name is close, what was probably meant. Other addresses are left to
    :func:`config_sources`; an unreadable directory is left to its source, which reports
    it unavailable."""
    given: list[tuple[str, Iterable[str]]] = [
        ("--config", [str(path) for path in settings.config_dirs]),
        ("--config-source", rejoin_etcd_endpoints(settings.config_sources)),
        ("the mesh config's configSources", mesh_sources),
    ]
    for where, addresses in given:
        for address in addresses:
            try:
                parsed = parse_address(address)
            except AddressError:
                continue
            if parsed.scheme is not Scheme.FS:
                continue
            problem = _directory_problem(Path(parsed.path))
            if problem is not None:
                raise MissingConfigDirectory(f"{where} {address}: {problem}")


def _directory_problem(path: Path) -> str | None:
    try:
        seen = os.stat(path)
    except FileNotFoundError:
        return f"no such directory ({path.absolute()}){_did_you_mean(path)}"
    except NotADirectoryError:
        return f"no such directory ({path.absolute()}: a part of it is a file)"
    except OSError:
        return None  # the source says why it cannot read it, and keeps trying
    return None if stat.S_ISDIR(seen.st_mode) else f"not a directory ({path.absolute()})"


def _did_you_mean(path: Path) -> str:
    """``; did you mean examples?`` when a directory beside ``path`` has a close name."""
    parent = path.absolute().parent
    try:
        siblings = [entry.name for entry in os.scandir(parent) if entry.is_dir()]
    except OSError:
        return ""
    close = difflib.get_close_matches(path.name, siblings, n=1, cutoff=0.6)
    return f"; did you mean {path.with_name(close[0])}?" if close else ""


def config_sources(settings: Settings, mesh_sources: Sequence[str] = ()) -> list[ConfigSource]:
    """Every configured source, in precedence order (not started); raises
    :class:`SourceSetupError` (:class:`MissingConfigDirectory` for a file source's
    directory that does not exist)."""
    check_config_directories(settings, mesh_sources)
    addresses = [f"fs://{Path(d).resolve()}" for d in settings.effective_config_dirs()]
    addresses += rejoin_etcd_endpoints(settings.config_sources)
    addresses += list(mesh_sources)
    sources: list[ConfigSource] = []
    for address in addresses:
        try:
            parsed = parse_address(address)
            if parsed.scheme is Scheme.MCP:
                sources.append(McpSinkClient.from_url(f"mcp://{parsed.host}:{parsed.port}"))
            else:
                sources.append(
                    build_source(
                        parsed,
                        default_namespace=settings.default_namespace,
                        file_debounce=settings.file_debounce,
                        file_root_poll=settings.file_root_poll,
                        kube=settings.kube,
                        etcd=settings.etcd,
                    )
                )
        except AddressError as problem:
            raise SourceSetupError(f"config source {address!r}: {problem}") from None
    return sources


def uses_kubernetes(settings: Settings, mesh_sources: Sequence[str] = ()) -> bool:
    """Whether any configured source address is ``k8s://``."""
    for address in (*settings.config_sources, *mesh_sources):
        with contextlib.suppress(AddressError):
            if parse_address(address).scheme is Scheme.K8S:
                return True
    return False


async def kube_registry_feeds(
    settings: Settings, mesh_sources: Sequence[str] = ()
) -> RegistryFeeds | None:
    """The Kubernetes service registry's informers (not started) when a ``k8s://`` source
    is configured and ``PILOTHOUSE_KUBE_SERVICE_REGISTRY`` is not off; otherwise None."""
    if not settings.kube.service_registry or not uses_kubernetes(settings, mesh_sources):
        return None
    try:
        return await RegistryFeeds.open(settings.kube.kubeconfig or None)
    except KubeConfigError as problem:
        raise SourceSetupError(str(problem)) from None


async def kube_mesh_config(settings: Settings) -> KubeMeshConfig | None:
    """The followed ``istio`` ConfigMap, read once already, when a ``k8s://`` source is
    given on the command line (or ``PILOTHOUSE_CONFIG_SOURCES``) and ``--mesh`` is not;
    otherwise None."""
    if settings.mesh_file:
        return None
    if not uses_kubernetes(settings):
        return None
    try:
        check_config(settings.kube.kubeconfig or None)
    except KubeConfigError as problem:
        raise SourceSetupError(str(problem)) from None
    follower = KubeMeshConfig(settings.kube.kubeconfig or None, settings.kube.mesh_namespace)
    try:
        await follower.first(settings.kube.mesh_wait)
    except KubeConfigError as problem:
        raise SourceSetupError(str(problem)) from None
    return follower


def rejoin_etcd_endpoints(addresses: Sequence[str]) -> list[str]:
    """``PILOTHOUSE_CONFIG_SOURCES`` is split on commas, which also separate an etcd
    address's endpoints: a piece without a scheme right after an ``etcd://`` piece that
    has no prefix yet (``etcd://a:1`` then ``b:2/mesh``) is that address's next endpoint."""
    joined: list[str] = []
    for address in addresses:
        previous = joined[-1] if joined else ""
        if (
            "://" not in address
            and previous.startswith("etcd://")
            and "/" not in previous[len("etcd://") :]
        ):
            joined[-1] = f"{previous},{address}"
        else:
            joined.append(address)
    return joined

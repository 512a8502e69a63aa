"""The Telemetry objects of a push context, and the telemetry they give one proxy.

istiod's hierarchy (``pilot/pkg/model/telemetry.go``), lowest first: the oldest
Telemetry of the mesh's root namespace without a selector or targetRefs, the oldest of the
proxy's namespace without them, then every one of the proxy's namespace whose selector
or targetRefs pick the proxy, oldest first. Later levels win field by field:

- **access logging**, per mode (CLIENT: outbound listeners and gateways; SERVER: inbound
  listeners): the providers named by the last level that names any (MeshConfig
  ``defaultProviders.accessLogging`` before the first) are in scope; then every entry,
  in order, applies to the providers it names, or those of the entry before it:
  ``disabled: true`` turns them off, otherwise on with the filter of the last entry that
  named the provider with one. No Telemetry with access logging and no default
  provider: the legacy ``accessLogFile`` (when set).
- **tracing**, per mode: only the first in-scope provider is used (none: no tracing);
  ``randomSamplingPercentage``, ``customTags`` (the whole map),
  ``disableSpanReporting`` and ``useRequestIdForTraceSampling`` are overridden one by
  one. Sampling falls back to ``defaultConfig.tracing.sampling`` (above 100 counts as
  1), then 1 %. No Telemetry with tracing: MeshConfig ``enableTracing`` gives sampling
  and the legacy custom tags, with no provider.
- **metrics** need Istio's own proxy build (the ``istio.stats`` filter): accepted, named
  in :attr:`ProxyTelemetry.not_applied`, never turned into Envoy config.

A provider the mesh does not define, of the wrong type, not applied by pilothouse, or
whose ``service`` names no known host is skipped and named in
:attr:`ProxyTelemetry.not_applied` (shown on ``/debug/telemetryz``).

The merge of the specs is :mod:`pilothouse.push.telemetry_merge`; this module chooses the
objects, looks the providers up and resolves their collectors. The values are plain
frozen data: the listener builders take :class:`ModeTelemetry` as part of their cache
inputs.

A proxy's effective telemetry is a value in the resource cache, under
:class:`TelemetryInputs`: the :class:`TelemetryCandidates` of its namespace (the
Telemetry objects of the root namespace and of the namespace, by revision, and the
mesh's telemetry settings), its labels and node cluster, and what the providers'
services resolve to. The index only groups the candidates by namespace; a result
outlives the PushContext it was first made for, and an edit evicts the results of the
Telemetry objects it changes.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, NamedTuple

from pilothouse.api.istio.telemetry.v1alpha1 import telemetry_pb2
from pilothouse.config.mesh import MeshSettings
from pilothouse.config.model import Config, ConfigKey
from pilothouse.config.telemetry_providers import (
    LOG_PROVIDERS,
    TRACING_PROVIDERS,
    FileLog,
    MeshTelemetry,
    OtelLog,
    OtelTracer,
    UnappliedProvider,
    ZipkinTracer,
)
from pilothouse.kinds.telemetry import attaches, is_namespace_wide
from pilothouse.push.cache import ResourceCache
from pilothouse.push.inputs import ConfigRevision, FrozenInputs
from pilothouse.push.proxy import ProxyIdentity
from pilothouse.push.telemetry_merge import Layered, SpanTag, layer
from pilothouse.registry.model import Labels

CLIENT: Final = telemetry_pb2.CLIENT
SERVER: Final = telemetry_pb2.SERVER
DEFAULT_SAMPLING: Final = 1.0
"""istiod's ``PILOT_TRACE_SAMPLING`` default (percent)."""
_EARLIEST: Final = datetime.datetime.min.replace(tzinfo=datetime.UTC)

HostLookup = Callable[[str], Sequence[tuple[str, str]]]
"""(hostname, namespace) of each known service called hostname."""
ProviderHosts = tuple[tuple[str, tuple[tuple[str, str], ...]], ...]
"""What each host the mesh's providers name resolves to (see :data:`HostLookup`)."""


@dataclass(frozen=True, slots=True)
class Upstream:
    """Where a provider sends: the host its ``service`` resolves to, and its port (the
    builders name the cluster, ``outbound|<port>||<host>``)."""

    host: str
    port: int


@dataclass(frozen=True, slots=True)
class AccessLog:
    """One access log of a listener: its provider, its CEL filter, its collector."""

    provider: FileLog | OtelLog
    filter: str = ""
    upstream: Upstream | None = None


@dataclass(frozen=True, slots=True)
class TracingSettings:
    """An HTTP connection manager's tracing: the provider (None: sampling and tags only),
    its collector, the random sampling percentage, the tags."""

    provider: ZipkinTracer | OtelTracer | None
    upstream: Upstream | None
    sampling: float
    tags: tuple[SpanTag, ...] = ()
    service_name: str = ""
    """The span's service (opentelemetry): the proxy's node cluster."""
    max_path_tag_length: int = 0
    use_request_id: bool = True


@dataclass(frozen=True, slots=True)
class ModeTelemetry:
    """What the listeners of one mode (client or server side) carry."""

    access_logs: tuple[AccessLog, ...] = ()
    tracing: TracingSettings | None = None
    _hash: int = field(init=False, repr=False, compare=False, default=0)
    """Made once: it is part of the listener cache inputs of every proxy it applies to,
    hashed on each lookup."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "_hash", hash((self.access_logs, self.tracing)))

    def __hash__(self) -> int:
        return self._hash

    def __bool__(self) -> bool:
        return bool(self.access_logs) or self.tracing is not None


NO_TELEMETRY: Final = ModeTelemetry()


@dataclass(frozen=True, slots=True)
class ProxyTelemetry:
    """A proxy's effective telemetry, both modes, and what was accepted and not applied."""

    client: ModeTelemetry = NO_TELEMETRY
    server: ModeTelemetry = NO_TELEMETRY
    applied_from: tuple[ConfigKey, ...] = ()
    not_applied: tuple[str, ...] = ()


NOTHING: Final = ProxyTelemetry()
"""No Telemetry and no mesh-wide telemetry setting: listeners as they were."""


@dataclass(frozen=True, slots=True, eq=False)
class TelemetryCandidates(FrozenInputs):
    """What may apply to a proxy of one namespace: the Telemetry objects of the root
    namespace (none for a proxy of the root), then of the namespace, each oldest first,
    and the mesh's telemetry settings."""

    root: tuple[ConfigRevision, ...]
    own: tuple[ConfigRevision, ...]
    mesh: MeshTelemetry


class TelemetryInputs(NamedTuple):
    """What decides a proxy's telemetry: its namespace's candidates, its labels, its node
    cluster (an OpenTelemetry span's service) and what the providers' services resolve to.
    A named tuple: one is made and looked up for every listener generation (its first
    part, of a class of its own, keeps it apart from any other cache key)."""

    candidates: TelemetryCandidates
    labels: Labels
    node_cluster: str
    hosts: ProviderHosts


def select_telemetry(inputs: TelemetryInputs) -> ProxyTelemetry:
    """The effective telemetry the inputs give."""
    candidates, labels = inputs.candidates, inputs.labels
    chain = [
        *[c.config for c in candidates.root if is_namespace_wide(_spec(c.config))][:1],
        *[c.config for c in candidates.own if is_namespace_wide(_spec(c.config))][:1],
        *(
            c.config
            for c in candidates.own
            if not is_namespace_wide(_spec(c.config)) and attaches(_spec(c.config), labels)
        ),
    ]
    mesh = candidates.mesh
    if not chain and not _mesh_says_anything(mesh):
        return NOTHING
    resolved = dict(inputs.hosts)

    def hosts(host: str) -> Sequence[tuple[str, str]]:
        return resolved.get(host, ())

    notes: list[str] = []
    specs = [_spec(c) for c in chain]
    if any(s.metrics for s in specs):
        notes.append(
            "metrics: accepted; not applied (Istio's stats filter needs Istio's proxy build)"
        )
    client, server = (
        _resolve(layer(specs, mesh, mode), mesh, inputs.node_cluster, hosts, notes)
        for mode in (CLIENT, SERVER)
    )
    return ProxyTelemetry(client, server, tuple(c.key for c in chain), tuple(dict.fromkeys(notes)))


class TelemetryIndex:
    """The Telemetry objects of a context by namespace."""

    def __init__(self, configs: Iterable[Config], mesh: MeshSettings) -> None:
        root = self.root = mesh.root_namespace
        self.mesh: MeshTelemetry = mesh.telemetry
        self.by_key: dict[ConfigKey, Config] = {c.key: c for c in configs}
        found: dict[str, list[ConfigRevision]] = {}
        for config in sorted(self.by_key.values(), key=_oldest_first):
            revision = ConfigRevision.of(config)
            assert revision is not None
            found.setdefault(config.namespace, []).append(revision)
        own_root = tuple(found.get(root, ()))
        self._root_only = TelemetryCandidates(own_root, (), self.mesh)
        self._by_namespace: Mapping[str, TelemetryCandidates] = {
            space: (
                TelemetryCandidates((), own_root, self.mesh)
                if space == root
                else TelemetryCandidates(own_root, tuple(revisions), self.mesh)
            )
            for space, revisions in found.items()
        }
        self._hosts = tuple(
            dict.fromkeys(
                provider.service.rpartition("/")[2]
                for provider in self.mesh.providers
                if isinstance(provider, OtelLog | ZipkinTracer | OtelTracer)
            )
        )
        """The hosts the providers' services name."""

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TelemetryIndex):
            return NotImplemented
        return (self.root, self.mesh, self.by_key) == (other.root, other.mesh, other.by_key)

    __hash__ = None  # type: ignore[assignment]

    def selects(self, key: ConfigKey, proxy: ProxyIdentity) -> bool:
        """Whether the Telemetry ``key`` (if held here) applies to ``proxy``: one of the
        root namespace without a selector applies to every proxy; otherwise it must be of
        the proxy's namespace and, if it names workloads, select the proxy."""
        config = self.by_key.get(key)
        if config is None:
            return False
        spec = _spec(config)
        if is_namespace_wide(spec):
            return config.namespace in (self.root, proxy.namespace)
        return config.namespace == proxy.namespace and attaches(spec, proxy.labels)

    def providers(self, hosts: HostLookup) -> ProviderHosts:
        """What ``hosts(hostname)`` (the (hostname, namespace) of each known service of
        that name) says of each host the providers' ``service`` names."""
        return tuple((h, tuple(hosts(h))) for h in self._hosts) if self._hosts else ()

    def inputs(self, proxy: ProxyIdentity, providers: ProviderHosts) -> TelemetryInputs | None:
        """What decides the telemetry of ``proxy`` (None: nothing applies, no telemetry),
        given :meth:`providers`."""
        candidates = self._by_namespace.get(proxy.namespace, self._root_only)
        if not candidates.root and not candidates.own and not _mesh_says_anything(self.mesh):
            return None
        return TelemetryInputs(candidates, proxy.labels, proxy.node_cluster, providers)

    def for_proxy(
        self, proxy: ProxyIdentity, providers: ProviderHosts, cache: ResourceCache | None
    ) -> ProxyTelemetry:
        """The effective telemetry of ``proxy`` (given :meth:`providers`): worked out once
        per distinct :class:`TelemetryInputs` and kept in ``cache`` (None: worked out now,
        kept nowhere, for a one-off question)."""
        inputs = self.inputs(proxy, providers)
        if inputs is None:
            return NOTHING
        if cache is None:
            return select_telemetry(inputs)
        return cache.value(inputs, lambda: select_telemetry(inputs))


def _resolve(
    layered: Layered,
    mesh: MeshTelemetry,
    node_cluster: str,
    hosts: HostLookup,
    notes: list[str],
) -> ModeTelemetry:
    logs: list[AccessLog] = []
    for name, expression in layered.logs:
        provider = _usable(mesh, name, LOG_PROVIDERS, "access logging", notes)
        if isinstance(provider, FileLog):
            logs.append(AccessLog(provider, expression))
        elif isinstance(provider, OtelLog):
            upstream = _upstream(provider.name, provider.service, provider.port, hosts, notes)
            if upstream is not None:
                logs.append(AccessLog(provider, expression, upstream))
    if layered.legacy_log and mesh.access_log_file:
        legacy = FileLog("mesh accessLogFile", mesh.access_log_file, mesh.envoy_format)
        logs.append(AccessLog(legacy))
    return ModeTelemetry(tuple(logs), _tracing(layered, mesh, node_cluster, hosts, notes))


def _tracing(
    layered: Layered,
    mesh: MeshTelemetry,
    node_cluster: str,
    hosts: HostLookup,
    notes: list[str],
) -> TracingSettings | None:
    legacy_tags = tuple(SpanTag(t.name, t.kind, t.value, t.default) for t in mesh.custom_tags)
    if layered.tracing is None:
        if not mesh.enable_tracing:
            return None
        return TracingSettings(
            None, None, _mesh_sampling(mesh), legacy_tags,
            max_path_tag_length=mesh.max_path_tag_length,
        )  # fmt: skip
    name, fields = layered.tracing
    if name is None or fields.get("disabled"):
        return None
    found = _usable(mesh, name, TRACING_PROVIDERS, "tracing", notes)
    if not isinstance(found, ZipkinTracer | OtelTracer):
        return None
    upstream = _upstream(found.name, found.service, found.port, hosts, notes)
    if upstream is None:
        return None
    sampling = fields.get("sampling")
    tags = fields.get("tags")
    return TracingSettings(
        found,
        upstream,
        sampling if sampling is not None else _mesh_sampling(mesh),
        tags if tags is not None else legacy_tags,
        node_cluster if isinstance(found, OtelTracer) else "",
        found.max_tag_length or mesh.max_path_tag_length,
        fields.get("use_request_id", True),
    )


def _usable(
    mesh: MeshTelemetry, name: str, kinds: tuple[type, ...], purpose: str, notes: list[str]
) -> object | None:
    found = mesh.provider(name)
    if found is None:
        notes.append(f"{purpose}: provider {name!r} is not defined in extensionProviders")
        return None
    if isinstance(found, UnappliedProvider):
        notes.append(f"{purpose}: provider {name!r} ({found.type}) accepted; not applied")
        return None
    if not isinstance(found, kinds):
        notes.append(f"{purpose}: provider {name!r} cannot be used for {purpose}")
        return None
    return found


def _upstream(
    name: str,
    service: str,
    port: int,
    hosts: HostLookup,
    notes: list[str],
) -> Upstream | None:
    """istiod's ``LookupCluster``: ``namespace/host`` or a host known in one namespace."""
    namespace, _, host = service.rpartition("/")
    found = [h for h in hosts(host) if not namespace or h[1] == namespace]
    if len(found) != 1 or not port:
        why = "is not a known service" if not found else "names services in several namespaces"
        if not port:
            why = "has no port"
        notes.append(f"provider {name!r}: service {service!r} {why}; skipped")
        return None
    return Upstream(found[0][0], port)


def _mesh_sampling(mesh: MeshTelemetry) -> float:
    if mesh.sampling is None:
        return DEFAULT_SAMPLING
    return 1.0 if mesh.sampling > 100.0 else mesh.sampling


def _mesh_says_anything(mesh: MeshTelemetry) -> bool:
    return bool(
        mesh.default_logging or mesh.default_tracing or mesh.access_log_file or mesh.enable_tracing
    )


def _spec(config: Config) -> telemetry_pb2.Telemetry:
    spec = config.spec
    assert isinstance(spec, telemetry_pb2.Telemetry)
    return spec


def _oldest_first(config: Config) -> tuple[datetime.datetime, str, str]:
    created = config.creation_time or _EARLIEST
    if created.tzinfo is None:
        created = created.replace(tzinfo=datetime.UTC)
    return (created, config.name, config.namespace)

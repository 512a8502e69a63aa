"""The EnvoyFilters of a push context, and which of their patches apply to a proxy.

istiod's selection (``push_context.go`` EnvoyFilters, ``policyattachment.go``): the
candidates are the filters of the mesh's root namespace and of the proxy's namespace; a
filter with ``targetRefs`` applies only to a Kubernetes Gateway proxy (label
``gateway.networking.k8s.io/gateway-name``) of its own namespace named by a ``Gateway``
ref; otherwise ``workloadSelector`` labels must all be the proxy's (none: every proxy of
the namespace). Each patch's ``match.proxy`` (an RE2 on the proxy's Istio version, and
node metadata values) is checked too. Filters are ordered by priority, then root
namespace first, then creation time, then ``name.namespace``; patches keep their order
within a filter.

Values are decoded into Envoy messages once, when the index is built (only when an
EnvoyFilter changed); a patch whose value does not decode is dropped, as istiod does.
What a proxy gets (:class:`ProxyPatches`) is a frozen value that names each patch by its
filter's revision and position, so it is a cache input: equal for proxies that get the
same patches, and naming the EnvoyFilters it came from.

Which patches a proxy gets is a value in the resource cache, under
:class:`EnvoyFilterInputs`: the :class:`FilterCandidates` of its namespace (every filter
of the namespace and of the root, by revision) and what of the proxy the candidates read
(namespace, labels, and the Istio version and metadata values only when a candidate's
``match.proxy`` reads them, so that proxies of one workload share one entry). The index
only groups the candidates by namespace; a selection outlives the PushContext it was
first made for, and an edit evicts the selections of the filters it changes.
"""

from __future__ import annotations

import datetime
import functools
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, NamedTuple

import re2

from pilothouse.api.istio.networking.v1alpha3.envoy_filter_pb2 import EnvoyFilter
from pilothouse.config.envoy_values import ValueProblem, decode_value
from pilothouse.config.mesh import MeshSettings
from pilothouse.config.model import Config, ConfigKey
from pilothouse.config.validation.envoy_filter import LIST_INSERTS
from pilothouse.config.validation.regex import MAX_REGEX_LENGTH
from pilothouse.kinds.envoy_filter import GATEWAY_NAME_LABEL, PATCHED_TYPES, target_gateways
from pilothouse.push.cache import ResourceCache
from pilothouse.push.envoy_filter_status import PatchOutcomes, PatchReport, patch_statuses
from pilothouse.push.inputs import FrozenInputs
from pilothouse.push.proxy import ProxyIdentity
from pilothouse.registry.model import Labels

log = logging.getLogger("pilothouse.push")

_EARLIEST: Final = datetime.datetime.min.replace(tzinfo=datetime.UTC)
Patch = EnvoyFilter.Patch


@dataclass(frozen=True, slots=True)
class PatchRule:
    """One patch of one EnvoyFilter, as the patching code reads it.

    Compared by the filter's key, source and resource version and the patch's position
    (every edit changes the version); the decoded parts ride along uncompared.
    """

    key: ConfigKey
    source: str
    resource_version: str
    position: int
    apply_to: int
    operation: int
    match: Any = field(compare=False, repr=False)
    """The patch's ``EnvoyConfigObjectMatch`` (``{context: ANY}`` when it had none)."""
    value: Any = field(compare=False, repr=False)
    """The Envoy message of its value (None for REMOVE)."""

    @property
    def filter_name(self) -> str:
        """``namespace/name`` of its EnvoyFilter, as logs and metrics name it."""
        return f"{self.key.namespace}/{self.key.name}"


@dataclass(frozen=True, slots=True)
class ProxyPatches:
    """The patches that apply to one proxy, in the order they run."""

    rules: tuple[PatchRule, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.rules)

    def of(self, apply_to: Iterable[int]) -> ProxyPatches:
        """Only the patches of these applyTos (same order)."""
        wanted = frozenset(apply_to)
        return ProxyPatches(tuple(r for r in self.rules if r.apply_to in wanted))


NO_PATCHES: Final = ProxyPatches()


@dataclass(frozen=True, slots=True)
class _Filter:
    """One EnvoyFilter as selection reads it: compared by key, source and resource version
    (every edit changes the version), its decoded parts riding along."""

    key: ConfigKey
    source: str
    resource_version: str
    config: Config = field(compare=False, repr=False)
    rules: tuple[PatchRule, ...] = field(compare=False, repr=False)
    selector: Mapping[str, str] | None = field(compare=False, repr=False)
    gateways: frozenset[str] | None = field(compare=False, repr=False)
    """Gateway names its targetRefs name (None: it has none)."""
    versions: Mapping[str, Any] = field(compare=False, repr=False)
    """Its patches' ``match.proxy.proxyVersion`` patterns, compiled (None: unusable)."""


@dataclass(frozen=True, slots=True, eq=False)
class FilterCandidates(FrozenInputs):
    """What may apply to a proxy of one namespace: the filters of the root namespace then
    of the namespace, and the root's name (it orders them)."""

    root: str
    filters: tuple[_Filter, ...]
    reads_version: bool = field(default=False, compare=False)
    """Whether a candidate's patch matches on the proxy's Istio version."""
    metadata_keys: tuple[str, ...] = field(default=(), compare=False)
    """The node metadata keys the candidates' patches match on, sorted."""

    @classmethod
    def of(cls, root: str, filters: tuple[_Filter, ...]) -> FilterCandidates:
        proxies = [r.match.proxy for f in filters for r in f.rules if r.match.HasField("proxy")]
        return cls(
            root,
            filters,
            any(p.proxy_version for p in proxies),
            tuple(sorted({k for p in proxies for k in p.metadata})),
        )


NO_FILTERS: Final = FilterCandidates.of("", ())


class EnvoyFilterInputs(NamedTuple):
    """What decides which patches apply to a proxy: its namespace's candidates, its
    namespace and labels, and the Istio version and metadata values the candidates'
    ``match.proxy`` read (empty when none does). A named tuple: one is made and looked up
    for every proxy and generated type (its first part, of a class of its own, keeps it
    apart from any other cache key)."""

    candidates: FilterCandidates
    namespace: str
    labels: Labels
    istio_version: str
    metadata: tuple[tuple[str, str | None], ...]


def proxy_facts(
    candidates: FilterCandidates, proxy: ProxyIdentity
) -> tuple[str, tuple[tuple[str, str | None], ...]]:
    """The Istio version and the metadata values of ``proxy`` that the candidates'
    patches match on (empty when none does)."""
    if not candidates.reads_version and not candidates.metadata_keys:
        return "", ()
    metadata = proxy.metadata or {}
    version = ""
    if candidates.reads_version:
        version = proxy.istio_version or metadata.get("ISTIO_VERSION", "")
    return version, tuple([(k, metadata.get(k)) for k in candidates.metadata_keys])


def select_patches(inputs: EnvoyFilterInputs) -> ProxyPatches:
    """The candidates' patches that apply, in istiod's order."""
    candidates, namespace, labels = inputs.candidates, inputs.namespace, inputs.labels
    root = candidates.root
    chosen = [f for f in candidates.filters if _attaches(f, namespace, labels)]
    chosen.sort(key=functools.partial(_order, root))
    metadata = dict(inputs.metadata)
    rules = tuple(
        r
        for f in chosen
        for r in f.rules
        if _proxy_matches(r.match, f.versions, inputs.istio_version, metadata)
    )
    return ProxyPatches(rules) if rules else NO_PATCHES


class EnvoyFilterIndex:
    """The EnvoyFilters of a context by namespace, their values decoded once."""

    def __init__(self, configs: Iterable[Config], mesh: MeshSettings) -> None:
        root = self.root = mesh.root_namespace
        found: dict[str, list[_Filter]] = {}
        self.by_key: dict[ConfigKey, Config] = {}
        self._wrapped: dict[ConfigKey, _Filter] = {}
        for config in configs:
            self.by_key[config.key] = config
            wrapped = self._wrapped[config.key] = _wrap(config)
            found.setdefault(config.namespace, []).append(wrapped)
        own_root = tuple(found.get(root, ()))
        self._root_only = FilterCandidates.of(root, own_root) if own_root else NO_FILTERS
        self._by_namespace: Mapping[str, FilterCandidates] = {
            space: FilterCandidates.of(root, (*own_root, *filters))
            for space, filters in found.items()
            if space != root
        }
        self.outcomes = PatchOutcomes()
        """What each patch did for the proxies generated from this index."""

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, EnvoyFilterIndex):
            return NotImplemented
        return self.root == other.root and self.by_key == other.by_key

    __hash__ = None  # type: ignore[assignment]

    def candidates(self, namespace: str) -> FilterCandidates:
        """What may apply to a proxy of ``namespace``."""
        return self._by_namespace.get(namespace, self._root_only)

    def inputs(self, proxy: ProxyIdentity) -> EnvoyFilterInputs | None:
        """What decides the patches of ``proxy`` (None: no candidate, no patch)."""
        candidates = self.candidates(proxy.namespace)
        if not candidates.filters:
            return None
        version, metadata = proxy_facts(candidates, proxy)
        return EnvoyFilterInputs(candidates, proxy.namespace, proxy.labels, version, metadata)

    def for_proxy(self, proxy: ProxyIdentity, cache: ResourceCache | None) -> ProxyPatches:
        """The patches that apply to ``proxy``, in istiod's order: chosen once per distinct
        :class:`EnvoyFilterInputs` and kept in ``cache`` (None: chosen now, kept nowhere,
        for a one-off question)."""
        inputs = self.inputs(proxy)
        if inputs is None:  # no EnvoyFilter for it: asked per proxy and type, keep it cheap
            return NO_PATCHES
        if cache is None:
            return select_patches(inputs)
        return cache.value(inputs, lambda: select_patches(inputs))

    def selects(self, key: ConfigKey, proxy: ProxyIdentity) -> bool:
        """Whether the EnvoyFilter ``key`` (if this index holds it) applies to ``proxy``
        (its namespace or the root, and its selector or targetRefs; not its patches'
        ``match.proxy``: a proxy it selects is pushed, patched or not). What
        :mod:`pilothouse.push.selected_workloads` asks of it."""
        found = self._wrapped.get(key)
        if found is None or key.namespace not in (proxy.namespace, self.root):
            return False
        return _attaches(found, proxy.namespace, proxy.labels)

    def patching(self, proxy: ProxyIdentity, type_url: str) -> list[str]:
        """``ns/name`` of the EnvoyFilters with patches of ``type_url`` for ``proxy``, in
        the order they run (to name them beside a NACK of that type)."""
        rules = self.for_proxy(proxy, None).rules
        wanted = (r.filter_name for r in rules if PATCHED_TYPES.get(r.apply_to) == type_url)
        return list(dict.fromkeys(wanted))

    def statuses(self) -> list[PatchReport]:
        """Every patch of every EnvoyFilter here, with what it did (see
        :mod:`pilothouse.push.envoy_filter_status`)."""
        kept = [
            (r.key, r.position)
            for f in self._wrapped.values()
            for r in f.rules
            if r.apply_to in PATCHED_TYPES or _served_over_ecds(r)
        ]
        return patch_statuses(self.by_key.values(), self.outcomes, kept)


def _served_over_ecds(rule: PatchRule) -> bool:
    """An EXTENSION_CONFIG ADD: the one EXTENSION_CONFIG operation istiod serves (ECDS)."""
    return rule.apply_to == EnvoyFilter.EXTENSION_CONFIG and rule.operation == Patch.ADD


def _order(root: str, found: _Filter) -> tuple[int, int, datetime.datetime, str]:
    config = found.config
    spec: Any = config.spec
    created = config.creation_time or _EARLIEST
    if created.tzinfo is None:
        created = created.replace(tzinfo=datetime.UTC)
    return (
        int(spec.priority),
        0 if config.namespace == root else 1,
        created,
        f"{config.name}.{config.namespace}",
    )


def _attaches(found: _Filter, namespace: str, labels: Labels) -> bool:
    gateway_name = labels.get(GATEWAY_NAME_LABEL)
    if found.gateways is not None:
        return (
            gateway_name is not None
            and found.config.namespace == namespace
            and gateway_name in found.gateways
        )
    selector = found.selector
    return not selector or all(labels.get(k) == v for k, v in selector.items())


def _proxy_matches(
    match: Any, versions: Mapping[str, Any], version: str, metadata: Mapping[str, str | None]
) -> bool:
    if not match.HasField("proxy"):
        return True
    wanted = match.proxy
    if wanted.proxy_version:
        pattern = versions.get(wanted.proxy_version)
        if not version or pattern is None or pattern.search(version) is None:
            return False
    return all(metadata.get(k) == v for k, v in wanted.metadata.items())


def _compiled(rules: Iterable[PatchRule]) -> Mapping[str, Any]:
    """The rules' ``proxyVersion`` patterns that compile (validation refuses the others;
    one too long or not RE2 never matches)."""
    found: dict[str, Any] = {}
    for rule in rules:
        pattern = rule.match.proxy.proxy_version if rule.match.HasField("proxy") else ""
        if pattern and pattern not in found and len(pattern) <= MAX_REGEX_LENGTH:
            try:
                found[pattern] = re2.compile(pattern)
            except re2.error:
                continue
    return found


def _wrap(config: Config) -> _Filter:
    spec: Any = config.spec
    rules: list[PatchRule] = []
    for position, patch in enumerate(spec.config_patches):
        rule = _rule(config, position, patch)
        if rule is not None:
            rules.append(rule)
    selector = dict(spec.workload_selector.labels) if spec.HasField("workload_selector") else None
    return _Filter(
        config.key,
        config.origin.source,
        config.resource_version,
        config,
        tuple(rules),
        selector,
        target_gateways(spec),
        _compiled(rules),
    )


def _rule(config: Config, position: int, patch: Any) -> PatchRule | None:
    if not patch.HasField("patch") or patch.apply_to == EnvoyFilter.INVALID:
        return None
    operation = patch.patch.operation
    if operation == Patch.INVALID:
        return None
    match = patch.match if patch.HasField("match") else EnvoyFilter.EnvoyConfigObjectMatch()
    if match.context == EnvoyFilter.WAYPOINT:
        return None
    if operation in (Patch.INSERT_BEFORE, Patch.INSERT_AFTER, Patch.INSERT_FIRST) and (
        patch.apply_to not in LIST_INSERTS
    ):
        operation = Patch.ADD
    value = None
    if operation != Patch.REMOVE:
        try:
            value = decode_value(patch.apply_to, patch.patch.value)
        except ValueProblem as problem:
            log.warning(
                "EnvoyFilter patch dropped",
                extra={"config": str(config.key), "patch": position, "reason": str(problem)},
            )
            return None
    return PatchRule(
        config.key,
        config.origin.source,
        config.resource_version,
        position,
        patch.apply_to,
        operation,
        match,
        value,
    )

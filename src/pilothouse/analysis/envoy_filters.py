"""EnvoyFilter patches whose effect depends on order or can never happen: a relative
operation without a priority on a filter another EnvoyFilter patches too (IST0151), a
REMOVE or REPLACE of a filter nothing has (PH0111), and an INSERT_BEFORE or INSERT_AFTER
next to a filter nothing has (PH0112).

"Nothing has" is judged by name, for listener, network and HTTP filters: the filters
pilothouse's builders write (:data:`GENERATED_FILTERS`; a unit test holds the list to
the builders' names and to the golden outputs), a WasmPlugin's filter, and the filters
EnvoyFilters add. Listener, filter-chain, route and cluster matches name things the
mesh's services decide; they are not judged here (``/debug/envoyfilterz`` shows a patch
that matched nothing in the config actually generated).

Two EnvoyFilters may patch the same proxy when they are in one namespace or one is in
the root namespace, unless their workload selectors disagree on a label or their
``targetRefs`` name different Gateways. Istio warns about every relative operation
without a priority; this analyzer only where another EnvoyFilter of the same priority
touches the same filter, which is where the order changes the result.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final

from pilothouse.analysis.mesh_view import MeshView
from pilothouse.analysis.messages import (
    ENVOY_FILTER_INSERT_ANCHOR_NOT_FOUND,
    ENVOY_FILTER_PATCH_FINDS_NOTHING,
    ENVOY_FILTER_USES_RELATIVE_OPERATION,
    Message,
    about,
)
from pilothouse.api.istio.networking.v1alpha3.envoy_filter_pb2 import EnvoyFilter
from pilothouse.config.model import Config
from pilothouse.kinds.envoy_filter import target_gateways
from pilothouse.kinds.wasm_plugin import is_http, resource_name

Patch = EnvoyFilter.Patch

GENERATED_FILTERS: Final[Mapping[int, frozenset[str]]] = MappingProxyType(
    {
        EnvoyFilter.LISTENER_FILTER: frozenset({"envoy.filters.listener.tls_inspector"}),
        EnvoyFilter.NETWORK_FILTER: frozenset(
            {
                "envoy.filters.network.http_connection_manager",
                "envoy.filters.network.tcp_proxy",
                "envoy.filters.network.rbac",
            }
        ),
        EnvoyFilter.HTTP_FILTER: frozenset(
            {
                "envoy.filters.http.router",
                "envoy.filters.http.fault",
                "envoy.filters.http.cors",
                "envoy.filters.http.grpc_web",
                "envoy.filters.http.jwt_authn",
                "envoy.filters.http.rbac",
            }
        ),
    }
)
"""applyTo → the names of the filters of that class pilothouse's builders can write."""

RELATIVE: Final = frozenset({Patch.INSERT_BEFORE, Patch.INSERT_AFTER, Patch.REPLACE, Patch.REMOVE})
"""Istio's relative operations: their effect depends on what earlier patches did."""
FINDING: Final = frozenset({Patch.REMOVE, Patch.REPLACE})
ANCHORED: Final = frozenset({Patch.INSERT_BEFORE, Patch.INSERT_AFTER})
ADDING: Final = frozenset({Patch.ADD, Patch.INSERT_BEFORE, Patch.INSERT_AFTER, Patch.INSERT_FIRST})
_CLASS_NAMES: Final[Mapping[int, str]] = {
    EnvoyFilter.LISTENER_FILTER: "listener filter",
    EnvoyFilter.NETWORK_FILTER: "network filter",
    EnvoyFilter.HTTP_FILTER: "HTTP filter",
}


@dataclass(frozen=True, slots=True)
class NamedPatch:
    """One patch of a filter class: what it does, the filter its match names (and where
    that is written), and the name of the filter its value adds."""

    config: Config
    index: int
    apply_to: int
    operation: int
    target: str
    target_path: str
    added: str

    @property
    def what(self) -> str:
        return f"{Patch.Operation.Name(self.operation)} {EnvoyFilter.ApplyTo.Name(self.apply_to)}"

    @property
    def path(self) -> str:
        return f"spec.configPatches[{self.index}]"


def named_patches(config: Config) -> Iterator[NamedPatch]:
    """The patches of ``config`` that apply to listener, network or HTTP filters."""
    spec: Any = config.spec
    for index, patch in enumerate(spec.config_patches):
        if patch.apply_to not in GENERATED_FILTERS or not patch.HasField("patch"):
            continue
        target, where = _target(patch)
        value = patch.patch.value
        added = value.fields["name"].string_value if "name" in value.fields else ""
        path = f"spec.configPatches[{index}].match.listener.{where}" if where else ""
        yield NamedPatch(config, index, patch.apply_to, patch.patch.operation, target, path, added)


def _target(patch: Any) -> tuple[str, str]:
    """The filter name ``patch``'s match names, and its path under ``match.listener``."""
    if patch.match.WhichOneof("object_types") != "listener":
        return "", ""
    listener = patch.match.listener
    if patch.apply_to == EnvoyFilter.LISTENER_FILTER:
        return listener.listener_filter, "listenerFilter"
    if patch.apply_to == EnvoyFilter.NETWORK_FILTER:
        return listener.filter_chain.filter.name, "filterChain.filter.name"
    return listener.filter_chain.filter.sub_filter.name, "filterChain.filter.subFilter.name"


def analyze(view: MeshView) -> Iterator[Message]:
    filters = view.of_kind("EnvoyFilter")
    patches = [p for config in filters for p in named_patches(config)]
    known = {apply_to: set(names) for apply_to, names in GENERATED_FILTERS.items()}
    for plugin in view.of_kind("WasmPlugin"):
        http = is_http(plugin.spec)  # type: ignore[arg-type]
        kind = EnvoyFilter.HTTP_FILTER if http else EnvoyFilter.NETWORK_FILTER
        known[kind].add(resource_name(plugin.namespace, plugin.name))
    for patch in patches:
        if patch.operation in ADDING and patch.added:
            known[patch.apply_to].add(patch.added)
    for patch in patches:
        yield from _never_applies(patch, known[patch.apply_to])
    yield from _order_dependent(view, patches)


def _never_applies(patch: NamedPatch, known: set[str]) -> Iterator[Message]:
    kind = _CLASS_NAMES[patch.apply_to]
    if patch.operation in FINDING:
        if not patch.target:
            reason = f"its match names no {kind} (it removes or replaces one by name)"
            yield about(
                patch.config, ENVOY_FILTER_PATCH_FINDS_NOTHING, patch.what, reason,
                path=patch.path,
            )  # fmt: skip
        elif patch.target not in known:
            reason = (
                "no generated configuration and no other EnvoyFilter has the"
                f' {kind} "{patch.target}"'
            )
            yield about(
                patch.config, ENVOY_FILTER_PATCH_FINDS_NOTHING, patch.what, reason,
                path=patch.target_path,
            )  # fmt: skip
    elif patch.operation in ANCHORED and patch.target and patch.target not in known:
        yield about(
            patch.config, ENVOY_FILTER_INSERT_ANCHOR_NOT_FOUND, patch.what, kind, patch.target,
            path=patch.target_path,
        )  # fmt: skip


def _order_dependent(view: MeshView, patches: list[NamedPatch]) -> Iterator[Message]:
    touching: dict[tuple[int, str], list[NamedPatch]] = {}
    for patch in patches:
        for name in {patch.target, patch.added} - {""}:
            touching.setdefault((patch.apply_to, name), []).append(patch)
    for patch in patches:
        if patch.operation not in RELATIVE or not patch.target or _priority(patch.config):
            continue
        for other in touching[(patch.apply_to, patch.target)]:
            if (
                other.config.key != patch.config.key
                and not _priority(other.config)
                and may_share_proxy(patch.config, other.config, view.mesh.root_namespace)
            ):
                yield about(
                    patch.config, ENVOY_FILTER_USES_RELATIVE_OPERATION,
                    _CLASS_NAMES[patch.apply_to], patch.target,
                    Patch.Operation.Name(patch.operation),
                    f"{other.config.namespace}/{other.config.name}",
                    path=f"{patch.path}.patch.operation",
                )  # fmt: skip
                break


def _priority(config: Config) -> int:
    spec: Any = config.spec
    return int(spec.priority)


def may_share_proxy(first: Config, second: Config, root_namespace: str) -> bool:
    """Whether some proxy could get both EnvoyFilters (by namespace, selector labels and
    targetRefs; a selector and targetRefs are taken to overlap)."""
    namespaces = {first.namespace, second.namespace}
    if len(namespaces) > 1 and root_namespace not in namespaces:
        return False
    one: Any = first.spec
    two: Any = second.spec
    gateways, others = target_gateways(one), target_gateways(two)
    if gateways is not None and others is not None and not gateways & others:
        return False
    if one.HasField("workload_selector") and two.HasField("workload_selector"):
        wanted, also = one.workload_selector.labels, two.workload_selector.labels
        return all(also[k] == v for k, v in wanted.items() if k in also)
    return True

"""WasmPlugin: a proxy-wasm module run as an HTTP (or network) filter of the proxies it selects.

Only ``extensions.istio.io/v1alpha1``. Selection is istiod's (``policyattachment.go``):
one in the mesh's root namespace applies to every proxy, one elsewhere to its
namespace's proxies, narrowed by ``selector`` labels; one with ``targetRefs`` applies
only to a Kubernetes Gateway proxy (label ``gateway.networking.k8s.io/gateway-name``) of
its own namespace that a ``Gateway`` ref names. A change concerns the proxies its old or
new version selects (asked of the push context's ``wasm_plugins`` index), and changes
their listeners (LDS: the filter that names the plugin) and its extension config (ECDS);
never a cluster or a route. One that reached a push context before the request naming it
did concerns every proxy of its namespace (or of the mesh, from the root).

What a plugin means for one listener (:func:`runs_on`): every ``match`` entry is a
(mode, ports) pair and the plugin runs where any entry fits: mode CLIENT on outbound and
gateway listeners, SERVER on inbound ones, unset or CLIENT_AND_SERVER on both; ports
empty or naming the listener's port. Within a phase, plugins run by ``priority``
descending, an unset priority last, ties in creation order (:func:`phase_order`). Each is
delivered to Envoy as the extension config :func:`resource_name` names (istiod's name
before 1.30, when WasmPlugins were not yet translated to TrafficExtensions).
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping
from typing import Final

from pilothouse.api.istio.extensions.v1alpha1 import wasm_pb2
from pilothouse.api.istio.type.v1beta1.selector_pb2 import WorkloadMode
from pilothouse.config.model import Config
from pilothouse.config.validation.wasm_plugin import validate_wasm_plugin
from pilothouse.kinds.envoy_filter import GATEWAY_NAME_LABEL
from pilothouse.kinds.groups import extensions
from pilothouse.kinds.kind import Audience, Kind
from pilothouse.protocol.type_urls import CDS, RDS

RESOURCE_PREFIX: Final = "extensions.istio.io/wasmplugin/"
"""istiod's prefix of a WasmPlugin's ECDS resource and HTTP filter name."""
PHASES: Final = (
    wasm_pb2.AUTHN,
    wasm_pb2.AUTHZ,
    wasm_pb2.STATS,
    wasm_pb2.UNSPECIFIED_PHASE,
)
"""The phases in the order their plugins appear in the HTTP filter chain."""
_EARLIEST: Final = datetime.datetime.min.replace(tzinfo=datetime.UTC)


def resource_name(namespace: str, name: str) -> str:
    """``extensions.istio.io/wasmplugin/<namespace>.<name>``."""
    return f"{RESOURCE_PREFIX}{namespace}.{name}"


def plugin_name(namespace: str, name: str) -> str:
    """``<namespace>.<name>``: the name Envoy's PluginConfig carries."""
    return f"{namespace}.{name}"


def is_http(spec: wasm_pb2.WasmPlugin) -> bool:
    """Whether it is an HTTP filter (type HTTP or unset)."""
    return spec.type in (wasm_pb2.UNSPECIFIED_PLUGIN_TYPE, wasm_pb2.HTTP)


def runs_on(spec: wasm_pb2.WasmPlugin, server_side: bool, port: int) -> bool:
    """Whether the plugin runs on a listener: an inbound one (``server_side``) or an
    outbound or gateway one, of ``port`` (0: a listener of no single port, where istiod
    applies every plugin)."""
    if not spec.match:
        return True
    wanted = WorkloadMode.SERVER if server_side else WorkloadMode.CLIENT
    for entry in spec.match:
        if entry.mode not in (WorkloadMode.UNDEFINED, WorkloadMode.CLIENT_AND_SERVER, wanted):
            continue
        if not entry.ports or port == 0 or any(p.number == port for p in entry.ports):
            return True
    return False


def target_gateways(spec: wasm_pb2.WasmPlugin) -> frozenset[str] | None:
    """The Kubernetes Gateways its ``targetRefs`` (or ``targetRef``) name (None: it has
    none, its selector decides)."""
    refs = list(spec.target_refs)
    if spec.HasField("target_ref"):
        refs.append(spec.target_ref)
    if not refs:
        return None
    return frozenset(r.name for r in refs if r.kind == "Gateway")


def attaches(config: Config, namespace: str, labels: Mapping[str, str]) -> bool:
    """Whether the plugin ``config`` applies to a proxy of ``namespace`` with ``labels``
    (the caller has checked that it is in that namespace or the root one)."""
    spec = config.spec
    assert isinstance(spec, wasm_pb2.WasmPlugin)
    gateways = target_gateways(spec)
    if gateways is not None:
        name = labels.get(GATEWAY_NAME_LABEL)
        return name is not None and config.namespace == namespace and name in gateways
    wanted = spec.selector.match_labels
    return all(labels.get(k) == v for k, v in wanted.items())


def phase_order(configs: Iterable[Config]) -> list[Config]:
    """``configs`` in the order they run within one phase: priority descending (unset
    counts as the lowest), then creation time, then namespace and name."""

    def key(config: Config) -> tuple[int, datetime.datetime, str, str]:
        spec = config.spec
        assert isinstance(spec, wasm_pb2.WasmPlugin)
        priority = spec.priority.value if spec.HasField("priority") else -(2**31)
        created = config.creation_time or _EARLIEST
        if created.tzinfo is None:
            created = created.replace(tzinfo=datetime.UTC)
        return (-priority, created, config.namespace, config.name)

    return sorted(configs, key=key)


KIND = Kind(
    name="WasmPlugin",
    schema=extensions("WasmPlugin", wasm_pb2.WasmPlugin, "wasmplugins", validate_wasm_plugin),
    audience=Audience.SELECTED_WORKLOADS,
    unread_by=frozenset({CDS, RDS}),
    index="wasm_plugins",
    uncompared_audience=Audience.NAMESPACE_OR_ROOT,
)

"""The status the Gateway API asks a controller to report, computed from a translation.

As istiod reports it (``gw/conditions.go``), without times (callers that write status to
Kubernetes add ``lastTransitionTime``):

- GatewayClass of controller ``istio.io/gateway-controller``: ``Accepted``.
- Gateway: ``Accepted`` (``ListenersNotValid`` when some or all listeners are not),
  ``Programmed``; per listener ``Accepted`` (``UnsupportedProtocol``), ``Conflicted``
  (``ProtocolConflict``, ``HostnameConflict``), ``ResolvedRefs``
  (``InvalidCertificateRef``, ``RefNotPermitted``, ``InvalidRouteKinds``),
  ``Programmed``, ``supportedKinds`` and ``attachedRoutes``; ``addresses`` as written in
  the spec (outside Kubernetes no Service assigns one).
- Route (HTTPRoute, GRPCRoute, TCPRoute, TLSRoute), per parentRef of a Gateway this
  controller owns or of a Service (GAMMA; ``NoMatchingParent`` when no such service
  exists): ``Accepted`` (``Accepted``, ``NotAllowedByListeners``,
  ``NoMatchingListenerHostname``, ``NoMatchingParent``) and
  ``ResolvedRefs`` (``ResolvedRefs``, ``BackendNotFound``, ``RefNotPermitted``,
  ``InvalidKind``, ``InvalidFilter``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from google.protobuf import json_format

from pilothouse.api.k8s.gateway.v1 import gateway_pb2
from pilothouse.config.model import Config, ConfigKey
from pilothouse.kinds.gateway_api import kinds as gateway_api_kinds
from pilothouse.kinds.gateway_api.attachment import (
    CONTROLLER,
    KINDS_BY_PROTOCOL,
    ParentResult,
    listener_kinds,
    reference_granted,
)
from pilothouse.kinds.gateway_api.http_translation import backend_host
from pilothouse.kinds.gateway_api.kinds import (
    GATEWAY,
    GATEWAY_CLASS,
    GROUP,
    GRPC_ROUTE,
    HTTP_ROUTE,
    REFERENCE_GRANT,
    TCP_ROUTE,
    TLS_ROUTE,
)
from pilothouse.kinds.gateway_api.listener_translation import SERVED_PROTOCOLS
from pilothouse.kinds.gateway_api.translation import Configs, Translation

Status = dict[str, Any]


def condition(kind: str, ok: bool, reason: str, message: str = "") -> dict[str, str]:
    found = {"type": kind, "status": "True" if ok else "False", "reason": reason}
    if message:
        found["message"] = message
    return found


def gateway_api_status(
    translation: Translation, configs: Configs, hosts: Callable[[str], bool], domain: str
) -> dict[ConfigKey, Status]:
    """The status of every Gateway API object this controller owns (``hosts``: whether a
    service of that hostname exists, for ``BackendNotFound``; ``domain``: the mesh's
    domain suffix)."""
    found: dict[ConfigKey, Status] = {}
    for gateway_class in configs(GATEWAY_CLASS.name):
        spec = gateway_class.spec
        assert isinstance(spec, gateway_pb2.GatewayClass)
        if spec.controller_name == CONTROLLER:
            found[gateway_class.key] = {
                "conditions": [
                    condition("Accepted", True, "Accepted", "Handled by Istio controller")
                ]
            }
    grants = list(configs(REFERENCE_GRANT.name))
    attached: dict[tuple[ConfigKey, str], int] = {}
    for results in translation.parents.values():
        for result in results:
            for one in result.attached:
                where = (one.gateway.key, one.listener.name)
                attached[where] = attached.get(where, 0) + 1
    for gateway in configs(GATEWAY.name):
        if gateway.key in translation.gateway_keys:
            found[gateway.key] = _gateway_status(gateway, grants, attached)
    routes = [configs(k.name) for k in (HTTP_ROUTE, GRPC_ROUTE, TCP_ROUTE, TLS_ROUTE)]
    for route in [r for of_kind in routes for r in of_kind]:
        results = translation.parents.get(route.key, ())
        if not results:
            continue
        # Mesh parents need no ReferenceGrant (istiod checks none for them).
        resolved = {
            mesh: _route_refs(route, grants if not mesh else None, hosts, domain)
            for mesh in {r.mesh for r in results}
        }
        found[route.key] = {
            "parents": [
                {
                    "parentRef": json_format.MessageToDict(result.ref),
                    "controllerName": CONTROLLER,
                    "conditions": [_accepted(result, hosts), resolved[result.mesh]],
                }
                for result in results
            ]
        }
    return found


def _accepted(result: ParentResult, hosts: Callable[[str], bool]) -> dict[str, str]:
    missing = [host for host in result.mesh_hosts if not hosts(host)]
    if missing:
        return condition("Accepted", False, "NoMatchingParent", f"{missing[0]} not found")
    if result.accepted:
        return condition("Accepted", True, "Accepted", "Route was valid")
    return condition("Accepted", False, result.reason)


def _gateway_status(
    gateway: Config, grants: Sequence[Config], attached: dict[tuple[ConfigKey, str], int]
) -> Status:
    spec = gateway.spec
    assert isinstance(spec, gateway_pb2.Gateway)
    listeners: list[Status] = []
    valid = 0
    for index, listener in enumerate(spec.listeners):
        conditions = []
        supported = listener.protocol in SERVED_PROTOCOLS
        conditions.append(
            condition("Accepted", True, "Accepted")
            if supported
            else condition(
                "Accepted",
                False,
                "UnsupportedProtocol",
                f"protocol {listener.protocol} is not supported",
            )
        )
        conflict = _conflict(spec.listeners, index)
        conditions.append(
            condition("Conflicted", True, conflict)
            if conflict
            else condition("Conflicted", False, "NoConflicts")
        )
        refs = _listener_refs(gateway, listener, grants)
        conditions.append(refs)
        ok = supported and not conflict and refs["status"] == "True"
        valid += ok
        conditions.append(
            condition("Programmed", True, "Programmed")
            if ok
            else condition("Programmed", False, "Invalid")
        )
        listeners.append(
            {
                "name": listener.name,
                "supportedKinds": [
                    {"group": GROUP, "kind": kind} for kind in listener_kinds(listener)
                ],
                "attachedRoutes": attached.get((gateway.key, listener.name), 0) if ok else 0,
                "conditions": conditions,
            }
        )
    if valid == len(spec.listeners):
        accepted = condition("Accepted", True, "Accepted")
    else:
        accepted = condition(
            "Accepted",
            valid > 0,
            "ListenersNotValid",
            f"{len(spec.listeners) - valid} listener(s) not valid",
        )
    programmed = (
        condition("Programmed", True, "Programmed")
        if valid
        else condition("Programmed", False, "Invalid", "no listener is valid")
    )
    status: Status = {"conditions": [accepted, programmed], "listeners": listeners}
    addresses = [{"type": a.type or "IPAddress", "value": a.value} for a in spec.addresses]
    if addresses:
        status["addresses"] = addresses
    return status


def _conflict(listeners: Sequence[gateway_pb2.Listener], index: int) -> str:
    """The conflict of listener ``index`` with an earlier one on its port ("" for none)."""
    mine = listeners[index]
    for earlier in listeners[:index]:
        if earlier.port != mine.port:
            continue
        if earlier.protocol != mine.protocol:
            return "ProtocolConflict"
        if earlier.hostname == mine.hostname:
            return "HostnameConflict"
    return ""


def _listener_refs(
    gateway: Config, listener: gateway_pb2.Listener, grants: Sequence[Config]
) -> dict[str, str]:
    wanted = listener.allowed_routes.kinds
    supported = KINDS_BY_PROTOCOL.get(listener.protocol, ())
    for kind in wanted:
        if (kind.group or GROUP) != GROUP or kind.kind not in supported:
            return condition(
                "ResolvedRefs", False, "InvalidRouteKinds", f"{kind.kind} is not supported here"
            )
    for ref in listener.tls.certificate_refs:
        if ref.group or (ref.kind or "Secret") != "Secret":
            return condition(
                "ResolvedRefs", False, "InvalidCertificateRef", f"{ref.kind} is not a Secret"
            )
        namespace = ref.namespace or gateway.namespace
        if not reference_granted(
            grants, "Gateway", gateway.namespace, "Secret", namespace, ref.name
        ):
            return condition(
                "ResolvedRefs",
                False,
                "RefNotPermitted",
                f"no ReferenceGrant lets it read {namespace}/{ref.name}",
            )
    return condition("ResolvedRefs", True, "ResolvedRefs")


def _route_refs(
    route: Config, grants: Sequence[Config] | None, hosts: Callable[[str], bool], domain: str
) -> dict[str, str]:
    """ResolvedRefs of a route's backends (``grants`` None: cross-namespace ones need none)."""
    spec = route.spec
    for rule in getattr(spec, "rules"):  # noqa: B009 (every route kind has rules)
        filters = [
            *getattr(rule, "filters", ()),
            *(f for b in rule.backend_refs for f in getattr(b, "filters", ())),
        ]
        refs: list[Any] = list(rule.backend_refs)
        for route_filter in filters:
            if route_filter.type == "ExtensionRef":
                return condition(
                    "ResolvedRefs", False, "InvalidFilter", "ExtensionRef filters are not supported"
                )
            if route_filter.type == "RequestMirror":
                refs.append(route_filter.request_mirror.backend_ref)
        for ref in refs:
            host = backend_host(ref, route.namespace, domain)
            if host is None:
                return condition(
                    "ResolvedRefs",
                    False,
                    "InvalidKind",
                    f"backendRef kind {ref.group}/{ref.kind} is not supported",
                )
            namespace = ref.namespace or route.namespace
            kind = ref.kind or "Service"
            if grants is not None and not reference_granted(
                grants, route.kind, route.namespace, kind, namespace, ref.name
            ):
                return condition(
                    "ResolvedRefs",
                    False,
                    "RefNotPermitted",
                    f"no ReferenceGrant lets it reach {namespace}/{ref.name}",
                )
            if not hosts(host):
                return condition(
                    "ResolvedRefs",
                    False,
                    "BackendNotFound",
                    f"backend {namespace}/{ref.name} not found",
                )
    return condition("ResolvedRefs", True, "ResolvedRefs")


def kind_of(key: ConfigKey) -> tuple[str, str] | None:
    """``(apiVersion, kind)`` as written for a Gateway API key (None: not one)."""
    for kind in gateway_api_kinds.KINDS:
        if kind.name == key.kind and kind.schema is not None:
            return kind.schema.api_versions[0], kind.schema.manifest_kind
    return None


def stamped(status: Status, now: str, generation: int | None = None) -> Status:
    """``status`` as Kubernetes stores it: every condition with ``lastTransitionTime``
    ``now``, a ``message`` (empty when there is none) and ``observedGeneration``."""

    def walk(value: Any) -> Any:
        if isinstance(value, dict):
            out = {k: walk(v) for k, v in value.items()}
            if "conditions" in out:
                out["conditions"] = [
                    {
                        "message": "",
                        **c,
                        "lastTransitionTime": now,
                        **({"observedGeneration": generation} if generation is not None else {}),
                    }
                    for c in out["conditions"]
                ]
            return out
        if isinstance(value, list):
            return [walk(v) for v in value]
        return value

    found: Status = walk(status)
    return found

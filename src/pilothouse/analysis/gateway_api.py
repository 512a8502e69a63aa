"""The Gateway API objects as their status reports them: a route's parentRef names a
Gateway, Service or ServiceEntry that exists and its backendRefs services that exist
(IST0101), every other negative condition (a reference across namespaces that no
ReferenceGrant allows, a route no listener accepts, a listener that is not valid) is
IST0171 NegativeConditionStatus as istioctl's conditions analyzer reports it, and a
Gateway of a class this control plane does not handle is PH0141 (Info).

The status is :func:`pilothouse.kinds.gateway_api.status.gateway_api_status` over the
translation ``serve`` makes (:func:`~pilothouse.kinds.gateway_api.translation.translate`),
so ``analyze`` and ``/debug/gateway_apiz`` (and ``get -o yaml``) agree: backends are
found among the services of the config set by exact host name, and a route's
ResolvedRefs names its first unresolved reference only, as its status does. A parentRef
to a Gateway the set does not hold gets no status at all (istiod writes none for a
parent it does not own); that one is found here by name.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Mapping
from typing import Any, Final

from pilothouse.analysis.mesh_view import MeshView
from pilothouse.analysis.messages import (
    GATEWAY_CLASS_NOT_HANDLED,
    NEGATIVE_CONDITION_STATUS,
    REFERENCED_RESOURCE_NOT_FOUND,
    Message,
    about,
    did_you_mean,
)
from pilothouse.config.model import Config
from pilothouse.kinds.gateway_api.kinds import (
    GATEWAY,
    GROUP,
    GRPC_ROUTE,
    HTTP_ROUTE,
    KINDS,
    TCP_ROUTE,
    TLS_ROUTE,
)
from pilothouse.kinds.gateway_api.status import gateway_api_status
from pilothouse.kinds.gateway_api.translation import Translation, translate

ROUTE_KINDS: Final = (HTTP_ROUTE.name, GRPC_ROUTE.name, TCP_ROUTE.name, TLS_ROUTE.name)
MESH_PARENTS: Final = frozenset({("", "Service"), ("networking.istio.io", "ServiceEntry")})
"""(group, kind) of the parentRefs that name the mesh (GAMMA) rather than a Gateway (as
status writes a parentRef: an empty group left out)."""
NEGATIVE: Final = {"Accepted": "False", "ResolvedRefs": "False", "Programmed": "False"}
"""Condition type → the status that is bad news (Conflicted is bad news when True)."""


def analyze(view: MeshView) -> Iterator[Message]:
    if not any(view.of_kind(kind.name) for kind in KINDS):
        return  # a mesh without the Gateway API pays nothing for its translation
    domain = view.mesh.domain_suffix
    translation = translate(view.of_kind, domain)
    statuses = gateway_api_status(translation, view.of_kind, view.by_host.__contains__, domain)
    for gateway in view.of_kind(GATEWAY.name):
        yield from _gateway(gateway, translation, statuses.get(gateway.key))
    gateways: dict[str, list[str]] = {}
    for gateway in view.of_kind(GATEWAY.name):
        gateways.setdefault(gateway.namespace, []).append(gateway.name)
    for kind in ROUTE_KINDS:
        for route in view.of_kind(kind):
            yield from _missing_gateways(route, gateways)
            status = statuses.get(route.key)
            for parent in status["parents"] if status else ():
                yield from _parent(view, route, parent)


def negative(condition: Mapping[str, str]) -> bool:
    if condition["type"] == "Conflicted":
        return condition["status"] == "True"
    return NEGATIVE.get(condition["type"]) == condition["status"]


def _negative(config: Config, condition: Mapping[str, str], hint: str, path: str) -> Message:
    return about(
        config, NEGATIVE_CONDITION_STATUS, condition["type"], condition["reason"],
        condition.get("message", ""), hint=hint, path=path,
    )  # fmt: skip


def _gateway(
    gateway: Config, translation: Translation, status: Mapping[str, Any] | None
) -> Iterator[Message]:
    if gateway.key not in translation.gateway_keys:
        spec: Any = gateway.spec
        yield about(
            gateway, GATEWAY_CLASS_NOT_HANDLED, spec.gateway_class_name,
            path="spec.gatewayClassName",
        )  # fmt: skip
        return
    if status is None:
        return
    found = False
    for index, listener in enumerate(status["listeners"]):
        for condition in listener["conditions"]:
            if condition["type"] != "Programmed" and negative(condition):
                found = True
                yield _negative(
                    gateway, condition, f"listener {listener['name']}",
                    f"spec.listeners[{index}]",
                )  # fmt: skip
    if not found:
        for condition in status["conditions"]:
            if negative(condition):
                yield _negative(gateway, condition, "", "spec")


def _missing_gateways(route: Config, gateways: Mapping[str, list[str]]) -> Iterator[Message]:
    spec: Any = route.spec
    for index, ref in enumerate(spec.parent_refs):
        if (ref.group or GROUP) != GROUP or (ref.kind or "Gateway") != "Gateway":
            continue
        namespace = ref.namespace or route.namespace
        siblings = gateways.get(namespace, [])
        if ref.name in siblings:
            continue
        close = difflib.get_close_matches(ref.name, siblings, n=1, cutoff=0.6)
        yield about(
            route, REFERENCED_RESOURCE_NOT_FOUND, "Gateway", f"{namespace}/{ref.name}",
            hint=did_you_mean([f"{namespace}/{c}" for c in close]),
            path=f"spec.parentRefs[{index}]",
        )  # fmt: skip


def _parent(view: MeshView, route: Config, parent: Mapping[str, Any]) -> Iterator[Message]:
    ref = parent["parentRef"]
    group, kind = ref.get("group", ""), ref.get("kind", "Gateway")
    namespace = ref.get("namespace", route.namespace)
    named = f"{namespace}/{ref['name']}"
    for condition in parent["conditions"]:
        if not negative(condition):
            continue
        reason = condition["reason"]
        if reason == "NoMatchingParent" and (group, kind) in MESH_PARENTS:
            close = view.close_hosts(view.resolve(ref["name"], namespace))
            yield about(
                route, REFERENCED_RESOURCE_NOT_FOUND, kind, named, path="spec.parentRefs",
                hint=did_you_mean([h.partition(".")[0] for h in close]),
            )  # fmt: skip
        elif reason == "BackendNotFound":
            backend = condition.get("message", "").removeprefix("backend ")
            yield about(
                route, REFERENCED_RESOURCE_NOT_FOUND, "backendRef",
                backend.removesuffix(" not found"), path="spec.rules",
            )  # fmt: skip
        elif condition["type"] == "ResolvedRefs":
            yield _negative(route, condition, "", "spec.rules")
        else:
            yield _negative(route, condition, f"parentRef {kind} {named}", "spec.parentRefs")

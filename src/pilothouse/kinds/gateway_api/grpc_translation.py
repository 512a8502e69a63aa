"""One GRPCRoute rule as Istio ``HTTPRoute`` entries, as istiod converts it.

A gRPC method is the HTTP/2 path ``/<service>/<method>``: an Exact match of both is an
exact path, of the service alone the prefix ``/<service>/``, of the method alone the
regex ``/[^/]+/<method>``; a RegularExpression match is the regex
``/<service or [^/]+>/<method or [^/]+>``. Headers, header modifiers, mirrors and
backends are those of HTTPRoute (:mod:`.http_translation`). Precedence: the spec's
(exact method first, then more characters, then more header matches, then route age and
name, then rule order).
"""

from __future__ import annotations

from typing import Any

from pilothouse.api.k8s.gateway.v1 import routes_pb2
from pilothouse.config.model import Config
from pilothouse.kinds.gateway_api.http_translation import (
    BackendCheck,
    Entry,
    destinations_json,
    headers_json,
    mirror_json,
    route_name,
    route_order,
    string_match,
)


def grpc_entries(
    route: Config,
    rule_index: int,
    rule: routes_pb2.GRPCRouteRule,
    domain: str,
    allowed: BackendCheck,
) -> list[Entry]:
    """The entries of one GRPCRoute rule."""
    base: dict[str, Any] = {}
    for route_filter in rule.filters:
        if route_filter.type == "RequestHeaderModifier":
            base.setdefault("headers", {})["request"] = headers_json(
                route_filter.request_header_modifier
            )
        elif route_filter.type == "ResponseHeaderModifier":
            base.setdefault("headers", {})["response"] = headers_json(
                route_filter.response_header_modifier
            )
        elif route_filter.type == "RequestMirror":
            mirror = mirror_json(route, route_filter.request_mirror, domain, allowed)
            if mirror is not None:
                base.setdefault("mirrors", []).append(mirror)
    destinations = destinations_json(route, rule.backend_refs, domain, allowed)
    if destinations:
        base["route"] = destinations
    else:
        base["directResponse"] = {"status": 500}
    entries: list[Entry] = []
    for match_index, match in enumerate(list(rule.matches) or [routes_pb2.GRPCRouteMatch()]):
        conditions: dict[str, Any] = {}
        uri = _uri(match.method) if match.HasField("method") else None
        if uri is not None:
            conditions["uri"] = uri
        if match.headers:
            conditions["headers"] = {
                h.name.lower(): string_match(h.type, h.value) for h in match.headers
            }
        method = match.method
        exact = match.HasField("method") and (method.type or "Exact") == "Exact"
        characters = len(method.service) + len(method.method)
        order = (
            0 if exact and method.service and method.method else 1,
            -characters,
            -len(match.headers),
            *route_order(route),
            rule_index,
            match_index,
        )
        entry = dict(base)
        entry["name"] = route_name(route, rule.name, rule_index, match_index)
        entry["match"] = [conditions]
        entries.append(Entry(order, entry))
    return entries


def _uri(method: routes_pb2.GRPCMethodMatch) -> dict[str, str] | None:
    service, name = method.service, method.method
    if (method.type or "Exact") == "RegularExpression":
        return {"regex": f"/{service or '[^/]+'}/{name or '[^/]+'}"}
    if service and name:
        return {"exact": f"/{service}/{name}"}
    if service:
        return {"prefix": f"/{service}/"}
    if name:
        return {"regex": f"/[^/]+/{name}"}
    return None

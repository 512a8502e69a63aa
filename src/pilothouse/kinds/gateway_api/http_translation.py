"""One HTTPRoute (or GRPCRoute) rule as Istio ``HTTPRoute`` entries of a VirtualService,
with the key that orders them by the spec's precedence.

- Each match of a rule is one entry (a rule with none matches every path). A
  ``PathPrefix`` other than ``/`` becomes two entries, an exact match of the prefix and
  a prefix match of ``<prefix>/``: together Envoy's path-separated prefix, so ``/foo``
  matches ``/foo`` and ``/foo/bar`` but never ``/foobar``. A ``ReplacePrefixMatch``
  rewrite is written for each form.
- Filters: header modifiers → ``headers``; RequestRedirect → ``redirect`` (its
  ``ReplacePrefixMatch`` as the redirect's ``prefixRewrite``, per form); URLRewrite →
  ``rewrite``; RequestMirror → ``mirrors``; CORS → ``corsPolicy``; backend header
  modifiers → the destination's ``headers``. ``timeouts.request`` → ``timeout``;
  ``backendRequest`` → each retry's ``perTryTimeout`` with ``retry``, else ``timeout``;
  ``retry`` → ``retries`` (attempts, default 2; connection failures and the codes).
- Backends: a Service → ``<name>.<ns>.svc.<domain>``, ``networking.istio.io/Hostname`` →
  that host; weights as written (Envoy sums them), weight 0 left out. A backend that is
  not allowed (another namespace without a ReferenceGrant) or of an unknown kind is left
  out; with none left and no redirect the entry answers 500, as istiod's do.
- Order (the spec's precedence): Exact before PathPrefix before RegularExpression, longer
  paths first; then a method match; more header matches; more query matches; the older
  route; the route's ``namespace/name``; the rule's and the match's order.
- Names: an entry (so its Envoy route) is named ``<ns>.<route>.<rule name>`` when the
  rule has a ``name``, else ``<ns>.<route>.<rule index>.<match index>``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from pilothouse.api.k8s.gateway.v1 import routes_pb2, shared_pb2
from pilothouse.config.model import Config
from pilothouse.kinds.gateway_api.checks import duration_ms

ISTIO_GROUP: Final = "networking.istio.io"
_PATH_RANK: Final = {"Exact": 0, "PathPrefix": 1, "RegularExpression": 2}

BackendReference = (
    shared_pb2.BackendObjectReference
    | shared_pb2.BackendRef
    | routes_pb2.HTTPBackendRef
    | routes_pb2.GRPCBackendRef
)
"""Any of the Gateway API's references to a backend."""
BackendCheck = Callable[[str, str, str], bool]
"""(kind, namespace, name) of a backend in another namespace → allowed by a grant."""


@dataclass(frozen=True, slots=True)
class Entry:
    """One Istio HTTPRoute (as its JSON) and its precedence key."""

    order: tuple[Any, ...]
    route: dict[str, Any]


def backend_host(
    ref: BackendReference,
    namespace: str,
    domain: str,
) -> str | None:
    """The Istio host a backendRef names (None: a kind pilothouse cannot send to)."""
    group, kind = ref.group, ref.kind or "Service"
    if group == "" and kind == "Service":
        return f"{ref.name}.{ref.namespace or namespace}.svc.{domain}"
    if group == ISTIO_GROUP and kind == "Hostname":
        return ref.name
    return None


def destination(
    ref: BackendReference,
    host: str,
) -> dict[str, Any]:
    found: dict[str, Any] = {"host": host}
    if ref.HasField("port"):
        found["port"] = {"number": ref.port}
    return found


def headers_json(modifier: shared_pb2.HTTPHeaderFilter) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if modifier.set:
        out["set"] = {h.name: h.value for h in modifier.set}
    if modifier.add:
        out["add"] = {h.name: h.value for h in modifier.add}
    if modifier.remove:
        out["remove"] = list(modifier.remove)
    return out


def string_match(kind: str, value: str) -> dict[str, str]:
    return {"regex": value} if kind == "RegularExpression" else {"exact": value}


def match_order(
    path_type: str, path: str, method: bool, headers: int, queries: int
) -> tuple[int, int, int, int, int]:
    """The precedence of one match (smaller first)."""
    return (_PATH_RANK.get(path_type, 3), -len(path), 0 if method else 1, -headers, -queries)


def route_order(route: Config) -> tuple[float, str]:
    created = route.creation_time.timestamp() if route.creation_time is not None else 0.0
    return (created, f"{route.namespace}/{route.name}")


def http_entries(
    route: Config,
    rule_index: int,
    rule: routes_pb2.HTTPRouteRule,
    domain: str,
    allowed: BackendCheck,
) -> list[Entry]:
    """The entries of one HTTPRoute rule."""
    base: dict[str, Any] = {}
    rewrite_prefix: str | None = None
    redirect_prefix: str | None = None
    for route_filter in rule.filters:
        kind = route_filter.type
        if kind == "RequestHeaderModifier":
            base.setdefault("headers", {})["request"] = headers_json(
                route_filter.request_header_modifier
            )
        elif kind == "ResponseHeaderModifier":
            base.setdefault("headers", {})["response"] = headers_json(
                route_filter.response_header_modifier
            )
        elif kind == "RequestRedirect":
            base["redirect"] = _redirect(route_filter.request_redirect)
            path_modifier = route_filter.request_redirect.path
            if path_modifier.type == "ReplacePrefixMatch":
                redirect_prefix = path_modifier.replace_prefix_match
        elif kind == "URLRewrite":
            rewrite = route_filter.url_rewrite
            written: dict[str, Any] = {}
            if rewrite.hostname:
                written["authority"] = rewrite.hostname
            if rewrite.path.type == "ReplaceFullPath":
                written["uriRegexRewrite"] = {
                    "match": "/.*",
                    "rewrite": rewrite.path.replace_full_path,
                }
            elif rewrite.path.type == "ReplacePrefixMatch":
                rewrite_prefix = rewrite.path.replace_prefix_match
            base["rewrite"] = written
        elif kind == "CORS":
            base["corsPolicy"] = _cors(route_filter.cors)
        elif kind == "RequestMirror":
            mirror = mirror_json(route, route_filter.request_mirror, domain, allowed)
            if mirror is not None:
                base.setdefault("mirrors", []).append(mirror)
    timeouts = rule.timeouts
    retrying = rule.HasField("retry")
    if timeouts.request or (timeouts.backend_request and not retrying):
        base["timeout"] = _seconds(timeouts.request or timeouts.backend_request)
    if retrying:
        base["retries"] = _retries(rule.retry, timeouts.backend_request)
    if "redirect" not in base:
        destinations = destinations_json(route, rule.backend_refs, domain, allowed)
        if destinations:
            base["route"] = destinations
        else:
            base["directResponse"] = {"status": 500}
    matches = list(rule.matches) or [routes_pb2.HTTPRouteMatch()]
    entries: list[Entry] = []
    for match_index, match in enumerate(matches):
        conditions: dict[str, Any] = {}
        if match.headers:
            conditions["headers"] = {
                h.name.lower(): string_match(h.type, h.value) for h in match.headers
            }
        if match.query_params:
            conditions["queryParams"] = {
                q.name: string_match(q.type, q.value) for q in match.query_params
            }
        if match.method:
            conditions["method"] = {"exact": match.method}
        path_type = match.path.type or "PathPrefix"
        path = match.path.value if match.path.HasField("value") else "/"
        order = (
            *match_order(
                path_type,
                path.rstrip("/") or "/",
                bool(match.method),
                len(match.headers),
                len(match.query_params),
            ),
            *route_order(route),
            rule_index,
            match_index,
        )
        for part, uri in enumerate(_uris(path_type, path)):
            entry = dict(base)
            entry["name"] = route_name(route, rule.name, rule_index, match_index)
            entry["match"] = [{**conditions, **({"uri": uri} if uri else {})}]
            if rewrite_prefix is not None:
                entry["rewrite"] = {
                    **base.get("rewrite", {}),
                    "uri": _prefix_rewrite(rewrite_prefix, part),
                }
            if redirect_prefix is not None:
                entry["redirect"] = {
                    **base["redirect"],
                    "prefixRewrite": _prefix_rewrite(redirect_prefix, part),
                }
            entries.append(Entry((*order, part), entry))
    return entries


def route_name(route: Config, rule_name: str, rule_index: int, match_index: int) -> str:
    """The name of a rule's routes: ``<ns>.<route>.<rule name>`` for a named rule (the
    spec's NamedRouteRule), else ``<ns>.<route>.<rule index>.<match index>``."""
    if rule_name:
        return f"{route.namespace}.{route.name}.{rule_name}"
    return f"{route.namespace}.{route.name}.{rule_index}.{match_index}"


def _uris(path_type: str, path: str) -> list[dict[str, str] | None]:
    """The Istio uri matches of one Gateway API path match."""
    if path_type == "Exact":
        return [{"exact": path}]
    if path_type == "RegularExpression":
        return [{"regex": path}]
    trimmed = path.rstrip("/")
    if not trimmed:
        return [{"prefix": "/"}]
    return [{"exact": trimmed}, {"prefix": trimmed + "/"}]


def _prefix_rewrite(replacement: str, part: int) -> str:
    """The rewrite of the exact form (part 0) or of the ``<prefix>/`` form (part 1)."""
    if part == 0 or part is None:
        return replacement or "/"
    return replacement.rstrip("/") + "/"


def _seconds(duration: str) -> str:
    """A Gateway API duration as a protobuf JSON duration."""
    return f"{duration_ms(duration) / 1000:g}s"


def _retries(retry: routes_pb2.HTTPRouteRetry, per_try: str) -> dict[str, Any]:
    """``retry`` as Istio retries, as istiod writes them: 2 attempts unless told, on
    connection failures and the listed status codes, each try ``backendRequest`` long."""
    conditions = ["connect-failure", "refused-stream", "unavailable", "cancelled"]
    out: dict[str, Any] = {
        "attempts": retry.attempts if retry.HasField("attempts") else 2,
        "retryOn": ",".join([*conditions, *(str(code) for code in retry.codes)]),
    }
    if per_try:
        out["perTryTimeout"] = _seconds(per_try)
    if retry.backoff:
        out["backoff"] = _seconds(retry.backoff)
    return out


def _cors(cors: shared_pb2.HTTPCORSFilter) -> dict[str, Any]:
    out: dict[str, Any] = {
        "allowOrigins": [
            {"exact": o} if "*" not in o else {"regex": o.replace(".", "\\.").replace("*", ".*")}
            for o in cors.allow_origins
        ]
    }
    for field, values in (
        ("allowMethods", cors.allow_methods),
        ("allowHeaders", cors.allow_headers),
        ("exposeHeaders", cors.expose_headers),
    ):
        if values:
            out[field] = list(values)
    if cors.max_age:
        out["maxAge"] = f"{cors.max_age}s"
    if cors.allow_credentials:
        out["allowCredentials"] = True
    return out


def _redirect(redirect: shared_pb2.HTTPRequestRedirectFilter) -> dict[str, Any]:
    out: dict[str, Any] = {"redirectCode": redirect.status_code or 302}
    if redirect.scheme:
        out["scheme"] = redirect.scheme
    if redirect.hostname:
        out["authority"] = redirect.hostname
    if redirect.HasField("port"):
        out["port"] = redirect.port
    elif redirect.scheme:
        out["derivePort"] = "FROM_PROTOCOL_DEFAULT"
    if redirect.path.type == "ReplaceFullPath":
        out["uri"] = redirect.path.replace_full_path
    return out


def mirror_json(
    route: Config, mirror: shared_pb2.HTTPRequestMirrorFilter, domain: str, allowed: BackendCheck
) -> dict[str, Any] | None:
    ref = mirror.backend_ref
    host = backend_host(ref, route.namespace, domain)
    if host is None or not _permitted(route, ref, allowed):
        return None
    out: dict[str, Any] = {"destination": destination(ref, host)}
    if mirror.HasField("percent"):
        out["percentage"] = {"value": float(mirror.percent)}
    elif mirror.HasField("fraction"):
        denominator = (
            mirror.fraction.denominator if mirror.fraction.HasField("denominator") else 100
        )
        out["percentage"] = {"value": 100.0 * mirror.fraction.numerator / denominator}
    return out


def _permitted(
    route: Config,
    ref: shared_pb2.BackendObjectReference | routes_pb2.HTTPBackendRef | routes_pb2.GRPCBackendRef,
    allowed: BackendCheck,
) -> bool:
    if not ref.namespace or ref.namespace == route.namespace:
        return True
    return allowed(ref.kind or "Service", ref.namespace, ref.name)


def destinations_json(
    route: Config,
    refs: Sequence[routes_pb2.HTTPBackendRef] | Sequence[routes_pb2.GRPCBackendRef],
    domain: str,
    allowed: BackendCheck,
) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for ref in refs:
        weight = ref.weight if ref.HasField("weight") else 1
        host = backend_host(ref, route.namespace, domain)
        if weight == 0 or host is None or not _permitted(route, ref, allowed):
            continue
        out: dict[str, Any] = {"destination": destination(ref, host), "weight": weight}
        for route_filter in ref.filters:
            if route_filter.type == "RequestHeaderModifier":
                out.setdefault("headers", {})["request"] = headers_json(
                    route_filter.request_header_modifier
                )
            elif route_filter.type == "ResponseHeaderModifier":
                out.setdefault("headers", {})["response"] = headers_json(
                    route_filter.response_header_modifier
                )
        found.append(out)
    if len(found) == 1:
        found[0].pop("weight")
    return found

"""VirtualService delegation: a root ``HTTPRoute`` with ``delegate`` replaced by the child's routes.

Istio's semantics, kept here:

- A delegate is a VirtualService with no ``hosts``; ``delegate.namespace``
  defaults to the root's namespace.  A missing delegate (or one with hosts)
  drops only the delegating route.  Whether the delegate is exported to the
  root's namespace is the caller's ``lookup_delegate`` to decide.
- One level only: child routes that delegate again are dropped.
- Each child route is merged with the root route.  Its matches must each fit
  inside at least one root match; a child match is merged with every root
  match it does not conflict with (child values win, maps are unioned, the
  root fills what the child leaves empty, match names join as
  ``root-child``).  A child match that fits no root match drops the whole
  child route.
- A conflict, per string field: a regex on either side against any value on
  the other; exact against a prefix or a different exact; a child prefix or
  exact that does not start with the root prefix.  Also different
  ``ignore_uri_case``, different non-zero ports, a different source namespace
  or source label value, and child gateways that are not a subset of the
  root's.
- The child route's name becomes ``root-child`` (or the one that is set); the
  root fills ``rewrite``, ``direct_response``, ``timeout``, ``retries``,
  ``fault``, ``mirror`` (and its percentages), ``mirrors``, ``cors_policy`` and
  ``headers`` when the child has none.
- Short host names and gateway names are read relative to the namespace of the
  VirtualService that wrote them (the root's or the delegate's), before
  merging.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from pilothouse.api.istio.networking.v1alpha3 import virtual_service_pb2 as vs_pb2
from pilothouse.push.hostnames import DEFAULT_DOMAIN_SUFFIX, resolve_host
from pilothouse.xds.builders.route_match import resolve_gateway_name

DelegateLookup = Callable[[str, str], vs_pb2.VirtualService | None]

_INHERITED_MESSAGES = (
    "rewrite",
    "direct_response",
    "timeout",
    "retries",
    "fault",
    "mirror",
    "mirror_percent",
    "mirror_percentage",
    "cors_policy",
    "headers",
)
_STRING_MATCHES = ("uri", "scheme", "method", "authority")
_MATCH_MAPS = ("headers", "without_headers", "query_params")


def expand_delegates(
    routes: Iterable[vs_pb2.HTTPRoute],
    namespace: str,
    lookup_delegate: DelegateLookup | None,
    domain_suffix: str = DEFAULT_DOMAIN_SUFFIX,
) -> Iterator[vs_pb2.HTTPRoute]:
    """The routes of a VirtualService in ``namespace`` with every delegation replaced."""
    for route in routes:
        if not route.HasField("delegate"):
            yield route
            continue
        if lookup_delegate is None:
            continue
        child_namespace = route.delegate.namespace or namespace
        delegate = lookup_delegate(route.delegate.name, child_namespace)
        if delegate is None or len(delegate.hosts) > 0:
            continue
        root = resolved_copy(route, namespace, domain_suffix)
        for child in delegate.http:
            if child.HasField("delegate"):
                continue
            merged = merge_route(root, resolved_copy(child, child_namespace, domain_suffix))
            if merged is not None:
                yield merged


def resolved_copy(
    route: vs_pb2.HTTPRoute, namespace: str, domain_suffix: str = DEFAULT_DOMAIN_SUFFIX
) -> vs_pb2.HTTPRoute:
    """A copy of ``route`` with hosts and gateway names fully qualified."""
    out = vs_pb2.HTTPRoute()
    out.CopyFrom(route)
    for destination in out.route:
        if destination.HasField("destination"):
            host = destination.destination.host
            destination.destination.host = resolve_host(host, namespace, domain_suffix)
    if out.HasField("mirror"):
        out.mirror.host = resolve_host(out.mirror.host, namespace, domain_suffix)
    for mirror in out.mirrors:
        if mirror.HasField("destination"):
            host = mirror.destination.host
            mirror.destination.host = resolve_host(host, namespace, domain_suffix)
    for match in out.match:
        resolved = [resolve_gateway_name(name, namespace) for name in match.gateways]
        del match.gateways[:]
        match.gateways.extend(resolved)
    return out


def merge_route(root: vs_pb2.HTTPRoute, child: vs_pb2.HTTPRoute) -> vs_pb2.HTTPRoute | None:
    """``child`` under ``root``; ``None`` when their matches conflict."""
    matches = merge_matches(list(root.match), list(child.match))
    if matches is None:
        return None
    out = vs_pb2.HTTPRoute()
    out.CopyFrom(child)
    del out.match[:]
    out.match.extend(matches)
    if not child.name:
        out.name = root.name
    elif root.name:
        out.name = f"{root.name}-{child.name}"
    for name in _INHERITED_MESSAGES:
        if not child.HasField(name) and root.HasField(name):
            getattr(out, name).CopyFrom(getattr(root, name))
    if len(child.mirrors) == 0:
        out.mirrors.extend(root.mirrors)
    out.ClearField("delegate")
    return out


def merge_matches(
    root: list[vs_pb2.HTTPMatchRequest], child: list[vs_pb2.HTTPMatchRequest]
) -> list[vs_pb2.HTTPMatchRequest] | None:
    """The merged match list; ``None`` on conflict."""
    if not root:
        return child
    if not child:
        return root
    out: list[vs_pb2.HTTPMatchRequest] = []
    for leaf in child:
        fitting = [merge_match(parent, leaf) for parent in root if not has_conflict(parent, leaf)]
        if not fitting:
            return None
        out.extend(fitting)
    return out


def merge_match(
    root: vs_pb2.HTTPMatchRequest, leaf: vs_pb2.HTTPMatchRequest
) -> vs_pb2.HTTPMatchRequest:
    """``leaf`` completed by ``root``: leaf values win, the root fills the gaps."""
    out = vs_pb2.HTTPMatchRequest()
    out.CopyFrom(leaf)
    if not leaf.name:
        out.name = root.name
    elif root.name:
        out.name = f"{root.name}-{leaf.name}"
    for name in _STRING_MATCHES:
        if not leaf.HasField(name) and root.HasField(name):
            getattr(out, name).CopyFrom(getattr(root, name))
    for name in _MATCH_MAPS:
        target = getattr(out, name)
        for key, value in getattr(root, name).items():
            if key not in target:
                target[key].CopyFrom(value)
    for key, label in root.source_labels.items():
        if key not in out.source_labels:
            out.source_labels[key] = label
    if not out.port:
        out.port = root.port
    if not out.source_namespace:
        out.source_namespace = root.source_namespace
    if len(out.gateways) == 0:
        out.gateways.extend(root.gateways)
    if not out.stat_prefix:
        out.stat_prefix = root.stat_prefix
    return out


def has_conflict(root: vs_pb2.HTTPMatchRequest, leaf: vs_pb2.HTTPMatchRequest) -> bool:
    """Whether ``leaf`` cannot be narrowed from ``root``."""
    for name in _STRING_MATCHES:
        if string_match_conflict(_field(root, name), _field(leaf, name)):
            return True
    for name in _MATCH_MAPS:
        parent_map = getattr(root, name)
        for key, value in getattr(leaf, name).items():
            if string_match_conflict(parent_map.get(key), value):
                return True
    if root.ignore_uri_case != leaf.ignore_uri_case:
        return True
    if root.port and leaf.port and root.port != leaf.port:
        return True
    if root.source_namespace and leaf.source_namespace != root.source_namespace:
        return True
    for key, value in leaf.source_labels.items():
        if key in root.source_labels and root.source_labels[key] != value:
            return True
    if len(root.gateways) > 0 and len(leaf.gateways) > 0:
        if len(root.gateways) < len(leaf.gateways):
            return True
        if not set(leaf.gateways) <= set(root.gateways):
            return True
    return False


def string_match_conflict(root: vs_pb2.StringMatch | None, leaf: vs_pb2.StringMatch | None) -> bool:
    """Whether a child StringMatch is not a narrowing of the root one."""
    if root is None or leaf is None:
        return False
    if _value(root, "regex") and (
        _value(leaf, "regex") or _value(leaf, "prefix") or _value(leaf, "exact")
    ):
        return True
    if _value(leaf, "regex") and (
        _value(root, "regex") or _value(root, "prefix") or _value(root, "exact")
    ):
        return True
    exact = _value(root, "exact")
    if exact:
        return bool(_value(leaf, "prefix")) or _value(leaf, "exact") != exact
    prefix = _value(root, "prefix")
    if prefix:
        if _value(leaf, "prefix"):
            return not _value(leaf, "prefix").startswith(prefix)
        if _value(leaf, "exact"):
            return not _value(leaf, "exact").startswith(prefix)
    return True


def _field(match: vs_pb2.HTTPMatchRequest, name: str) -> vs_pb2.StringMatch | None:
    return getattr(match, name) if match.HasField(name) else None


def _value(match: vs_pb2.StringMatch, kind: str) -> str:
    return str(getattr(match, kind)) if match.WhichOneof("match_type") == kind else ""

"""``HTTPMatchRequest`` → Envoy ``RouteMatch``, and which matches apply to a proxy.

Translation, as istiod does it:

- ``uri``: exact → ``path``, prefix → ``prefix``, regex → ``safe_regex`` (RE2);
  no uri → ``prefix: /``.  ``case_sensitive`` is always written, as
  ``not ignore_uri_case``.
- ``headers`` → header matchers (exact / prefix / ``safe_regex``); a StringMatch
  with no value, or the regex ``*``, means "present" (``present_match``).
  ``without_headers`` are the same matchers with ``invert_match``; unless the
  matcher is a presence test, ``treat_missing_header_as_empty`` is set so a
  missing header counts as "not matching the value".  Header matchers are sorted
  by name, then ``method``, ``authority`` and ``scheme`` follow as ``:method``,
  ``:authority`` and ``:scheme`` matchers.
- ``query_params`` → query parameter matchers the same way (sorted by name).  The
  Istio API documents exact and regex only; a prefix is passed on as a
  StringMatcher prefix, which Envoy v3 accepts.
- Not translated: header names of the form ``@request.auth.claims…`` (istiod
  turns them into JWT dynamic-metadata matchers; here they stay plain header
  matchers that never see such a header).

Selection (:func:`match_applies`), as istiod: a match with a ``port`` other
than the port being built is skipped.  A match that names ``gateways`` applies
only to those gateways (and then source labels are not looked at, as in
istiod); a match that names none falls back to the VirtualService's gateways
(``mesh`` when it names none either), and then needs its ``source_labels`` to
be a subset of the proxy's labels and its ``source_namespace`` to be the
proxy's namespace.  An unknown proxy (no labels, no namespace) is selected only
by matches that ask for neither.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Final

from envoy.config.route.v3 import route_components_pb2 as rc_pb2  # type: ignore[import-untyped]
from envoy.type.matcher.v3 import string_pb2  # type: ignore[import-untyped]

from pilothouse.api.istio.networking.v1alpha3 import virtual_service_pb2 as vs_pb2

MESH_GATEWAY: Final = "mesh"

RouteMatch = rc_pb2.RouteMatch
HeaderMatcher = rc_pb2.HeaderMatcher
QueryParameterMatcher = rc_pb2.QueryParameterMatcher


def resolve_gateway_name(name: str, namespace: str) -> str:
    """A gateway reference as ``<namespace>/<name>``, read relative to ``namespace``.

    ``mesh`` stays ``mesh``; ``gw`` and ``./gw`` mean ``<namespace>/gw``; the
    legacy ``gw.ns.svc.cluster.local`` (or ``gw.ns``) form means ``ns/gw``.
    """
    if name == MESH_GATEWAY:
        return name
    if "/" in name:
        prefix, _, rest = name.partition("/")
        return f"{namespace}/{rest}" if prefix == "." else name
    if "." not in name:
        return f"{namespace}/{name}"
    gateway, _, domain = name.partition(".")
    return f"{domain.split('.', 1)[0]}/{gateway}"


def gateway_set(gateways: Iterable[str], namespace: str) -> frozenset[str]:
    """The resolved gateway names of a list, ``{"mesh"}`` when the list is empty."""
    resolved = frozenset(resolve_gateway_name(name, namespace) for name in gateways)
    return resolved or frozenset((MESH_GATEWAY,))


def current_gateways(gateway: str | Collection[str] | None) -> frozenset[str]:
    """The gateway names the proxy being built answers to (``None`` → the mesh)."""
    if gateway is None:
        return frozenset((MESH_GATEWAY,))
    if isinstance(gateway, str):
        return frozenset((gateway,))
    return frozenset(gateway)


def labels_select(wanted: Mapping[str, str], labels: Mapping[str, str] | None) -> bool:
    """True when every ``wanted`` label is on the proxy."""
    have = labels or {}
    return all(have.get(key) == value for key, value in wanted.items())


def match_applies(
    match: vs_pb2.HTTPMatchRequest,
    *,
    port: int,
    gateways: frozenset[str],
    vs_gateways: frozenset[str],
    namespace: str,
    proxy_labels: Mapping[str, str] | None,
    proxy_namespace: str | None,
) -> bool:
    """Whether ``match`` (from a VirtualService in ``namespace``) applies here."""
    if match.port and match.port != port:
        return False
    if len(match.gateways) > 0:
        return not gateways.isdisjoint(gateway_set(match.gateways, namespace))
    if gateways.isdisjoint(vs_gateways):
        return False
    if not labels_select(match.source_labels, proxy_labels):
        return False
    return not match.source_namespace or match.source_namespace == proxy_namespace


def is_presence(match: vs_pb2.StringMatch | None) -> bool:
    """A StringMatch that only asks for presence: no value at all, or the regex ``*``."""
    if match is None:
        return True
    kind = match.WhichOneof("match_type")
    return kind is None or (kind == "regex" and match.regex == "*")


def string_matcher(match: vs_pb2.StringMatch) -> string_pb2.StringMatcher:
    """An Istio StringMatch as an Envoy StringMatcher (RE2 ``safe_regex`` for regex)."""
    kind = match.WhichOneof("match_type")
    if kind == "exact":
        return string_pb2.StringMatcher(exact=match.exact)
    if kind == "prefix":
        return string_pb2.StringMatcher(prefix=match.prefix)
    if kind == "regex":
        out = string_pb2.StringMatcher()
        out.safe_regex.regex = match.regex
        return out
    return string_pb2.StringMatcher()


def header_matcher(name: str, match: vs_pb2.StringMatch | None) -> rc_pb2.HeaderMatcher:
    """One header matcher: ``present_match`` or a ``string_match``."""
    if match is None or is_presence(match):
        return HeaderMatcher(name=name, present_match=True)
    return HeaderMatcher(name=name, string_match=string_matcher(match))


def query_matcher(name: str, match: vs_pb2.StringMatch) -> rc_pb2.QueryParameterMatcher:
    """One query parameter matcher: ``present_match`` or a ``string_match``."""
    if is_presence(match):
        return QueryParameterMatcher(name=name, present_match=True)
    return QueryParameterMatcher(name=name, string_match=string_matcher(match))


def catch_all_match() -> rc_pb2.RouteMatch:
    """``prefix: /``: the match of a route with no match conditions."""
    return RouteMatch(prefix="/")


def translate_match(match: vs_pb2.HTTPMatchRequest | None) -> rc_pb2.RouteMatch:
    """The Envoy RouteMatch for one HTTPMatchRequest (``None``: catch-all)."""
    out = catch_all_match()
    if match is None:
        return out
    headers: list[rc_pb2.HeaderMatcher] = [
        header_matcher(name, value) for name, value in match.headers.items()
    ]
    for name, value in match.without_headers.items():
        matcher = header_matcher(name, value)
        matcher.invert_match = True
        if not is_presence(value):
            matcher.treat_missing_header_as_empty = True
        headers.append(matcher)
    headers.sort(key=lambda matcher: str(matcher.name))
    if match.HasField("method"):
        headers.append(header_matcher(":method", match.method))
    if match.HasField("authority"):
        headers.append(header_matcher(":authority", match.authority))
    if match.HasField("scheme"):
        headers.append(header_matcher(":scheme", match.scheme))
    out.headers.extend(headers)

    if match.HasField("uri"):
        kind = match.uri.WhichOneof("match_type")
        if kind == "exact":
            out.path = match.uri.exact
        elif kind == "prefix":
            out.prefix = match.uri.prefix
        elif kind == "regex":
            out.safe_regex.regex = match.uri.regex
    out.case_sensitive.value = not match.ignore_uri_case

    for name in sorted(match.query_params):
        out.query_parameters.append(query_matcher(name, match.query_params[name]))
    return out


def is_catch_all(match: rc_pb2.RouteMatch) -> bool:
    """A match that takes every request (``/`` prefix or ``.*`` regex, nothing else)."""
    specifier = match.WhichOneof("path_specifier")
    if specifier == "prefix":
        everything = match.prefix == "/"
    elif specifier == "path_separated_prefix":
        everything = match.path_separated_prefix == "/"
    elif specifier == "safe_regex":
        everything = match.safe_regex.regex == ".*"
    else:
        everything = False
    return (
        everything
        and len(match.headers) == 0
        and len(match.query_parameters) == 0
        and len(match.dynamic_metadata) == 0
    )

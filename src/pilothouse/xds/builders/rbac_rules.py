"""One AuthorizationPolicy rule as an Envoy RBAC policy (permissions and principals).

As istiod translates it: a rule matches when every present part matches, each part
(``from`` sources, ``to`` operations) matches when any of its entries does, an entry
when every field it sets does, and a field when any of its values does (``not*`` fields
when none does). ``when`` conditions are each one more AND.

- ``principals`` (and ``source.principal``) match the peer certificate's URI SAN,
  ``spiffe://`` + the value; ``*`` is any authenticated peer; one ``*`` at the start or
  end is a suffix or prefix match. ``namespaces`` (``source.namespace``) and
  ``serviceAccounts`` (``source.serviceAccount``) match the ``/ns/<ns>/sa/<sa>`` part of
  the same SAN.
- ``requestPrincipals`` (``request.auth.principal``, ``<iss>/<sub>``) and the other
  ``request.auth.*`` keys read the verified JWT payload that the ``jwt_authn`` filter
  leaves in its dynamic metadata, under the issuer's name (see :mod:`.jwt_authn`):
  the builder is told the issuers the workload accepts.
- ``ipBlocks`` / ``source.ip`` are the peer's address (``direct_remote_ip``),
  ``remoteIpBlocks`` / ``remote.ip`` the client's (``remote_ip``, from XFF).
- ``hosts`` match ``:authority`` ignoring case, ``methods`` ``:method``, ``paths`` the
  path without the query (``url_path``; a template with ``{*}`` or ``{**}`` through
  Envoy's URI template matcher), ``ports`` / ``destination.port`` the destination port,
  ``destination.ip`` its address, ``connection.sni`` the SNI.

The network (TCP) filter cannot see HTTP attributes (methods, paths, hosts, request
principals, ``request.*`` keys). As istiod does, a rule that needs them matches nothing
in an ALLOW policy, and in a DENY (or CUSTOM, AUDIT) policy they are dropped, so the
rule matches more: a DENY never lets through what it was meant to refuse.
``experimental.envoy.filters.*`` keys are not supported: handled the same way.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from envoy.config.core.v3 import extension_pb2  # type: ignore[import-untyped]
from envoy.config.rbac.v3 import rbac_pb2  # type: ignore[import-untyped]
from envoy.config.route.v3 import route_components_pb2  # type: ignore[import-untyped]
from envoy.extensions.path.match.uri_template.v3 import (  # type: ignore[import-untyped]
    uri_template_match_pb2,
)
from envoy.type.matcher.v3 import (  # type: ignore[import-untyped]
    metadata_pb2,
    path_pb2,
    string_pb2,
    value_pb2,
)

from pilothouse.config.validation.authorization_conditions import parse_condition_key
from pilothouse.xds.builders.listener import cidr_range, typed

Principal = rbac_pb2.Principal
Permission = rbac_pb2.Permission

SPIFFE_PREFIX = "spiffe://"
JWT_AUTHN_FILTER = "envoy.filters.http.jwt_authn"
URI_TEMPLATE = "envoy.path.match.uri_template.uri_template_matcher"


@dataclass(frozen=True, slots=True)
class RuleContext:
    """What translating a rule needs besides the rule: TCP or HTTP, the policy's
    action (for TCP fail-closed), and the issuers whose tokens are verified."""

    tcp: bool
    allow: bool
    issuers: tuple[str, ...] = ()
    namespace: str = ""
    """The policy's namespace: a bare ``serviceAccounts`` name is one of it."""


class Unmatchable(Exception):
    """The rule can never match in this filter (an ALLOW rule needing what TCP lacks)."""


def build_policy(rule: Any, context: RuleContext) -> rbac_pb2.Policy | None:
    """The RBAC policy of one rule, or None when it can never match here."""
    try:
        permissions = _and(_permissions(rule, context), Permission)
        principals = _and(_principals(rule, context), Principal)
    except Unmatchable:
        return None
    return rbac_pb2.Policy(permissions=[permissions], principals=[principals])


# -- parts ------------------------------------------------------------------------------


def _permissions(rule: Any, context: RuleContext) -> list[rbac_pb2.Permission]:
    parts: list[rbac_pb2.Permission] = []
    if rule.to:
        operations = [_operation(t.operation, context) for t in rule.to]
        parts.append(_or(operations, Permission))
    for condition in rule.when:
        made = _condition(condition, context, permission=True)
        if made is not None:
            parts.append(made)
    return parts


def _principals(rule: Any, context: RuleContext) -> list[rbac_pb2.Principal]:
    parts: list[rbac_pb2.Principal] = []
    sources = getattr(rule, "from")
    if sources:
        parts.append(_or([_source(s.source, context) for s in sources], Principal))
    for condition in rule.when:
        made = _condition(condition, context, permission=False)
        if made is not None:
            parts.append(made)
    return parts


def _operation(operation: Any, context: RuleContext) -> rbac_pb2.Permission:
    fields: list[rbac_pb2.Permission] = []

    def add(
        values: Sequence[str], negate: bool, make: Callable[[str], rbac_pb2.Permission]
    ) -> None:
        if values:
            combined = _or([make(v) for v in values], Permission)
            fields.append(Permission(not_rule=combined) if negate else combined)

    for negate in (False, True):
        prefix = "not_" if negate else ""
        add(getattr(operation, prefix + "ports"), negate, _port)
        for name, make in (("hosts", _host), ("methods", _method), ("paths", _path)):
            values = getattr(operation, prefix + name)
            if values and _http_only(context):
                continue
            add(values, negate, make)
    return _and(fields, Permission)


def _source(source: Any, context: RuleContext) -> rbac_pb2.Principal:
    fields: list[rbac_pb2.Principal] = []

    def add(values: Sequence[str], negate: bool, make: Callable[[str], rbac_pb2.Principal]) -> None:
        if values:
            combined = _or([make(v) for v in values], Principal)
            fields.append(Principal(not_id=combined) if negate else combined)

    for negate in (False, True):
        prefix = "not_" if negate else ""
        add(getattr(source, prefix + "principals"), negate, _peer)
        add(getattr(source, prefix + "namespaces"), negate, _namespace)
        add(
            getattr(source, prefix + "service_accounts"),
            negate,
            lambda v: _service_account(v, context.namespace),
        )
        add(getattr(source, prefix + "trust_domains"), negate, _trust_domain)
        add(getattr(source, prefix + "ip_blocks"), negate, _direct_ip)
        add(getattr(source, prefix + "remote_ip_blocks"), negate, _remote_ip)
        request_principals = getattr(source, prefix + "request_principals")
        if request_principals and not _http_only(context):
            add(request_principals, negate, lambda v: _request_principal(v, context.issuers))
    return _and(fields, Principal)


def _condition(condition: Any, context: RuleContext, *, permission: bool) -> Any:
    """The Permission (``permission``) or Principal a ``when`` condition becomes, or None
    when it belongs to the other side."""
    key = parse_condition_key(condition.key)
    if key is None:
        raise ValueError(f"unknown condition key {condition.key!r}")
    attribute = key.attribute
    on_permission = attribute in ("destination.ip", "destination.port", "connection.sni")
    if on_permission != permission:
        return None
    if attribute.startswith("experimental.") or (key.http_only and context.tcp):
        _http_only(context, force=True)
        return None
    make = _condition_matcher(attribute, key.index, context)
    kind = Permission if permission else Principal
    parts = []
    if condition.values:
        parts.append(_or([make(v) for v in condition.values], kind))
    if condition.not_values:
        combined = _or([make(v) for v in condition.not_values], kind)
        parts.append(kind(not_rule=combined) if permission else kind(not_id=combined))
    return _and(parts, kind)


def _condition_matcher(attribute: str, index: str, context: RuleContext) -> Callable[[str], Any]:
    issuers = context.issuers
    matchers: dict[str, Callable[[str], Any]] = {
        "destination.ip": lambda v: Permission(destination_ip=cidr_range(v)),
        "destination.port": _port,
        "connection.sni": lambda v: Permission(requested_server_name=_string(v)),
        "source.ip": _direct_ip,
        "remote.ip": _remote_ip,
        "source.namespace": _namespace,
        "source.principal": _peer,
        "source.serviceAccount": lambda v: _service_account(v, context.namespace),
        "request.auth.principal": lambda v: _request_principal(v, issuers),
        "request.auth.audiences": lambda v: _claim(issuers, ["aud"], v),
        "request.auth.presenter": lambda v: _claim(issuers, ["azp"], v),
        "request.auth.claims": lambda v: _claim(issuers, index.split("]["), v),
        "request.headers": lambda v: Principal(header=_header(index, v)),
    }
    return matchers[attribute]


def _http_only(context: RuleContext, *, force: bool = False) -> bool:
    """Whether an HTTP-only field is to be skipped: on TCP, where an ALLOW rule needing
    it cannot match (raises) and other rules drop it (returns True)."""
    if not context.tcp and not force:
        return False
    if context.allow:
        raise Unmatchable
    return True


# -- single values ----------------------------------------------------------------------


def _string(value: str, *, ignore_case: bool = False) -> string_pb2.StringMatcher:
    """Exact, or prefix/suffix with one ``*`` at the end/start; ``*`` alone is non-empty."""
    if value == "*":
        return string_pb2.StringMatcher(safe_regex={"regex": ".+"})
    if value.startswith("*"):
        return string_pb2.StringMatcher(suffix=value[1:], ignore_case=ignore_case)
    if value.endswith("*"):
        return string_pb2.StringMatcher(prefix=value[:-1], ignore_case=ignore_case)
    return string_pb2.StringMatcher(exact=value, ignore_case=ignore_case)


def _peer(value: str) -> rbac_pb2.Principal:
    if value == "*":
        matcher = _string("*")
    elif value.startswith("*"):
        matcher = _string(value)
    else:
        matcher = _string(SPIFFE_PREFIX + value)
    return Principal(authenticated=rbac_pb2.Principal.Authenticated(principal_name=matcher))


def _identity_regex(pattern: str) -> str:
    """RE2 for one ``*``-glob segment of a SPIFFE path (``*`` stays within the segment)."""
    return "[^/]*".join(re.escape(part) for part in pattern.split("*"))


def _namespace(value: str) -> rbac_pb2.Principal:
    regex = f"spiffe://[^/]+/ns/{_identity_regex(value)}/sa/[^/]+"
    return _authenticated_regex(regex)


def _service_account(value: str, own: str) -> rbac_pb2.Principal:
    """``<ns>/<sa>``, or a bare ``<sa>`` of the policy's own namespace ``own``."""
    namespace, _, account = value.rpartition("/")
    namespace = namespace or own
    regex = f"spiffe://[^/]+/ns/{re.escape(namespace)}/sa/{re.escape(account)}"
    return _authenticated_regex(regex)


def _trust_domain(value: str) -> rbac_pb2.Principal:
    return _authenticated_regex(f"spiffe://{_identity_regex(value)}/ns/[^/]+/sa/[^/]+")


def _authenticated_regex(regex: str) -> rbac_pb2.Principal:
    matcher = string_pb2.StringMatcher(safe_regex={"regex": regex})
    return Principal(authenticated=rbac_pb2.Principal.Authenticated(principal_name=matcher))


def _direct_ip(value: str) -> rbac_pb2.Principal:
    return Principal(direct_remote_ip=cidr_range(value))


def _remote_ip(value: str) -> rbac_pb2.Principal:
    return Principal(remote_ip=cidr_range(value))


def _port(value: str) -> rbac_pb2.Permission:
    return Permission(destination_port=int(value))


def _header(name: str, value: str) -> route_components_pb2.HeaderMatcher:
    return route_components_pb2.HeaderMatcher(name=name, string_match=_string(value))


def _host(value: str) -> rbac_pb2.Permission:
    matcher = _string(value, ignore_case=True)
    return Permission(
        header=route_components_pb2.HeaderMatcher(name=":authority", string_match=matcher)
    )


def _method(value: str) -> rbac_pb2.Permission:
    return Permission(header=_header(":method", value))


def _path(value: str) -> rbac_pb2.Permission:
    if "{*}" in value or "{**}" in value:
        return _path_template(value)
    return Permission(url_path=path_pb2.PathMatcher(path=_string(value)))


def _path_template(value: str) -> rbac_pb2.Permission:
    """Istio's path templates (``{*}`` one segment, ``{**}`` any rest) as Envoy's URI
    template matcher (``*`` and ``**``)."""
    template = value.replace("{**}", "**").replace("{*}", "*")
    config = uri_template_match_pb2.UriTemplateMatchConfig(path_template=template)
    extension = extension_pb2.TypedExtensionConfig(name=URI_TEMPLATE, typed_config=typed(config))
    return Permission(uri_template=extension)


def _claim(issuers: Iterable[str], path: Sequence[str], value: str) -> rbac_pb2.Principal:
    """A payload claim of a verified token of any of ``issuers``: the value itself or an
    element of the list it is."""
    matches = []
    for issuer in issuers:
        segments = [issuer, *path]
        string = value_pb2.ValueMatcher(string_match=_string(value))
        listed = value_pb2.ValueMatcher(list_match={"one_of": string})
        for matcher in (string, listed):
            matches.append(_payload(segments, matcher))
    return _or(matches, Principal) if matches else _nothing()


def _request_principal(value: str, issuers: Iterable[str]) -> rbac_pb2.Principal:
    """``<iss>/<sub>`` (``*`` globs at either end) over the accepted issuers' tokens."""
    present = value_pb2.ValueMatcher(present_match=True)
    matches = []
    for issuer in issuers:
        whole = issuer + "/"
        if value == "*":
            matches.append(_payload([issuer, "sub"], present))
        elif value.endswith("*") and value[:-1].startswith(whole):
            sub = _string(value[len(whole) :])
            matches.append(_sub(issuer, sub))
        elif value.endswith("*") and whole.startswith(value[:-1]):
            matches.append(_payload([issuer, "sub"], present))
        elif value.startswith("*") and "/" not in value:
            matches.append(_sub(issuer, _string(value)))
        elif value.startswith("*") and whole.endswith(value[1:].rpartition("/")[0] + "/"):
            matches.append(_sub(issuer, _string(value[1:].rpartition("/")[2])))
        elif value.startswith(whole) and "*" not in value:
            matches.append(_sub(issuer, _string(value[len(whole) :])))
    return _or(matches, Principal) if matches else _nothing()


def _sub(issuer: str, sub: string_pb2.StringMatcher) -> rbac_pb2.Principal:
    return _payload([issuer, "sub"], value_pb2.ValueMatcher(string_match=sub))


def _payload(path: Sequence[str], value: value_pb2.ValueMatcher) -> rbac_pb2.Principal:
    """A match on the verified JWT payload in ``jwt_authn``'s dynamic metadata."""
    matcher = metadata_pb2.MetadataMatcher(
        filter=JWT_AUTHN_FILTER, path=[{"key": p} for p in path], value=value
    )
    return Principal(sourced_metadata=rbac_pb2.SourcedMetadata(metadata_matcher=matcher))


def _nothing() -> rbac_pb2.Principal:
    """Matches no request (a request principal of an issuer the workload does not accept)."""
    return Principal(not_id=Principal(any=True))


# -- combinators ------------------------------------------------------------------------


def _and(parts: list[Any], kind: Any) -> Any:
    if not parts:
        return kind(any=True)
    if len(parts) == 1:
        return parts[0]
    if kind is Permission:
        return Permission(and_rules={"rules": parts})
    return Principal(and_ids={"ids": parts})


def _or(parts: list[Any], kind: Any) -> Any:
    if len(parts) == 1:
        return parts[0]
    if kind is Permission:
        return Permission(or_rules={"rules": parts})
    return Principal(or_ids={"ids": parts})

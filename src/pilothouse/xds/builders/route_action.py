"""An ``HTTPRoute``'s action: forward (``RouteAction``), ``redirect`` or ``direct_response``.

Forwarding, as istiod:

- destinations: one → ``cluster`` (its header operations join the route's, its
  authority rewrite applies unless the route already rewrites the host);
  several → ``weighted_clusters`` without ``total_weight`` (Envoy sums the
  weights, so they need not add up to 100), zero weights left out, header
  operations and authority on each ``ClusterWeight``.  A route left with no
  destination is dropped (``None``).
- consistent hashing: each destination's ``hash_policy_for(cluster)`` entries
  are appended to ``hash_policy``; with a single hashed destination the
  default retry policy leaves out the ``previous_hosts`` predicate.
- ``timeout`` → ``timeout`` (``0s`` = disabled when unset) and the same value as
  ``max_stream_duration`` and its ``grpc_timeout_header_max``, so gRPC's
  ``grpc-timeout`` header is honoured (istiod's current form; ``max_grpc_timeout`` is
  deprecated in Envoy).
- ``rewrite``: ``uri_regex_rewrite`` → ``regex_rewrite``; ``uri`` →
  ``prefix_rewrite`` whatever the match kind: Envoy replaces the matched part,
  which for an exact (``path``) or regex match is the whole path, so this
  is a full-path replacement there, as in istiod.  ``authority`` →
  ``host_rewrite_literal`` (winning over a ``headers`` authority).
- ``mirror`` (with ``mirror_percentage`` / the older ``mirror_percent``, 100 %
  when neither) and each ``mirrors`` entry → ``request_mirror_policies`` with
  ``runtime_fraction`` and ``trace_sampled: false``; an explicit 0 % drops it.
- ``retries`` → ``retry_policy`` (see :mod:`route_retry`).

Redirects: ``uri`` → ``path_redirect``, the newer ``prefix_rewrite`` →
``prefix_rewrite`` (it wins when both are set), ``authority`` →
``host_redirect``, ``scheme`` → ``scheme_redirect``, ``port`` → ``port_redirect``,
``derive_port: FROM_REQUEST_PORT`` → the port being built; the default port
of the (given or implied) scheme is left out.  ``redirect_code`` 0/301, 302,
303, 307, 308 map to Envoy's enum; any other code drops the route (istiod
would emit a route with no action, which Envoy rejects).

Direct responses: ``status`` and the body as ``inline_string`` /
``inline_bytes``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from envoy.config.core.v3 import base_pb2  # type: ignore[import-untyped]
from envoy.config.route.v3 import route_components_pb2 as rc_pb2  # type: ignore[import-untyped]
from envoy.type.v3 import percent_pb2  # type: ignore[import-untyped]

from pilothouse.api.istio.networking.v1alpha3 import virtual_service_pb2 as vs_pb2
from pilothouse.push.hostnames import DEFAULT_DOMAIN_SUFFIX
from pilothouse.xds.builders.route_destination import DestinationResolver, destination_cluster
from pilothouse.xds.builders.route_fault import hundred_percent, million_percent
from pilothouse.xds.builders.route_headers import header_operations
from pilothouse.xds.builders.route_retry import retry_policy

HashPolicyLookup = Callable[[str], Sequence[rc_pb2.RouteAction.HashPolicy]]
RedirectAction = rc_pb2.RedirectAction

_REDIRECT_CODES = {
    0: RedirectAction.MOVED_PERMANENTLY,
    301: RedirectAction.MOVED_PERMANENTLY,
    302: RedirectAction.FOUND,
    303: RedirectAction.SEE_OTHER,
    307: RedirectAction.TEMPORARY_REDIRECT,
    308: RedirectAction.PERMANENT_REDIRECT,
}


@dataclass(frozen=True, slots=True)
class RouteContext:
    """Everything the action builders read besides the HTTPRoute itself."""

    namespace: str
    resolver: DestinationResolver
    port: int
    hash_policy_for: HashPolicyLookup | None = None
    default_retries: vs_pb2.HTTPRetry | None = None
    tls_listener: bool = False
    domain_suffix: str = DEFAULT_DOMAIN_SUFFIX

    def cluster(self, destination: vs_pb2.Destination) -> str:
        """The cluster name for a destination of this VirtualService."""
        return destination_cluster(
            destination,
            self.namespace,
            self.resolver,
            current_port=self.port,
            domain_suffix=self.domain_suffix,
        )

    def hash_policies(self, cluster: str) -> list[rc_pb2.RouteAction.HashPolicy]:
        """The consistent-hash policies of the DestinationRule behind ``cluster``."""
        return [] if self.hash_policy_for is None else list(self.hash_policy_for(cluster))


def apply_forward(
    out: rc_pb2.Route, route: vs_pb2.HTTPRoute, ctx: RouteContext, authority: str
) -> bool:
    """Fill ``out.route`` from ``route``; False when there is nothing to forward to."""
    action = out.route
    if route.HasField("timeout"):
        action.timeout.CopyFrom(route.timeout)
    else:
        action.timeout.SetInParent()
    action.max_stream_duration.max_stream_duration.CopyFrom(action.timeout)
    action.max_stream_duration.grpc_timeout_header_max.CopyFrom(action.timeout)

    if route.HasField("rewrite"):
        rewrite = route.rewrite
        if rewrite.HasField("uri_regex_rewrite"):
            action.regex_rewrite.pattern.regex = rewrite.uri_regex_rewrite.match
            action.regex_rewrite.substitution = rewrite.uri_regex_rewrite.rewrite
        elif rewrite.uri:
            action.prefix_rewrite = rewrite.uri
        if rewrite.authority:
            authority = rewrite.authority
    if authority:
        action.host_rewrite_literal = authority

    _apply_mirrors(action, route, ctx)

    destinations = list(route.route)
    consistent_hash = False
    if len(destinations) == 1:
        consistent_hash = _single_destination(out, destinations[0], ctx)
    else:
        for destination in destinations:
            if destination.weight > 0:
                _weighted_destination(action, destination, ctx)
        if len(action.weighted_clusters.clusters) == 0:
            return False

    retries = route.retries if route.HasField("retries") else ctx.default_retries
    policy = retry_policy(retries, consistent_hash=consistent_hash)
    if policy is not None:
        action.retry_policy.CopyFrom(policy)
    return True


def _single_destination(
    out: rc_pb2.Route, destination: vs_pb2.HTTPRouteDestination, ctx: RouteContext
) -> bool:
    action = out.route
    action.cluster = ctx.cluster(destination.destination)
    if destination.HasField("headers"):
        operations = header_operations(destination.headers)
        out.request_headers_to_add.extend(operations.request_to_add)
        out.request_headers_to_remove.extend(operations.request_to_remove)
        out.response_headers_to_add.extend(operations.response_to_add)
        out.response_headers_to_remove.extend(operations.response_to_remove)
        if operations.authority and action.WhichOneof("host_rewrite_specifier") is None:
            action.host_rewrite_literal = operations.authority
    hashes = ctx.hash_policies(action.cluster)
    action.hash_policy.extend(hashes)
    return len(hashes) > 0


def _weighted_destination(
    action: rc_pb2.RouteAction, destination: vs_pb2.HTTPRouteDestination, ctx: RouteContext
) -> None:
    entry = action.weighted_clusters.clusters.add(name=ctx.cluster(destination.destination))
    entry.weight.value = destination.weight
    if destination.HasField("headers"):
        operations = header_operations(destination.headers)
        entry.request_headers_to_add.extend(operations.request_to_add)
        entry.request_headers_to_remove.extend(operations.request_to_remove)
        entry.response_headers_to_add.extend(operations.response_to_add)
        entry.response_headers_to_remove.extend(operations.response_to_remove)
        if operations.authority:
            entry.host_rewrite_literal = operations.authority
    action.hash_policy.extend(ctx.hash_policies(entry.name))


def _apply_mirrors(action: rc_pb2.RouteAction, route: vs_pb2.HTTPRoute, ctx: RouteContext) -> None:
    if route.HasField("mirror"):
        if route.HasField("mirror_percentage"):
            value = route.mirror_percentage.value
            fraction = million_percent(route.mirror_percentage) if value > 0 else None
        elif route.HasField("mirror_percent"):
            value = route.mirror_percent.value
            fraction = hundred_percent(int(value)) if value > 0 else None
        else:
            fraction = hundred_percent(100)
        if fraction is not None:
            _add_mirror(action, ctx.cluster(route.mirror), fraction)
    for mirror in route.mirrors:
        if not mirror.HasField("destination"):
            continue
        if mirror.HasField("percentage"):
            if mirror.percentage.value <= 0:
                continue
            fraction = million_percent(mirror.percentage)
        else:
            fraction = hundred_percent(100)
        _add_mirror(action, ctx.cluster(mirror.destination), fraction)


def _add_mirror(
    action: rc_pb2.RouteAction, cluster: str, fraction: percent_pb2.FractionalPercent
) -> None:
    policy = action.request_mirror_policies.add(cluster=cluster)
    policy.runtime_fraction.default_value.CopyFrom(fraction)
    policy.trace_sampled.value = False


def apply_redirect(out: rc_pb2.Route, redirect: vs_pb2.HTTPRedirect, ctx: RouteContext) -> bool:
    """Fill ``out.redirect``; False for a redirect code Envoy cannot send."""
    code = _REDIRECT_CODES.get(redirect.redirect_code)
    if code is None:
        return False
    action = out.redirect
    action.response_code = code
    if redirect.authority:
        action.host_redirect = redirect.authority
    if redirect.prefix_rewrite:
        action.prefix_rewrite = redirect.prefix_rewrite
    elif redirect.uri:
        action.path_redirect = redirect.uri
    if redirect.scheme:
        action.scheme_redirect = redirect.scheme
    port_kind = redirect.WhichOneof("redirect_port")
    if port_kind is not None:
        port = 0
        if port_kind == "port":
            port = redirect.port
        elif redirect.derive_port == vs_pb2.HTTPRedirect.FROM_REQUEST_PORT:
            port = ctx.port
        scheme = redirect.scheme or ("https" if ctx.tls_listener else "http")
        if (port, scheme) not in ((80, "http"), (443, "https")):
            action.port_redirect = port
    return True


def apply_direct_response(out: rc_pb2.Route, response: vs_pb2.HTTPDirectResponse) -> None:
    """Fill ``out.direct_response``."""
    action = out.direct_response
    action.status = response.status
    kind = response.body.WhichOneof("specifier") if response.HasField("body") else None
    if kind == "string":
        action.body.CopyFrom(base_pb2.DataSource(inline_string=response.body.string))
    elif kind == "bytes":
        action.body.CopyFrom(base_pb2.DataSource(inline_bytes=response.body.bytes))

"""VirtualService ``http`` → Envoy ``Route`` list; the default route of a service.

:func:`build_http_routes` follows istiod's ``BuildHTTPRoutesForVirtualService``:

- Delegations are expanded first (:mod:`route_delegate`).
- Every HTTPRoute becomes one Envoy Route per HTTPMatchRequest, in order, all
  with the same action; a route with no match becomes one catch-all
  (``prefix: /``) route.  Matches that do not apply to this port, gateway or
  proxy are skipped (:func:`route_match.match_applies`).
- Routes after the first catch-all are never reached, so nothing is emitted
  after it.
- Route name: the HTTPRoute's ``name``, joined with ``.`` to the match's
  ``name`` when that is set (``"" + "." + match`` included, as istiod);
  ``stat_prefix`` from the match.
- Action: redirect, else direct response, else forwarding
  (:mod:`route_action`).  Route-level ``headers`` become the route's header
  mutations.  ``fault`` and ``cors_policy`` go to ``typed_per_filter_config``
  under ``envoy.filters.http.fault`` and ``envoy.filters.http.cors``.
- ``metadata.filter_metadata["istio"]["config"]`` names the VirtualService
  (``/apis/networking.istio.io/v1/namespaces/<ns>/virtual-service/<name>``),
  and ``decorator.operation`` is ``<host>:<port><path>`` for a single known
  cluster, else ``<vs name>:<port><path>`` (``<path>`` is ``/prefix*``, the
  exact path or the regex), as istiod writes them for tracing.

A route that cannot be expressed (no destination left, an unsupported
redirect code) is dropped rather than sent for Envoy to reject.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Final

from envoy.config.route.v3 import route_components_pb2 as rc_pb2  # type: ignore[import-untyped]

from pilothouse.api.istio.networking.v1alpha3 import virtual_service_pb2 as vs_pb2
from pilothouse.push.hostnames import DEFAULT_DOMAIN_SUFFIX
from pilothouse.xds.builders.names import parse_cluster_name
from pilothouse.xds.builders.route_action import (
    HashPolicyLookup,
    RouteContext,
    apply_direct_response,
    apply_forward,
    apply_redirect,
)
from pilothouse.xds.builders.route_cors import CORS_FILTER, cors_policy
from pilothouse.xds.builders.route_delegate import DelegateLookup, expand_delegates
from pilothouse.xds.builders.route_destination import DestinationResolver
from pilothouse.xds.builders.route_fault import FAULT_FILTER, http_fault
from pilothouse.xds.builders.route_headers import header_operations
from pilothouse.xds.builders.route_match import (
    current_gateways,
    gateway_set,
    is_catch_all,
    match_applies,
    translate_match,
)
from pilothouse.xds.builders.route_retry import default_retry_policy

Route = rc_pb2.Route

DEFAULT_ROUTE_NAME: Final = "default"
ISTIO_METADATA_KEY: Final = "istio"


def virtual_service_config_path(namespace: str, name: str) -> str:
    """The path istiod puts in route metadata to name a VirtualService."""
    return f"/apis/networking.istio.io/v1/namespaces/{namespace}/virtual-service/{name}"


def build_http_routes(
    vs_spec: vs_pb2.VirtualService,
    namespace: str,
    resolver: DestinationResolver,
    *,
    port: int,
    gateway: str | Collection[str] | None,
    vs_name: str,
    proxy_labels: Mapping[str, str] | None = None,
    proxy_namespace: str | None = None,
    hash_policy_for: HashPolicyLookup | None = None,
    lookup_delegate: DelegateLookup | None = None,
    default_retries: vs_pb2.HTTPRetry | None = None,
    tls_listener: bool = False,
    domain_suffix: str = DEFAULT_DOMAIN_SUFFIX,
) -> list[rc_pb2.Route]:
    """The Envoy routes of one VirtualService, for one port and gateway (``None``: sidecar).

    ``gateway`` is ``"<ns>/<name>"`` (or several, for a server shared by
    Gateways); ``default_retries`` is the mesh's default retry policy;
    ``tls_listener`` tells redirects that the listener terminates TLS.
    """
    ctx = RouteContext(
        namespace=namespace,
        resolver=resolver,
        port=port,
        default_retries=default_retries,
        tls_listener=tls_listener,
        domain_suffix=domain_suffix,
        hash_policy_for=hash_policy_for,
    )
    gateways = current_gateways(gateway)
    vs_gateways = gateway_set(vs_spec.gateways, namespace)
    config_path = virtual_service_config_path(namespace, vs_name)
    out: list[rc_pb2.Route] = []
    for http in expand_delegates(vs_spec.http, namespace, lookup_delegate, domain_suffix):
        matches: list[vs_pb2.HTTPMatchRequest | None] = [
            match
            for match in http.match
            if match_applies(
                match,
                port=port,
                gateways=gateways,
                vs_gateways=vs_gateways,
                namespace=namespace,
                proxy_labels=proxy_labels,
                proxy_namespace=proxy_namespace,
            )
        ]
        if len(http.match) == 0 and not gateways.isdisjoint(vs_gateways):
            matches = [None]
        for match in matches:
            route = translate_route(http, match, ctx, vs_name=vs_name, config_path=config_path)
            if route is None:
                continue
            out.append(route)
            if is_catch_all(route.match):
                return out
    return out


def translate_route(
    http: vs_pb2.HTTPRoute,
    match: vs_pb2.HTTPMatchRequest | None,
    ctx: RouteContext,
    *,
    vs_name: str,
    config_path: str,
) -> rc_pb2.Route | None:
    """One Envoy route for one HTTPRoute and one of its matches (``None``: no match)."""
    name = http.name
    if match is not None and match.name:
        name = f"{name}.{match.name}"
    out = Route(name=name, match=translate_match(match))
    out.metadata.filter_metadata[ISTIO_METADATA_KEY].update({"config": config_path})
    if match is not None and match.stat_prefix:
        out.stat_prefix = match.stat_prefix

    authority = ""
    if http.HasField("headers"):
        operations = header_operations(http.headers)
        out.request_headers_to_add.extend(operations.request_to_add)
        out.request_headers_to_remove.extend(operations.request_to_remove)
        out.response_headers_to_add.extend(operations.response_to_add)
        out.response_headers_to_remove.extend(operations.response_to_remove)
        authority = operations.authority

    if http.HasField("redirect"):
        if not apply_redirect(out, http.redirect, ctx):
            return None
    elif http.HasField("direct_response"):
        apply_direct_response(out, http.direct_response)
    elif not apply_forward(out, http, ctx, authority):
        return None

    out.decorator.operation = route_operation(out, vs_name, ctx.port)
    if http.HasField("fault"):
        fault = http_fault(http.fault)
        if fault is not None:
            out.typed_per_filter_config[FAULT_FILTER].Pack(fault)
    if http.HasField("cors_policy"):
        out.typed_per_filter_config[CORS_FILTER].Pack(cors_policy(http.cors_policy))
    return out


def route_operation(route: rc_pb2.Route, vs_name: str, port: int) -> str:
    """The tracing operation name istiod gives a route."""
    match = route.match
    specifier = match.WhichOneof("path_specifier")
    if specifier == "prefix":
        path = f"{match.prefix}*"
    elif specifier == "path":
        path = str(match.path)
    elif specifier == "safe_regex":
        path = str(match.safe_regex.regex)
    else:
        path = "/*"
    cluster = route.route.cluster if route.WhichOneof("action") == "route" else ""
    parsed = parse_cluster_name(cluster) if cluster else None
    if parsed is not None:
        return f"{parsed.host}:{parsed.port}{path}"
    return f"{vs_name}:{port}{path}"


def build_default_route(
    cluster: str,
    *,
    hash_policy: Collection[rc_pb2.RouteAction.HashPolicy] = (),
) -> rc_pb2.Route:
    """The route of a service no VirtualService covers: everything to its cluster.

    As istiod: name ``default``, ``prefix: /``, timeout ``0s`` (disabled), the
    default retry policy (with ``previous_hosts`` even when hashing, as istiod),
    the DestinationRule's hash policy, and ``<host>:<port>/*`` as the operation.
    """
    out = Route(name=DEFAULT_ROUTE_NAME)
    out.match.prefix = "/"
    action = out.route
    action.cluster = cluster
    action.timeout.SetInParent()
    action.max_stream_duration.max_stream_duration.SetInParent()
    action.max_stream_duration.grpc_timeout_header_max.SetInParent()
    action.retry_policy.CopyFrom(default_retry_policy())
    action.hash_policy.extend(hash_policy)
    parsed = parse_cluster_name(cluster)
    operation = f"{parsed.host}:{parsed.port}/*" if parsed is not None else f"{cluster}/*"
    out.decorator.operation = operation
    return out

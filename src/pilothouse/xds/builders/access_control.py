"""A workload's access control as listener filters: JWT authentication, then RBAC.

HTTP ports get ``jwt_authn`` (from the RequestAuthentications) followed by the RBAC
filters (from the AuthorizationPolicies), before the HCM's other filters; TCP ports get
the network RBAC filters before ``tcp_proxy``. A workload without policies gets none.

The filters depend on the policies alone, so :class:`AccessFilters` holds them built once
(for every port of a workload, and every workload the same policies select) and the
listener builders copy them in. Gateway listeners come out of the gateway builders whole;
:func:`guard_listener` puts the same filters into each of their chains afterwards.
"""

from __future__ import annotations

from dataclasses import dataclass

from envoy.config.listener.v3 import (  # type: ignore[import-untyped]
    listener_components_pb2,
    listener_pb2,
)
from envoy.extensions.filters.network.http_connection_manager.v3 import (  # type: ignore[import-untyped]
    http_connection_manager_pb2 as hcm_pb2,
)

from pilothouse.push.authorization import WorkloadAuthorization
from pilothouse.xds.builders.http_connection_manager import GRPC_WEB_FILTER
from pilothouse.xds.builders.jwt_authn import accepted_issuers, jwt_authn_filter
from pilothouse.xds.builders.listener import HTTP_CONNECTION_MANAGER, TCP_PROXY
from pilothouse.xds.builders.rbac import http_rbac_filters, network_rbac_filters


@dataclass(frozen=True, slots=True)
class AccessFilters:
    """The filters one set of policies becomes: for HTTP ports and for TCP ports."""

    http: tuple[hcm_pb2.HttpFilter, ...] = ()
    network: tuple[listener_components_pb2.Filter, ...] = ()

    @classmethod
    def of(cls, authorization: WorkloadAuthorization) -> AccessFilters:
        if authorization.empty:
            return NO_ACCESS_FILTERS
        return cls(
            tuple(http_access_filters(authorization)),
            tuple(network_access_filters(authorization)),
        )


NO_ACCESS_FILTERS = AccessFilters()


def http_access_filters(authorization: WorkloadAuthorization) -> list[hcm_pb2.HttpFilter]:
    """``jwt_authn`` then the HTTP RBAC filters."""
    if authorization.empty:
        return []
    issuers = accepted_issuers(authorization.authentications)
    return [
        *jwt_authn_filter(authorization.authentications, authorization.key_set),
        *http_rbac_filters(authorization.policies, issuers),
    ]


def network_access_filters(
    authorization: WorkloadAuthorization,
) -> list[listener_components_pb2.Filter]:
    """The network RBAC filters (RequestAuthentication has no say over TCP)."""
    if not authorization.policies:
        return []
    return network_rbac_filters(authorization.policies)


def guard_listener(listener: listener_pb2.Listener, access: AccessFilters) -> None:
    """Put the access-control filters into every chain of a built ``listener``: into each
    HCM (before its other filters, after ``grpc_web``), before each ``tcp_proxy``."""
    if access is NO_ACCESS_FILTERS:
        return
    http, network = access.http, access.network
    for chain in listener.filter_chains:
        filters = list(chain.filters)
        guarded: list[listener_components_pb2.Filter] = []
        for network_filter in filters:
            if network_filter.name == TCP_PROXY:
                guarded.extend(network)
            elif network_filter.name == HTTP_CONNECTION_MANAGER and http:
                manager = hcm_pb2.HttpConnectionManager()
                network_filter.typed_config.Unpack(manager)
                present = list(manager.http_filters)
                at = 1 if present and present[0].name == GRPC_WEB_FILTER else 0
                del manager.http_filters[:]
                manager.http_filters.extend([*present[:at], *http, *present[at:]])
                network_filter.typed_config.Pack(manager)
            guarded.append(network_filter)
        del chain.filters[:]
        chain.filters.extend(guarded)

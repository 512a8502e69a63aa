"""A workload's access control as listener filters: JWT authentication, then RBAC.

HTTP ports get ``jwt_authn`` (from the RequestAuthentications) followed by the RBAC
filters (from the AuthorizationPolicies), before the HCM's other filters; TCP ports get
the network RBAC filters before ``tcp_proxy``. A workload without policies gets none.
"""

from __future__ import annotations

from envoy.config.listener.v3 import listener_components_pb2  # type: ignore[import-untyped]
from envoy.extensions.filters.network.http_connection_manager.v3 import (  # type: ignore[import-untyped]
    http_connection_manager_pb2 as hcm_pb2,
)

from pilothouse.push.authorization import WorkloadAuthorization
from pilothouse.xds.builders.jwt_authn import accepted_issuers, jwt_authn_filter
from pilothouse.xds.builders.rbac import http_rbac_filters, network_rbac_filters


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

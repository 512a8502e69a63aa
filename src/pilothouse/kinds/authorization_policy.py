"""AuthorizationPolicy: who may call a workload (RBAC filters on its inbound listeners).

It selects workloads by labels, so no scope sees it: a change concerns the proxies
whose workload its old or new version selects, asked of the push context's
``authorizations`` index (:mod:`pilothouse.push.selected_workloads`). Only listeners
read it; clusters and routes never do (istiod skips both too).
"""

from __future__ import annotations

from pilothouse.api.istio.security.v1beta1 import authorization_policy_pb2
from pilothouse.config.validation import validate_authorization_policy
from pilothouse.kinds.groups import security
from pilothouse.kinds.kind import Audience, Kind
from pilothouse.protocol.type_urls import CDS, RDS

KIND = Kind(
    name="AuthorizationPolicy",
    schema=security(
        "AuthorizationPolicy",
        authorization_policy_pb2.AuthorizationPolicy,
        "authorizationpolicies",
        validate_authorization_policy,
    ),
    short_names=("ap",),
    audience=Audience.SELECTED_WORKLOADS,
    unread_by=frozenset({CDS, RDS}),
    index="authorizations",
)

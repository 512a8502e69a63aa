"""RequestAuthentication: the JWT issuers a workload accepts (JWT filters inbound).

It selects workloads by labels, so no scope sees it: a change concerns the proxies
whose workload its old or new version selects, asked of the push context's
``authorizations`` index (:mod:`pilothouse.push.selected_workloads`). Only listeners
read it (and the key sets fetched from its ``jwksUri``s); clusters and routes never do
(istiod skips both too).
"""

from __future__ import annotations

from pilothouse.api.istio.security.v1beta1 import request_authentication_pb2
from pilothouse.config.validation import validate_request_authentication
from pilothouse.kinds.groups import security
from pilothouse.kinds.kind import Audience, Kind
from pilothouse.protocol.type_urls import CDS, RDS

KIND = Kind(
    name="RequestAuthentication",
    schema=security(
        "RequestAuthentication",
        request_authentication_pb2.RequestAuthentication,
        "requestauthentications",
        validate_request_authentication,
    ),
    short_names=("ra",),
    audience=Audience.SELECTED_WORKLOADS,
    unread_by=frozenset({CDS, RDS}),
    index="authorizations",
)

"""Semantic validation of Istio config specs, one ``validate_<kind>(spec, report)`` per kind.

Each validator appends findings (errors and warnings) to the :class:`Report` it is given,
with paths written from the object's top the way users read YAML
(``spec.http[0].route[1].weight``). The rules follow Istio's own validation.
"""

from pilothouse.config.validation.authorization_policy import validate_authorization_policy
from pilothouse.config.validation.destination_rule import validate_destination_rule
from pilothouse.config.validation.envoy_filter import validate_envoy_filter
from pilothouse.config.validation.gateway import validate_gateway
from pilothouse.config.validation.peer_authentication import validate_peer_authentication
from pilothouse.config.validation.report import Finding, Report, Severity
from pilothouse.config.validation.request_authentication import validate_request_authentication
from pilothouse.config.validation.service_entry import validate_service_entry
from pilothouse.config.validation.sidecar import validate_sidecar
from pilothouse.config.validation.virtual_service import validate_virtual_service
from pilothouse.config.validation.workload_entry import validate_workload_entry
from pilothouse.config.validation.workload_group import validate_workload_group

__all__ = [
    "Finding",
    "Report",
    "Severity",
    "validate_authorization_policy",
    "validate_destination_rule",
    "validate_envoy_filter",
    "validate_gateway",
    "validate_peer_authentication",
    "validate_request_authentication",
    "validate_service_entry",
    "validate_sidecar",
    "validate_virtual_service",
    "validate_workload_entry",
    "validate_workload_group",
]

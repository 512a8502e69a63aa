"""WorkloadGroup: the template of the WorkloadEntries a group of workloads registers.

Served (validated, stored, sent over MCP and MCP-over-xDS) but read by no builder yet:
a change concerns only proxies of its namespace (the rule a WorkloadEntry follows) and
moves no endpoint.
"""

from __future__ import annotations

from pilothouse.api.istio.networking.v1alpha3 import workload_group_pb2
from pilothouse.config.validation import validate_workload_group
from pilothouse.kinds.groups import networking
from pilothouse.kinds.kind import Audience, Kind

KIND = Kind(
    name="WorkloadGroup",
    schema=networking(
        "WorkloadGroup",
        workload_group_pb2.WorkloadGroup,
        "workloadgroups",
        validate_workload_group,
    ),
    short_names=("wg",),
    audience=Audience.OWN_NAMESPACE,
)

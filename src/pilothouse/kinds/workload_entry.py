"""WorkloadEntry: one workload (a VM, a pod outside Kubernetes) behind services.

The registry turns it into endpoints of the services that select it, so its changes
reach pushes as registry updates, and the proxies calling those services see them
through the registry's service keys (EDS). Its own proxy's view (inbound listeners)
matters only to proxies of its namespace. The push context keeps no index of it: the
registry's endpoint index does.
"""

from __future__ import annotations

from pilothouse.api.istio.networking.v1alpha3 import workload_entry_pb2
from pilothouse.config.validation import validate_workload_entry
from pilothouse.kinds.groups import networking
from pilothouse.kinds.kind import Audience, Kind

KIND = Kind(
    name="WorkloadEntry",
    schema=networking(
        "WorkloadEntry",
        workload_entry_pb2.WorkloadEntry,
        "workloadentries",
        validate_workload_entry,
    ),
    short_names=("we",),
    audience=Audience.OWN_NAMESPACE,
    moves_endpoints=True,
    in_registry=True,
)

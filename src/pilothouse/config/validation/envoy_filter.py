"""EnvoyFilter: where it applies, what each patch matches, and that each value is the
Envoy message its ``applyTo`` names.

The rules are istiod's (``pkg/config/validation/envoyfilter``): an operation and an
applyTo must be set, every operation but REMOVE needs a value, a match must be of the
applyTo's class (listener, route configuration or cluster), a filter match needs a name,
a subFilter only goes under the HTTP connection manager, a proxyVersion is RE2. A value
is read strictly (:mod:`pilothouse.config.envoy_values`): an unknown field or ``@type``
is an error at its path (``spec.configPatches[2].patch.value.typed_config.bogus``),
where istiod drops unknown fields with a warning. Operations istiod accepts and then
ignores for an applyTo (REPLACE of a LISTENER, ADD of a ROUTE_CONFIGURATION …), and
ADDs of network or HTTP filters (appended after the terminal filter: Envoy refuses the
listener), are warnings; so is any BOOTSTRAP operation but MERGE (istiod skipped them
when it served bootstraps; ``pilothouse bootstrap`` merges the MERGEs). A ``waypoint``
match needs context WAYPOINT; a WAYPOINT patch is accepted with a warning that it matches
nothing (pilothouse serves no waypoints).
"""

from __future__ import annotations

from typing import Final

from pilothouse.api.istio.networking.v1alpha3.envoy_filter_pb2 import EnvoyFilter
from pilothouse.config.envoy_values import ValueProblem, decode_value
from pilothouse.config.validation.enums import check_enum_values
from pilothouse.config.validation.labels import check_workload_selector
from pilothouse.config.validation.regex import MAX_REGEX_LENGTH, check_regex
from pilothouse.config.validation.report import Report

Patch = EnvoyFilter.Patch
MAX_PORT: Final = 65535

LISTENER_CLASS: Final = frozenset(
    {
        EnvoyFilter.LISTENER,
        EnvoyFilter.FILTER_CHAIN,
        EnvoyFilter.NETWORK_FILTER,
        EnvoyFilter.HTTP_FILTER,
        EnvoyFilter.LISTENER_FILTER,
    }
)
ROUTE_CLASS: Final = frozenset(
    {EnvoyFilter.ROUTE_CONFIGURATION, EnvoyFilter.VIRTUAL_HOST, EnvoyFilter.HTTP_ROUTE}
)
HTTP_CONNECTION_MANAGERS: Final = frozenset(
    {"envoy.filters.network.http_connection_manager", "envoy.http_connection_manager"}
)
LIST_INSERTS: Final = frozenset(
    {
        EnvoyFilter.LISTENER_FILTER,
        EnvoyFilter.NETWORK_FILTER,
        EnvoyFilter.HTTP_FILTER,
        EnvoyFilter.HTTP_ROUTE,
    }
)
"""The applyTos whose INSERT_* place the value in a list (others take them as ADD)."""

_INSERTS: Final = frozenset({Patch.INSERT_BEFORE, Patch.INSERT_AFTER, Patch.INSERT_FIRST})
_IGNORED: Final[dict[int, frozenset[int]]] = {
    EnvoyFilter.LISTENER: frozenset({Patch.REPLACE}),
    EnvoyFilter.FILTER_CHAIN: frozenset({Patch.REPLACE}),
    EnvoyFilter.CLUSTER: frozenset({Patch.REPLACE}),
    EnvoyFilter.HTTP_ROUTE: frozenset({Patch.REPLACE}),
    EnvoyFilter.ROUTE_CONFIGURATION: frozenset({Patch.ADD, Patch.REMOVE, Patch.REPLACE, *_INSERTS}),
    EnvoyFilter.EXTENSION_CONFIG: frozenset(
        {Patch.MERGE, Patch.REMOVE, Patch.REPLACE, Patch.MERGE_AND_REPLACE_LIST, *_INSERTS}
    ),
    EnvoyFilter.LISTENER_FILTER: frozenset({Patch.MERGE_AND_REPLACE_LIST}),
    EnvoyFilter.NETWORK_FILTER: frozenset({Patch.MERGE_AND_REPLACE_LIST}),
    EnvoyFilter.HTTP_FILTER: frozenset({Patch.MERGE_AND_REPLACE_LIST}),
}
"""applyTo → the operations istiod accepts and then does nothing with."""


def validate_envoy_filter(spec: EnvoyFilter, report: Report) -> None:
    check_enum_values(spec, "spec", report)
    if spec.HasField("workload_selector"):
        check_workload_selector(
            spec.workload_selector.labels, "spec.workloadSelector.labels", report
        )
        if spec.target_refs:
            report.error("spec", "only one of targetRefs or workloadSelector can be set")
    for index, ref in enumerate(spec.target_refs):
        path = f"spec.targetRefs[{index}]"
        if not ref.name:
            report.error(f"{path}.name", "name is required")
        if not ref.kind:
            report.error(f"{path}.kind", "kind is required")
        if ref.namespace and ref.namespace != report.namespace:
            report.error(f"{path}.namespace", "cross-namespace targets are not supported")
    for index, patch in enumerate(spec.config_patches):
        _check_patch(patch, f"spec.configPatches[{index}]", report)


def _check_patch(patch: EnvoyFilter.EnvoyConfigObjectPatch, path: str, report: Report) -> None:
    apply_to = patch.apply_to
    if apply_to == EnvoyFilter.INVALID:
        report.error(f"{path}.applyTo", "applyTo must be set (LISTENER, HTTP_FILTER, CLUSTER …)")
    if not patch.HasField("patch"):
        report.error(f"{path}.patch", "a patch is required")
        return
    operation = patch.patch.operation
    if operation == Patch.INVALID:
        report.error(f"{path}.patch.operation", "operation must be set (MERGE, ADD, REMOVE …)")
    if patch.HasField("match"):
        _check_match(patch, f"{path}.match", report)
    if apply_to == EnvoyFilter.INVALID or operation == Patch.INVALID:
        return
    _check_operation(apply_to, operation, f"{path}.patch.operation", report)
    if operation == Patch.REMOVE:
        return
    if not patch.patch.HasField("value"):
        report.error(f"{path}.patch.value", f"{Patch.Operation.Name(operation)} needs a value")
        return
    try:
        decode_value(apply_to, patch.patch.value)
    except ValueProblem as problem:
        where = f"{path}.patch.value" + (f".{problem.where}" if problem.where else "")
        report.error(where, problem.message)


def _check_operation(apply_to: int, operation: int, path: str, report: Report) -> None:
    name = EnvoyFilter.ApplyTo.Name(apply_to)
    doing = Patch.Operation.Name(operation)
    if apply_to == EnvoyFilter.BOOTSTRAP:
        if operation != Patch.MERGE:
            report.warn(path, f"{doing} has no effect on BOOTSTRAP: only MERGE is applied")
    elif operation in _IGNORED.get(apply_to, frozenset()):
        report.warn(path, f"{doing} has no effect on {name}")
    elif operation == Patch.ADD and apply_to in (
        EnvoyFilter.NETWORK_FILTER,
        EnvoyFilter.HTTP_FILTER,
    ):
        report.warn(
            path,
            f"ADD appends the {name} after the terminal filter, which Envoy refuses; "
            "use INSERT_BEFORE or INSERT_FIRST",
        )


def _check_match(patch: EnvoyFilter.EnvoyConfigObjectPatch, path: str, report: Report) -> None:
    match = patch.match
    apply_to = patch.apply_to
    if match.HasField("proxy") and match.proxy.proxy_version:
        version = match.proxy.proxy_version
        if len(version) > MAX_REGEX_LENGTH:
            report.warn(
                f"{path}.proxy.proxyVersion",
                f"longer than {MAX_REGEX_LENGTH} characters: it matches no proxy",
            )
        else:
            check_regex(version, f"{path}.proxy.proxyVersion", report)
    kind = match.WhichOneof("object_types")
    if kind == "waypoint" or match.context == EnvoyFilter.WAYPOINT:
        _check_waypoint(match, path, report)
        return
    if apply_to in LISTENER_CLASS and kind not in (None, "listener"):
        report.error(path, f"applyTo {EnvoyFilter.ApplyTo.Name(apply_to)} needs a listener match")
    elif apply_to in ROUTE_CLASS and kind not in (None, "route_configuration"):
        report.error(
            path,
            f"applyTo {EnvoyFilter.ApplyTo.Name(apply_to)} needs a routeConfiguration match",
        )
    elif apply_to == EnvoyFilter.CLUSTER and kind not in (None, "cluster"):
        report.error(path, "applyTo CLUSTER needs a cluster match")
    if kind != "listener" or not match.listener.HasField("filter_chain"):
        return
    chain = match.listener.filter_chain
    if not chain.HasField("filter"):
        return
    filter_path = f"{path}.listener.filterChain.filter"
    if not chain.filter.name:
        report.error(f"{filter_path}.name", "a filter match needs a name")
    if not chain.filter.HasField("sub_filter"):
        return
    if apply_to != EnvoyFilter.HTTP_FILTER:
        report.error(f"{filter_path}.subFilter", "subFilter is only for applyTo HTTP_FILTER")
    elif chain.filter.name not in HTTP_CONNECTION_MANAGERS:
        report.error(
            f"{filter_path}.subFilter",
            "subFilter needs filter.name envoy.filters.network.http_connection_manager",
        )
    if not chain.filter.sub_filter.name:
        report.error(f"{filter_path}.subFilter.name", "a subFilter match needs a name")


def _check_waypoint(match: EnvoyFilter.EnvoyConfigObjectMatch, path: str, report: Report) -> None:
    """A ``waypoint`` match goes with context WAYPOINT only (Istio's CRD rule); neither
    has an effect here, as pilothouse serves no waypoints."""
    if match.WhichOneof("object_types") == "waypoint":
        if match.context != EnvoyFilter.WAYPOINT:
            report.error(f"{path}.waypoint", "a waypoint match needs context WAYPOINT")
        if match.waypoint.port_number > MAX_PORT:
            report.error(f"{path}.waypoint.portNumber", f"port must be between 1-{MAX_PORT}")
    if match.context == EnvoyFilter.WAYPOINT:
        report.warn(f"{path}.context", "pilothouse serves no waypoints: this patch matches nothing")

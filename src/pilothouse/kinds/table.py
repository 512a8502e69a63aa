"""The kind table: every kind pilothouse knows, each declared by its own module.

:data:`KINDS` holds the served Istio kinds first (in the order the schema table always
had), then the pseudo and plain Kubernetes kinds. :data:`SCHEMAS` is the schema set of
the served kinds (with the plain ones, known to be skipped): what the loader, the
sources, MCP, the webhook and the CLI are given. Everything else that depends on a kind
(the push scope and its selected-workload rules, the affected types, change
classification, the push context's indexes, the CLI's short names, the RBAC file) reads
:data:`KINDS` or :func:`kind_named`.

Adding a kind: its proto, its module here (a :class:`~pilothouse.kinds.kind.Kind`), one
line in :data:`KINDS`, the builder it feeds, tests and docs.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from pilothouse.config.schema import SchemaSet
from pilothouse.kinds import (
    authorization_policy,
    destination_rule,
    envoy_filter,
    gateway,
    kubernetes,
    peer_authentication,
    proxy_config,
    request_authentication,
    service,
    service_entry,
    sidecar,
    telemetry,
    virtual_service,
    wasm_plugin,
    workload_entry,
    workload_group,
)
from pilothouse.kinds.gateway_api import kinds as gateway_api
from pilothouse.kinds.kind import Kind

KINDS: Final[tuple[Kind, ...]] = (
    service_entry.KIND,
    workload_entry.KIND,
    workload_group.KIND,
    virtual_service.KIND,
    destination_rule.KIND,
    gateway.KIND,
    sidecar.KIND,
    envoy_filter.KIND,
    proxy_config.KIND,
    peer_authentication.KIND,
    authorization_policy.KIND,
    request_authentication.KIND,
    wasm_plugin.KIND,
    telemetry.KIND,
    *gateway_api.KINDS,
    service.KIND,
    *kubernetes.KINDS,
)
"""Every kind, served ones first."""

BY_NAME: Final[Mapping[str, Kind]] = MappingProxyType({k.name: k for k in KINDS})

SCHEMAS: Final = SchemaSet(
    (k.schema for k in KINDS if k.schema is not None),
    (k.plain for k in KINDS if k.plain is not None),
)
"""The served kinds' schema rows, and the plain kinds a manifest may hold beside them."""


def kind_named(name: str) -> Kind | None:
    """The kind called ``name`` (None: pilothouse does not know it)."""
    return BY_NAME.get(name)


def served() -> tuple[Kind, ...]:
    """The kinds served as Istio config, in table order."""
    return tuple(k for k in KINDS if k.served)

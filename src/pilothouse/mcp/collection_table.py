"""MCP collections: which ones pilothouse knows, as a table an endpoint serves or asks for.

Collection names come from the schema table (``istio/networking/v1alpha3/serviceentries``);
a source also serves some collections it has no schema for, empty, so that the sinks that
ask for them are not refused. Resources themselves are encoded and decoded by the MCP
Resource codec (:mod:`pilothouse.config.mcp_resource`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pilothouse.config.schema import Schema, SchemaSet
from pilothouse.kinds.table import SCHEMAS

SYNTHETIC_SERVICE_ENTRIES = "istio/networking/v1alpha3/synthetic/serviceentries"
"""Galley's synthetic service entries (from k8s Services); pilothouse has none to serve."""

ISTIO_PILOT_COLLECTIONS = (
    "istio/networking/v1alpha3/virtualservices",
    "istio/networking/v1alpha3/gateways",
    "istio/networking/v1alpha3/serviceentries",
    "istio/networking/v1alpha3/destinationrules",
    "istio/networking/v1alpha3/envoyfilters",
    "istio/networking/v1alpha3/sidecars",
    "istio/networking/v1alpha3/workloadentries",
    "istio/config/v1alpha2/httpapispecs",
    "istio/config/v1alpha2/httpapispecbindings",
    "istio/mixer/v1/config/client/quotaspecs",
    "istio/mixer/v1/config/client/quotaspecbindings",
    "istio/authentication/v1alpha1/policies",
    "istio/authentication/v1alpha1/meshpolicies",
    "istio/rbac/v1alpha1/serviceroles",
    "istio/rbac/v1alpha1/servicerolebindings",
    "istio/rbac/v1alpha1/rbacconfigs",
    "istio/rbac/v1alpha1/clusterrbacconfigs",
    "istio/security/v1beta1/authorizationpolicies",
    "istio/security/v1beta1/requestauthentications",
    "istio/security/v1beta1/peerauthentications",
)
"""Every collection an Istio 1.4–1.6 Pilot asked for (the union of those releases).

A source that should accept such a Pilot serves the ones it has no schema for as empty
collections (``McpSourceServer(extra_collections=...)``); otherwise the stream is refused.
"""


@dataclass(frozen=True, slots=True)
class CollectionTable:
    """The collections one endpoint knows: those with a schema, plus ones served empty."""

    schemas: SchemaSet
    empty: frozenset[str] = frozenset()

    @classmethod
    def of(cls, schemas: SchemaSet | None = None, empty: Iterable[str] = ()) -> CollectionTable:
        table = schemas if schemas is not None else SCHEMAS
        known = {s.collection for s in table}
        return cls(table, frozenset(c for c in empty if c not in known))

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(s.collection for s in self.schemas) + tuple(sorted(self.empty))

    def schema(self, collection: str) -> Schema | None:
        return self.schemas.by_collection(collection)

    def __contains__(self, collection: object) -> bool:
        return isinstance(collection, str) and (
            collection in self.empty or self.schemas.by_collection(collection) is not None
        )

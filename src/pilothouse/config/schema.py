"""A schema row (how one served kind is named on each wire) and lookups over a set of rows.

One row says a kind's API group, the versions accepted in YAML, the protobuf message that
holds its spec, its plural, its legacy MCP collection, the MCP-over-xDS type URLs istiod
asks for, whether it is namespaced, and the validator that checks it. The rows themselves
are declared by the kind modules and gathered in :data:`pilothouse.kinds.table.SCHEMAS`,
which everything that needs to know about kinds (the loader, sources, MCP, the webhook,
the CLI) is given or reads.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from google.protobuf.message import Message

from pilothouse.config.validation.report import Report

Validator = Callable[[Any, Report], None]


@dataclass(frozen=True, slots=True)
class Schema:
    """How one served kind is named on each wire, and its validator."""

    kind: str
    group: str
    versions: tuple[str, ...]
    message: type[Message]
    plural: str
    collection: str
    namespaced: bool
    validator: Validator
    wire_kind: str = ""
    """The ``kind`` written in manifests and GVKs when it differs from :attr:`kind` (the
    Gateway API's ``Gateway`` is kept as ``KubernetesGateway``, as istiod names it, so
    that its keys never meet Istio's ``Gateway``); empty: the same as :attr:`kind`."""
    struct_body: bool = False
    """Whether MCP carries its spec as a ``google.protobuf.Struct`` (the JSON of the
    object's spec), as istiod does for kinds that have no protobuf message of their own
    (the Gateway API's), instead of an Any of :attr:`message`."""

    @property
    def proto_name(self) -> str:
        """The protobuf full name, e.g. ``istio.networking.v1alpha3.VirtualService``."""
        return str(self.message.DESCRIPTOR.full_name)

    @property
    def body_type_url(self) -> str:
        """The Any type URL of a spec, as in MCP resource bodies."""
        return f"type.googleapis.com/{self.proto_name}"

    @property
    def manifest_kind(self) -> str:
        """The ``kind`` field of its manifests."""
        return self.wire_kind or self.kind

    @property
    def api_versions(self) -> tuple[str, ...]:
        """``apiVersion`` values accepted in YAML, newest first."""
        return tuple(f"{self.group}/{v}" for v in self.versions)

    @property
    def gvks(self) -> tuple[str, ...]:
        """MCP-over-xDS type URLs (``group/version/Kind``) for every accepted version."""
        return tuple(f"{self.group}/{v}/{self.manifest_kind}" for v in self.versions)

    def new_spec(self) -> Message:
        return self.message()


@dataclass(frozen=True, slots=True)
class PlainKind:
    """A Kubernetes kind pilothouse does not serve (Service, Deployment, ConfigMap, …):
    found in a manifest beside Istio config, ``validate`` counts it as skipped, not an error."""

    kind: str
    api_versions: tuple[str, ...]


class SchemaSet:
    """Lookups over a set of schemas: by kind, by apiVersion, by GVK, by collection; and
    the plain Kubernetes kinds that are known but not served (:meth:`plain_kind`)."""

    def __init__(self, schemas: Iterable[Schema], plain: Iterable[PlainKind] = ()) -> None:
        self._schemas = tuple(schemas)
        self._plain = MappingProxyType({p.kind: p for p in plain})
        self._by_kind = MappingProxyType({s.kind: s for s in self._schemas})
        by_manifest: dict[str, list[Schema]] = {}
        for schema in self._schemas:
            by_manifest.setdefault(schema.manifest_kind, []).append(schema)
        self._by_manifest = MappingProxyType({k: tuple(v) for k, v in by_manifest.items()})
        self._by_gvk = MappingProxyType({g: s for s in self._schemas for g in s.gvks})
        self._by_collection = MappingProxyType({s.collection: s for s in self._schemas})
        self._by_proto = MappingProxyType({s.proto_name: s for s in self._schemas})
        self._groups = frozenset(s.group for s in self._schemas)

    def __iter__(self) -> Iterator[Schema]:
        return iter(self._schemas)

    def __len__(self) -> int:
        return len(self._schemas)

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(s.kind for s in self._schemas)

    def by_kind(self, kind: str) -> Schema | None:
        return self._by_kind.get(kind)

    def by_manifest(self, kind: str, api_version: object) -> Schema | None:
        """The schema of a manifest's ``kind`` written in ``api_version``: the one whose
        group the apiVersion names when several share the kind (Istio's and the Gateway
        API's ``Gateway``), else the kind's only (or first) schema; None: unknown kind."""
        found = self._by_manifest.get(kind, ())
        if len(found) > 1 and isinstance(api_version, str):
            for schema in found:
                if api_version in schema.api_versions:
                    return schema
        return found[0] if found else None

    def by_gvk(self, gvk: str) -> Schema | None:
        return self._by_gvk.get(gvk)

    def by_collection(self, collection: str) -> Schema | None:
        return self._by_collection.get(collection)

    def by_proto_name(self, name: str) -> Schema | None:
        return self._by_proto.get(name)

    def plain_kind(self, kind: str) -> PlainKind | None:
        """The plain Kubernetes kind ``kind`` names, if it is one (never a served kind)."""
        return self._plain.get(kind)

    def foreign(self, data: Mapping[str, Any]) -> bool:
        """True when the object ``data`` is not Istio config: a known plain Kubernetes kind
        in one of its apiVersions, or any object of an API group that is neither served
        here nor Istio's (``*.istio.io``). Objects without a usable kind or apiVersion are
        not foreign: they are errors of their own."""
        kind = data.get("kind")
        api_version = data.get("apiVersion")
        if not isinstance(kind, str) or not kind or not isinstance(api_version, str):
            return False
        plain = self._plain.get(kind)
        if plain is not None and api_version in plain.api_versions:
            return True
        group = api_version.rpartition("/")[0] if "/" in api_version else ""
        if group in self._groups or group == "istio.io" or group.endswith(".istio.io"):
            return False
        return bool(api_version)

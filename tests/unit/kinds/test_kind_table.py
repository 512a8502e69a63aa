"""The kind table walked: every kind declares what the stages read, and they read only it.

Each served kind has a proto message, a validator, an audience the push scope reads, an
affected-types row, and a place in the push context; the push scope, the affected-types
rules, change classification, the context's index reuse and the CLI's short names are
derived from the table, so they agree with it for every kind (and a kind added to the
table is covered by adding its module).
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import pkgutil
from pathlib import Path

from google.protobuf.message import Message

import pilothouse.kinds
from pilothouse.cli.store_objects import SHORT_NAMES
from pilothouse.config.model import ConfigKey
from pilothouse.config.validation.report import Report
from pilothouse.kinds import table
from pilothouse.kinds.kind import Audience, Kind
from pilothouse.kinds.table import KINDS, SCHEMAS, kind_named, served
from pilothouse.protocol.type_urls import CDS, EDS, LDS, RDS
from pilothouse.push.affected_types import ENDPOINT_KINDS, UNAFFECTED_BY
from pilothouse.push.changes import REGISTRY_KINDS
from pilothouse.push.context import INDEXED_KINDS, PushContext
from pilothouse.push.proxy import ProxyType
from pilothouse.push.scope import AUDIENCE_RULES, ProxyScope, ScopeKey

ISTIO_KINDS = {
    "ServiceEntry", "WorkloadEntry", "WorkloadGroup", "VirtualService", "DestinationRule",
    "Gateway", "Sidecar", "EnvoyFilter", "ProxyConfig", "PeerAuthentication", "AuthorizationPolicy",
    "RequestAuthentication", "WasmPlugin", "Telemetry",
    "GatewayClass", "KubernetesGateway", "HTTPRoute", "GRPCRoute", "TCPRoute", "TLSRoute",
    "ReferenceGrant",
}  # fmt: skip


def test_names_are_unique_and_served_kinds_come_first() -> None:
    names = [k.name for k in KINDS]
    assert len(names) == len(set(names))
    assert {k.name for k in served()} == ISTIO_KINDS
    assert [k.served for k in KINDS] == sorted((k.served for k in KINDS), reverse=True)
    for kind in KINDS:
        assert kind_named(kind.name) is kind
    assert kind_named("NoSuchKind") is None


def test_every_kind_in_the_schema_set_is_in_the_table_and_the_other_way_round() -> None:
    assert SCHEMAS.kinds == tuple(k.name for k in served())
    for kind in served():
        assert kind.schema is not None and kind.plain is None
        assert SCHEMAS.by_kind(kind.name) is kind.schema
        assert kind.schema.kind == kind.name
    for kind in KINDS:
        assert kind.served or kind.plain is not None or kind.index is not None


def test_every_served_kind_has_a_proto_and_a_validator() -> None:
    for kind in served():
        assert kind.schema is not None
        assert issubclass(kind.schema.message, Message)
        assert kind.schema.message.DESCRIPTOR.name == kind.schema.manifest_kind
        assert callable(kind.schema.validator)
        assert len(inspect.signature(kind.schema.validator).parameters) == 2
        kind.schema.validator(kind.schema.new_spec(), Report("default", "x"))  # never raises


def test_every_audience_has_a_rule_in_the_push_scope() -> None:
    assert set(AUDIENCE_RULES) == set(Audience)
    for kind in KINDS:
        assert kind.audience in AUDIENCE_RULES


def test_the_push_scope_reads_each_kind_s_audience() -> None:
    """A scope holding nothing, in namespace ``shop``: a key in ``shop`` concerns it exactly
    when its kind's audience looks at the namespace alone (or at nothing)."""
    scope = ProxyScope(ScopeKey(ProxyType.SIDECAR, "shop", None), (), {}, frozenset())
    namespace_rules = {
        Audience.EVERY_PROXY,
        Audience.NAMESPACE_OR_ROOT,
        Audience.NAMESPACE_ROOT_OR_SERVICES,
        Audience.OWN_NAMESPACE,
    }
    for kind in KINDS:
        seen = scope.sees(ConfigKey(kind.name, "shop", "x"), "istio-system")
        assert seen is (kind.audience in namespace_rules), kind.name
    assert scope.sees(ConfigKey("NoSuchKind", "elsewhere", "x"), "istio-system")


def test_the_affected_types_rows_are_the_kinds_declarations() -> None:
    for kind in KINDS:
        assert kind.unread_by <= {CDS, LDS, RDS}, "EDS and other types are never skipped by kind"
        for type_url, kinds in UNAFFECTED_BY.items():
            assert (kind.name in kinds) is (type_url in kind.unread_by)
    assert set().union(*UNAFFECTED_BY.values()) <= {k.name for k in served()}
    assert EDS not in UNAFFECTED_BY
    assert {k.name for k in KINDS if k.moves_endpoints} == ENDPOINT_KINDS


def test_registry_kinds_are_served_kinds_that_move_endpoints() -> None:
    assert {k.name for k in KINDS if k.in_registry} == REGISTRY_KINDS
    assert {"ServiceEntry", "WorkloadEntry"} == REGISTRY_KINDS
    assert REGISTRY_KINDS <= ENDPOINT_KINDS


def test_every_index_a_kind_names_is_a_push_context_field() -> None:
    fields = {f.name for f in dataclasses.fields(PushContext)}
    for kind in KINDS:
        assert kind.index is None or kind.index in fields, kind.name
    assert set(INDEXED_KINDS) == {k.index for k in KINDS if k.index is not None}
    for index, kinds in INDEXED_KINDS.items():
        assert kinds == {k.name for k in KINDS if k.index == index}
    unindexed = {k.name for k in served() if k.index is None}
    assert unindexed == {"WorkloadEntry", "WorkloadGroup", "ProxyConfig"}, (
        "the registry's, or no one's (ProxyConfig is read by bootstraps, not pushes)"
    )


def test_short_names_come_from_the_served_kinds() -> None:
    declared = [s for k in served() for s in k.short_names]
    assert len(declared) == len(set(declared))
    assert dict(SHORT_NAMES) == {s: k.name for k in served() for s in k.short_names}
    assert SHORT_NAMES["vs"] == "VirtualService" and SHORT_NAMES["ap"] == "AuthorizationPolicy"


def test_the_table_module_lists_every_kind_module() -> None:
    """Every module of the package that declares a ``KIND`` (or ``KINDS``) is in the
    table: a kind module written and not registered is caught."""
    declared: list[Kind] = []
    for info in pkgutil.walk_packages(pilothouse.kinds.__path__, "pilothouse.kinds."):
        module = importlib.import_module(info.name)
        declared.extend([module.KIND] if hasattr(module, "KIND") else [])
        declared.extend(getattr(module, "KINDS", ()) if module is not table else ())
    assert sorted(k.name for k in declared) == sorted(k.name for k in KINDS)


def test_push_xds_and_cli_spell_no_served_kind_s_name() -> None:
    """They read the table (or a kind module's ``KIND``); a string literal naming a served
    kind there is a rule kept outside its kind's module."""
    src = Path(pilothouse.kinds.__file__).resolve().parents[1]
    names = {k.name for k in served()}
    found = [
        f"{path.relative_to(src)}:{node.lineno}: {node.value}"
        for package in ("push", "xds", "cli")
        for path in sorted((src / package).rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
        if isinstance(node, ast.Constant) and node.value in names
    ]
    assert found == []


def _kind_constants(path: Path) -> set[str]:
    """The module-level names the module at ``path`` assigns a kind module's
    ``KIND.name`` (constants of one kind's name)."""
    found: set[str] = set()
    for node in ast.parse(path.read_text(), str(path)).body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        if (
            isinstance(value, ast.Attribute)
            and value.attr == "name"
            and isinstance(value.value, ast.Attribute)
            and value.value.attr == "KIND"
        ):
            found.update(t.id for t in targets if isinstance(t, ast.Name))
    return found


def _kind_imports(path: Path, kind_constants: set[str]) -> set[str]:
    """The kind modules (``pilothouse.kinds.<module>``, not the table, ``kind`` or
    ``groups``) the module at ``path`` imports, and the constants of one kind's name
    (``kind_constants``) it imports from push/ or xds/."""
    kind_modules = {info.name for info in pkgutil.iter_modules(pilothouse.kinds.__path__)}
    kind_modules -= {"kind", "table", "groups"}
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            dotted = (a.name.removeprefix("pilothouse.kinds.") for a in node.names)
            found.update(name for name in dotted if name in kind_modules)
        elif isinstance(node, ast.ImportFrom) and node.module == "pilothouse.kinds":
            found.update(a.name for a in node.names if a.name in kind_modules)
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            module = node.module.removeprefix("pilothouse.kinds.")
            if module in kind_modules:
                found.add(module)
            elif node.module.startswith(("pilothouse.push.", "pilothouse.xds.")):
                found.update(a.name for a in node.names if a.name in kind_constants)
    return found


def test_push_and_xds_name_a_kind_only_where_they_index_or_build_from_it() -> None:
    """Which proxies a change concerns and which types it can change are read from the
    table (``push/scope.py``, ``push/selected_workloads.py``, ``push/affected_types.py``'s
    rows, ``push/changes.py``): the pipeline and the rest of push/ and xds/ import no kind
    module and no constant holding one kind's name. The modules listed here do, because
    they index that kind in the push context or build Envoy config from its spec (its
    readers), plus two rules kept in push/: ``affected_types``' comparisons (what routes
    and endpoints read of DestinationRules, sidecar listeners of VirtualServices) and the
    push service's lookup of the RequestAuthentications naming a refreshed ``jwksUri`` and of
    the WasmPlugins naming a fetched module's ``url``."""
    src = Path(pilothouse.kinds.__file__).resolve().parents[1]
    paths = [p for package in ("push", "xds") for p in sorted((src / package).rglob("*.py"))]
    constants = set().union(*(_kind_constants(p) for p in paths))
    assert {"AUTHORIZATION_POLICY", "DESTINATION_RULE"} <= constants  # the check sees them
    found = {
        str(path.relative_to(src)): imported
        for path in paths
        if (imported := _kind_imports(path, constants))
    }
    policies = {"AUTHORIZATION_POLICY", "REQUEST_AUTHENTICATION"}
    assert found == {
        "push/affected_types.py": {"destination_rule", "virtual_service", *policies},
        "push/authorization.py": {"authorization_policy", "request_authentication"},
        "push/context.py": {
            *("destination_rule", "envoy_filter", "gateway", "sidecar", "virtual_service"),
            "wasm_plugin",
            *policies,
            "PEER_AUTHENTICATION",
            "telemetry",
        },
        "push/envoy_filters.py": {"envoy_filter"},
        "push/indexes.py": {"virtual_service"},
        "push/peer_authentication.py": {"peer_authentication"},
        "push/service.py": {"REQUEST_AUTHENTICATION", "wasm_plugin"},
        "push/wasm_plugins.py": {"wasm_plugin"},
        "xds/builders/wasm_plugin.py": {"wasm_plugin"},
        "push/telemetry.py": {"telemetry"},
        "xds/generators/envoy_filters.py": {"envoy_filter"},
        "xds/generators/routing.py": {"virtual_service"},
    }

"""The Kubernetes modules sit in the pipeline stage they serve (DESIGN.md §1, §4).

The API client, informers, the ``k8s://`` source and the mesh ConfigMap reader are a
source; Services, EndpointSlices, Pods and their feeds are the registry; a sidecar matched
to its Pod is completed in push/, beside WorkloadEntries' sidecars. The import graph of
``src/pilothouse`` is read from the source files with :mod:`ast` (nothing is imported), and
no module may import from a later stage (config → kinds → sources → registry → push →
xds), so no import cycle can form between the stage packages (the old ``kube`` package
was a source, a registry and a push participant at once: ``sources`` ↔ ``kube``, ``kube``
→ ``push``).
Beyond the stages, no two of pilothouse's packages may import each other through any
path. The MCP server roles import nothing of ``xds/server`` (they reach the stream engine
through :mod:`pilothouse.protocol`), and admin/ imports from it only the debug interface
(:mod:`pilothouse.xds.server.debug_view`).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[3] / "src"
PACKAGE = "pilothouse"

STAGES = ("config", "kinds", "sources", "registry", "push", "xds")
"""The pipeline's stage packages, in order: a stage imports only from itself and earlier.
``kinds`` (one module per config kind, and their table) reads config's schema row and
validators, and later stages read the table."""

KUBERNETES_MODULES: Mapping[str, str] = {
    "pilothouse.sources.kubernetes.client": "sources",
    "pilothouse.sources.kubernetes.config_source": "sources",
    "pilothouse.sources.kubernetes.events": "sources",
    "pilothouse.sources.kubernetes.informer": "sources",
    "pilothouse.sources.kubernetes.mesh_config": "sources",
    "pilothouse.sources.kubernetes.object_shape": "sources",
    "pilothouse.sources.kubernetes.skipped": "sources",
    "pilothouse.registry.kubernetes.endpoints": "registry",
    "pilothouse.registry.kubernetes.feeds": "registry",
    "pilothouse.registry.kubernetes.pods": "registry",
    "pilothouse.registry.kubernetes.registry": "registry",
    "pilothouse.registry.kubernetes.registry_feeds": "registry",
    "pilothouse.registry.kubernetes.services": "registry",
    "pilothouse.push.pod_sidecars": "push",
    "pilothouse.push.pods_proxy": "push",
}
"""The modules that were ``pilothouse.kube`` (one package spanning three stages), by stage."""


def module_files() -> dict[str, Path]:
    """Every module under ``src/pilothouse`` by dotted name (a package by its own name)."""
    modules = {}
    for path in (SRC / PACKAGE).rglob("*.py"):
        parts = path.relative_to(SRC).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def imported(name: str, path: Path, known: set[str]) -> Iterator[str]:
    """The pilothouse modules ``name`` imports, anywhere in its file (type-only imports
    too: they are dependencies all the same). ``from package import submodule`` names the
    submodule."""
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".")
                anchor = anchor if is_package else anchor[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [base]
            targets += [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        for target in targets:
            if target in known:
                yield target


def import_graph() -> dict[str, set[str]]:
    """Module → the pilothouse modules it imports."""
    files = module_files()
    known = set(files)
    return {name: set(imported(name, path, known)) for name, path in files.items()}


def stage(module: str) -> str | None:
    """The stage package ``module`` belongs to, or None outside the pipeline."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in STAGES else None


def package(module: str) -> str | None:
    """The top-level package (or module) of pilothouse ``module`` belongs to; None for the
    generated protobuf modules."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] != "api" else None


def stage_edges(
    graph: Mapping[str, set[str]], part: Callable[[str], str | None] = stage
) -> dict[tuple[str, str], list[str]]:
    """Each import from one stage package (or other ``part``) into another, with the
    module imports behind it."""
    edges: dict[tuple[str, str], list[str]] = {}
    for module, targets in graph.items():
        for target in sorted(targets):
            source, to = part(module), part(target)
            if source and to and source != to:
                edges.setdefault((source, to), []).append(f"{module} → {target}")
    return edges


def against_order(graph: Mapping[str, set[str]]) -> list[str]:
    """Every import of a later stage by an earlier one (config → sources → registry → push
    → xds)."""
    return [
        witness
        for (source, to), witnesses in stage_edges(graph).items()
        if STAGES.index(to) > STAGES.index(source)
        for witness in witnesses
    ]


def stage_cycles(
    graph: Mapping[str, set[str]], part: Callable[[str], str | None] = stage
) -> list[str]:
    """Every import from one stage package (or other ``part``) into another that a path
    of imports answers back."""
    edges = stage_edges(graph, part)
    ahead: dict[str, set[str]] = {}
    for source, to in edges:
        ahead.setdefault(source, set()).add(to)

    def reaches(start: str, goal: str) -> bool:
        seen, todo = {start}, [start]
        while todo:
            for nxt in ahead.get(todo.pop(), set()):
                if nxt == goal:
                    return True
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return False

    return [
        f"{witness} (and back from {to} to {source})"
        for (source, to), witnesses in edges.items()
        if reaches(to, source)
        for witness in witnesses
    ]


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return import_graph()


def test_the_kube_package_is_gone_and_each_module_sits_in_its_stage(
    graph: Mapping[str, set[str]],
) -> None:
    assert not list((SRC / PACKAGE / "kube").glob("*.py"))  # a stale __pycache__ may stay
    assert not [m for m in graph if m == "pilothouse.kube" or m.startswith("pilothouse.kube.")]
    missing = [m for m in KUBERNETES_MODULES if m not in graph]
    assert not missing
    assert {m: stage(m) for m in KUBERNETES_MODULES} == dict(KUBERNETES_MODULES)


def test_no_module_imports_from_a_later_stage(graph: Mapping[str, set[str]]) -> None:
    assert not against_order(graph)


def test_no_import_cycle_between_stage_packages(graph: Mapping[str, set[str]]) -> None:
    assert not stage_cycles(graph)


def test_no_import_cycle_between_any_packages(graph: Mapping[str, set[str]]) -> None:
    """Beyond the stages: no two of pilothouse's packages import each other, through any
    path (validation once reached ``security``, whose CA stores reach ``sources``)."""
    assert stage_cycles(graph, package) == []


def imports_into(
    graph: Mapping[str, set[str]], package_prefix: str, target_prefix: str
) -> list[str]:
    """Every import by a module of ``package_prefix`` of a module under ``target_prefix``."""
    return [
        f"{module} → {target}"
        for module, targets in sorted(graph.items())
        if module == package_prefix or module.startswith(package_prefix + ".")
        for target in sorted(targets)
        if target == target_prefix or target.startswith(target_prefix + ".")
    ]


def test_mcp_roles_reach_the_stream_engine_through_protocol(
    graph: Mapping[str, set[str]],
) -> None:
    """The MCP server roles read request bytes with :mod:`pilothouse.protocol` and pass the
    xDS port's admission through an interface of their own: nothing of ``xds/server``."""
    assert imports_into(graph, "pilothouse.mcp", "pilothouse.xds.server") == []
    assert "pilothouse.protocol.request_bytes" in graph["pilothouse.mcp.source_server"]


DEBUG_INTERFACE = frozenset({"pilothouse.xds.server.debug_view"})
"""What admin/ (with ControlZ) and the inspector may import from ``xds/server``: the debug
view the discovery server is read through, and nothing that serves."""


def test_admin_reads_the_xds_server_through_one_debug_interface(
    graph: Mapping[str, set[str]],
) -> None:
    for package_name in ("pilothouse.admin", "pilothouse.inspector"):
        reached = {
            witness.split(" → ")[1]
            for witness in imports_into(graph, package_name, "pilothouse.xds.server")
        }
        assert reached <= DEBUG_INTERFACE, (package_name, sorted(reached - DEBUG_INTERFACE))
    assert "pilothouse.xds.server.debug_view" in graph["pilothouse.admin.debug_routes"]
    interface_reaches = imports_into(
        graph, "pilothouse.xds.server.debug_view", "pilothouse.xds.server"
    )
    assert interface_reaches == ["pilothouse.xds.server.debug_view → pilothouse.xds.server.stats"]


def test_the_checks_see_the_old_layout_s_faults() -> None:
    """The checks are not vacuous: Pod→proxy completion kept in the registry (importing
    push/), a source importing the registry (the registry reading the source's
    informers), and an MCP role or admin module importing the xDS server are each
    reported (and a package whose name merely starts alike is not)."""
    completion_in_registry = {
        "pilothouse.registry.kubernetes.pods_proxy": {"pilothouse.push.proxy"},
        "pilothouse.push.proxy": set(),
    }
    assert against_order(completion_in_registry) == [
        "pilothouse.registry.kubernetes.pods_proxy → pilothouse.push.proxy"
    ]
    source_and_registry = {
        "pilothouse.sources.addresses": {"pilothouse.registry.kubernetes.feeds"},
        "pilothouse.registry.kubernetes.feeds": {"pilothouse.sources.kubernetes.informer"},
        "pilothouse.sources.kubernetes.informer": set(),
    }
    assert len(stage_cycles(source_and_registry)) == 2
    assert against_order(source_and_registry) == [
        "pilothouse.sources.addresses → pilothouse.registry.kubernetes.feeds"
    ]
    old_roles = {
        "pilothouse.mcp.source_server": {"pilothouse.xds.server.admission"},
        "pilothouse.admin.api": {"pilothouse.xds.server.discovery", "pilothouse.admin.knobs"},
        "pilothouse.mcpx": {"pilothouse.xds.server.connection"},
        "pilothouse.administration": {"pilothouse.xds.server.connection"},
    }
    assert imports_into(old_roles, "pilothouse.mcp", "pilothouse.xds.server") == [
        "pilothouse.mcp.source_server → pilothouse.xds.server.admission"
    ]
    assert imports_into(old_roles, "pilothouse.admin", "pilothouse.xds.server") == [
        "pilothouse.admin.api → pilothouse.xds.server.discovery"
    ]


def test_the_graph_sees_imports_of_every_form(graph: Mapping[str, set[str]]) -> None:
    """The reader is not vacuous: imports of modules, of names from modules and of a
    package's re-exports each show up as edges."""
    sidecars = graph["pilothouse.push.pod_sidecars"]
    assert "pilothouse.registry.kubernetes.registry" in sidecars
    assert "pilothouse.push.own_sidecars" in sidecars
    assert "pilothouse.sources.kubernetes.client" in graph["pilothouse.sources.addresses"]
    assert "pilothouse.push.request" in graph["pilothouse.push"]


def test_analysis_reads_config_and_no_later_stage(graph: Mapping[str, set[str]]) -> None:
    """The analyzers read the config set (config, kinds and their protos, host names):
    nothing of sources, the registry, the xDS server, admin or the CLI; and no stage
    imports them."""
    allowed = (
        "pilothouse.analysis",
        "pilothouse.api",
        "pilothouse.config",
        "pilothouse.kinds",
        "pilothouse.push.hostnames",
    )
    reached = {
        witness.split(" → ")[1]
        for witness in imports_into(graph, "pilothouse.analysis", "pilothouse")
    }
    assert "pilothouse.analysis.mesh_view" in reached
    assert sorted(r for r in reached if not r.startswith(allowed)) == []
    for stage_name in STAGES:
        assert imports_into(graph, f"pilothouse.{stage_name}", "pilothouse.analysis") == []

"""A `pilothouse` command imports what its own path uses, not another command's server side.

Every `pilothouse` process (a supervisor's, a script's, one of the test suite's ~150)
pays for what its command imports before it does anything. Read from the source with
:mod:`ast` (nothing is imported): the modules each module runs when it is imported (its
top level, as :func:`~tests.unit.layout.test_deferred_imports.top_level_imports` reads
it, and the packages above it), followed transitively. Held here:

- ``cli.main`` imports no subcommand module (top-level help lists them from an index).
- The CLI's admin client (``proxy-status``, ``proxy-config``) reaches none of the push
  pipeline or the admin server: it needs only the header a merged answer carries.
- ``bootstrap`` (through the config directory check of ``cli.config_sources``) and the
  node agent (through its node-set client) reach neither the node-set server nor the MCP
  source server, which only ``serve`` runs (``cli.mcp_roles``).
- ``bootstrap`` and the node agent read ``--config`` paths without loading a config
  source's client: ``cli.bootstrap_sources`` is imported where addresses are read.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from pathlib import Path

import pytest

from tests.unit.layout.test_deferred_imports import top_level_imports

SRC = Path(__file__).resolve().parents[3] / "src"


def module_files() -> dict[str, Path]:
    modules = {}
    for path in (SRC / "pilothouse").rglob("*.py"):
        parts = path.relative_to(SRC).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def with_packages(module: str) -> list[str]:
    """``module`` and the packages importing it runs first (``a``, ``a.b`` for ``a.b.c``)."""
    parts = module.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts))]


def import_time_graph() -> dict[str, set[str]]:
    """Module → the pilothouse modules importing it runs (``from package import name``
    counts ``package.name`` when that is a module)."""
    files = module_files()
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        tree = ast.parse(path.read_text(), str(path))
        targets: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets.update(
                    f"{node.module}.{alias.name}"
                    for alias in node.names
                    if f"{node.module}.{alias.name}" in files
                    and (node.lineno, node.module) in set(top_level_imports(tree))
                )
        for _, module in top_level_imports(tree):
            targets.update(m for m in with_packages(module) if m in files)
        graph[name] = targets
    return graph


def reached(graph: Mapping[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    pending = with_packages(start)
    while pending:
        module = pending.pop()
        if module not in seen:
            seen.add(module)
            pending.extend(graph.get(module, ()))
    return seen


def under(modules: set[str], prefix: str) -> list[str]:
    return sorted(m for m in modules if m == prefix or m.startswith(prefix + "."))


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return import_time_graph()


def test_the_command_table_imports_no_subcommand(graph: Mapping[str, set[str]]) -> None:
    loaded = reached(graph, "pilothouse.cli.main")
    assert under(loaded, "pilothouse.cli") == ["pilothouse.cli", "pilothouse.cli.main"]


def test_the_admin_client_reaches_neither_the_push_pipeline_nor_the_admin_server(
    graph: Mapping[str, set[str]],
) -> None:
    loaded = reached(graph, "pilothouse.cli.admin_client")
    assert under(loaded, "pilothouse.push") == []
    assert under(loaded, "pilothouse.admin") == []
    assert "pilothouse.cli.worker_debug" not in loaded


@pytest.mark.parametrize(
    "start", ["pilothouse.cli.bootstrap", "pilothouse.cli.config_sources", "pilothouse.cli.agent"]
)
def test_only_serve_reaches_the_node_set_and_mcp_source_servers(
    graph: Mapping[str, set[str]], start: str
) -> None:
    loaded = reached(graph, start)
    assert "pilothouse.nodesets.server" not in loaded
    assert "pilothouse.mcp.source_server" not in loaded
    assert "pilothouse.cli.mcp_roles" not in loaded


@pytest.mark.parametrize("start", ["pilothouse.cli.bootstrap", "pilothouse.cli.agent"])
def test_reading_config_paths_loads_no_source_client(
    graph: Mapping[str, set[str]], start: str
) -> None:
    loaded = reached(graph, start)
    for client in ("pilothouse.cli.bootstrap_sources", "pilothouse.sources.addresses"):
        assert client not in loaded
    assert under(loaded, "pilothouse.mcp") == []


def test_serve_still_reaches_what_it_runs(graph: Mapping[str, set[str]]) -> None:
    """The walk sees through ``from package import module`` and packages: serve's own
    servers are found (so the absences above are not the walk missing edges)."""
    loaded = reached(graph, "pilothouse.cli.serve")
    assert {
        "pilothouse.cli.mcp_roles",
        "pilothouse.nodesets.server",
        "pilothouse.mcp.source_server",
        "pilothouse.admin.debug_routes",
        "pilothouse.push",
    } <= loaded
    assert "pilothouse.sources.addresses" in reached(graph, "pilothouse.cli.bootstrap_sources")

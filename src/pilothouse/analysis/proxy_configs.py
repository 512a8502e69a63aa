"""ProxyConfig selectors select a workload (IST0127), and where several ProxyConfigs
could apply only one does: two selecting one workload (PH0131) or two without a
selector in one namespace (PH0132).

Selection is :mod:`pilothouse.kinds.proxy_config`'s, istiod's: a selector applies to
workloads of its own namespace only (the root namespace's too), an empty selector
(``selector: {}``) selects nothing, and among several candidates the oldest applies
(creation time, then name; objects read from files have no creation time, so the first
by name). As for the other selectors, they are judged only when the config set holds
workloads at all.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pilothouse.analysis.mesh_view import MeshView
from pilothouse.analysis.messages import (
    CONFLICTING_PROXY_CONFIG_WORKLOAD_SELECTORS,
    MULTIPLE_PROXY_CONFIGS_WITHOUT_SELECTORS,
    NO_MATCHING_WORKLOADS_FOUND,
    Message,
    about,
    labels_text,
)
from pilothouse.config.model import Config
from pilothouse.kinds.proxy_config import for_workload, ignored_namespace_wide, namespace_wide


def _selector(config: Config) -> dict[str, str] | None:
    """The selector's labels (None: it has no selector)."""
    spec: Any = config.spec
    return dict(spec.selector.match_labels) if spec.HasField("selector") else None


def analyze(view: MeshView) -> Iterator[Message]:
    configs = view.of_kind("ProxyConfig")
    if view.workloads:
        yield from _selecting_nothing(view, configs)
        yield from _conflicts(view, configs)
    for ignored, _ in ignored_namespace_wide(configs):
        bare = [c for c in configs if c.namespace == ignored.namespace and _selector(c) is None]
        applied = namespace_wide(configs, ignored.namespace)
        assert applied is not None
        names = "[" + " ".join(c.name for c in bare) + "]"
        yield about(
            ignored, MULTIPLE_PROXY_CONFIGS_WITHOUT_SELECTORS, names, ignored.namespace,
            applied.name,
        )  # fmt: skip


def _selecting_nothing(view: MeshView, configs: tuple[Config, ...]) -> Iterator[Message]:
    for config in configs:
        selector = _selector(config)
        if selector is None:
            continue
        if not selector:
            yield about(
                config, NO_MATCHING_WORKLOADS_FOUND, "", path="spec.selector",
                hint="an empty selector selects nothing",
            )  # fmt: skip
        elif not view.workloads_in(config.namespace, selector):
            yield about(
                config, NO_MATCHING_WORKLOADS_FOUND, labels_text(selector), path="spec.selector"
            )


def _conflicts(view: MeshView, configs: tuple[Config, ...]) -> Iterator[Message]:
    by_namespace: dict[str, list[Config]] = {}
    for config in configs:
        if _selector(config):
            by_namespace.setdefault(config.namespace, []).append(config)
    for namespace, selecting in sorted(by_namespace.items()):
        if len(selecting) < 2:
            continue
        for workload in view.workloads_in(namespace, {}):
            chosen = [c for c in selecting if workload.carries(_selector(c) or {})]
            if len(chosen) < 2:
                continue
            applied = for_workload(chosen, namespace, workload.labels)
            assert applied is not None
            names = "[" + " ".join(c.name for c in chosen) + "]"
            pod = workload.name.rpartition("/")[2]
            for config in chosen:
                yield about(
                    config, CONFLICTING_PROXY_CONFIG_WORKLOAD_SELECTORS, names, namespace, pod,
                    applied.name, path="spec.selector",
                )  # fmt: skip

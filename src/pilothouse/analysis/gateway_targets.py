"""The targetRefs of EnvoyFilters and WasmPlugins name Kubernetes Gateways that exist
(IST0101 Gateway), and name at least one Gateway at all (IST0167 IneffectivePolicy:
pilothouse serves no waypoints, so a ref to a Service, a ServiceEntry or a GatewayClass
selects no proxy).

A ref names a Gateway API ``Gateway`` of the policy's own namespace (the proxies it
selects are that Gateway's, :func:`pilothouse.kinds.envoy_filter.target_gateways` and
:func:`pilothouse.kinds.wasm_plugin.target_gateways` read them). Selectors are
:mod:`.selectors`'.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from typing import Any

from pilothouse.analysis.mesh_view import MeshView
from pilothouse.analysis.messages import (
    INEFFECTIVE_POLICY,
    REFERENCED_RESOURCE_NOT_FOUND,
    Message,
    about,
    did_you_mean,
)
from pilothouse.config.model import Config
from pilothouse.kinds import envoy_filter, wasm_plugin
from pilothouse.kinds.gateway_api.kinds import GATEWAY, GROUP

TARGETING = {"EnvoyFilter": "spec.targetRefs", "WasmPlugin": "spec.targetRefs"}
"""The kinds judged here, and where their refs are written."""


def gateway_refs(config: Config) -> tuple[list[tuple[str, str]], bool]:
    """The Gateway names ``config``'s refs give with the path of each, and whether it
    has refs at all."""
    spec: Any = config.spec
    refs = list(enumerate(spec.target_refs))
    paths = [f"spec.targetRefs[{i}]" for i, _ in refs]
    written = [ref for _, ref in refs]
    if config.kind == "WasmPlugin" and spec.HasField("target_ref"):
        written.append(spec.target_ref)
        paths.append("spec.targetRef")
    found = [
        (ref.name, path)
        for ref, path in zip(written, paths, strict=True)
        if ref.kind == "Gateway" and (ref.group or GROUP) == GROUP
    ]
    return found, bool(written)


def analyze(view: MeshView) -> Iterator[Message]:
    held: dict[str, list[str]] = {}
    for gateway in view.of_kind(GATEWAY.name):
        held.setdefault(gateway.namespace, []).append(gateway.name)
    for kind in TARGETING:
        for config in view.of_kind(kind):
            named, any_refs = gateway_refs(config)
            selected = (
                envoy_filter.target_gateways(config.spec)  # type: ignore[arg-type]
                if kind == "EnvoyFilter"
                else wasm_plugin.target_gateways(config.spec)  # type: ignore[arg-type]
            )
            if any_refs and not selected:
                yield about(
                    config, INEFFECTIVE_POLICY,
                    "its targetRefs name no Gateway, and pilothouse serves no waypoints",
                    path=TARGETING[kind],
                )  # fmt: skip
            siblings = held.get(config.namespace, [])
            for name, path in named:
                if name in siblings:
                    continue
                close = difflib.get_close_matches(name, siblings, n=1, cutoff=0.6)
                yield about(
                    config, REFERENCED_RESOURCE_NOT_FOUND, "Gateway",
                    f"{config.namespace}/{name}",
                    hint=did_you_mean([f"{config.namespace}/{c}" for c in close]),
                    path=f"{path}.name",
                )  # fmt: skip

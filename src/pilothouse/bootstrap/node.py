"""The ``node`` block of Envoy and proxyless gRPC bootstraps: id, cluster, locality, metadata.

Istio's node metadata keys (``NAMESPACE``, ``LABELS``, ``GENERATOR``, ``INSTANCE_IPS``…) travel
in ``node.metadata``, a ``google.protobuf.Struct``, so values must be JSON-like: strings,
numbers, booleans, lists and string-keyed maps.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Locality:
    """Where a proxy runs (``envoy.config.core.v3.Locality``); empty parts are left out."""

    region: str = ""
    zone: str = ""
    sub_zone: str = ""

    def as_dict(self) -> dict[str, str]:
        parts = {"region": self.region, "zone": self.zone, "sub_zone": self.sub_zone}
        return {key: value for key, value in parts.items() if value}


def check_metadata(metadata: Mapping[str, Any]) -> None:
    """Raise ``ValueError`` unless ``metadata`` fits a ``google.protobuf.Struct``."""
    for key, value in metadata.items():
        if not isinstance(key, str):
            raise ValueError(f"node metadata key {key!r} is not a string")
        _check_struct_value(value, key)


def _check_struct_value(value: Any, where: str) -> None:
    if value is None or isinstance(value, str | bool | int | float):
        return
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                raise ValueError(f"node metadata {where}: key {key!r} is not a string")
            _check_struct_value(item, f"{where}.{key}")
        return
    if isinstance(value, list | tuple):
        for index, item in enumerate(value):
            _check_struct_value(item, f"{where}[{index}]")
        return
    raise ValueError(f"node metadata {where}: {type(value).__name__} is not JSON-like")


def node_block(
    node_id: str,
    cluster: str,
    metadata: Mapping[str, Any],
    locality: Locality | None,
) -> dict[str, Any]:
    """The bootstrap ``node`` dict; empty cluster, metadata and locality are left out."""
    node: dict[str, Any] = {"id": node_id}
    if cluster:
        node["cluster"] = cluster
    if locality is not None and locality.as_dict():
        node["locality"] = locality.as_dict()
    if metadata:
        node["metadata"] = _plain(metadata)
    return node


def _plain(value: Any) -> Any:
    """A deep copy made of dicts and lists only, so the result dumps as JSON or YAML."""
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return copy.copy(value)

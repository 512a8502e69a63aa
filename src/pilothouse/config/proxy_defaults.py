"""Istio's mesh ProxyConfig as pilothouse reads it: MeshConfig ``defaultConfig`` and the
pod annotation ``proxy.istio.io/config``.

Both are written as Istio's ``istio.mesh.v1alpha1.ProxyConfig`` (about seventy fields).
pilothouse models the ones its bootstrap applies (:data:`APPLIED`: ``concurrency``,
``proxyMetadata``, ``proxyAdminPort``, and ``image``, which is kept and shown but chooses
nothing here since pilothouse starts no container); every other field is accepted, named
as not applied, and dropped, so an existing mesh config or annotation loads unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import yaml

from pilothouse.api.istio.mesh.v1alpha1 import proxy_pb2
from pilothouse.config.decode import decode_message

APPLIED: Final = frozenset(
    name
    for field in proxy_pb2.ProxyConfig.DESCRIPTOR.fields
    for name in (field.name, field.json_name)
)
"""The field names (proto and JSON spellings) pilothouse models."""

ANNOTATION: Final = "proxy.istio.io/config"
"""The pod annotation holding a ProxyConfig (YAML or JSON) for that pod's proxy."""


class ProxyDefaultsError(ValueError):
    """A ProxyConfig document that cannot be used; the message names the field."""


def split_proxy_config(data: Mapping[str, Any]) -> tuple[dict[str, Any], tuple[str, ...]]:
    """``data`` cut in two: the fields pilothouse models, and the names of the others
    (accepted, not applied), in the order written."""
    kept = {key: value for key, value in data.items() if key in APPLIED}
    dropped = tuple(str(key) for key in data if key not in APPLIED)
    return kept, dropped


def parse_proxy_config_annotation(
    text: str,
) -> tuple[proxy_pb2.ProxyConfig, tuple[str, ...]]:
    """The ProxyConfig of a ``proxy.istio.io/config`` annotation's value, and the names
    of the fields it sets that pilothouse does not apply; ProxyDefaultsError when the
    value is not a ProxyConfig."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as problem:
        raise ProxyDefaultsError(f"{ANNOTATION}: not YAML: {problem}") from None
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise ProxyDefaultsError(f"{ANNOTATION}: expected a mapping of ProxyConfig fields")
    kept, dropped = split_proxy_config(data)
    message, problems = decode_message(kept, proxy_pb2.ProxyConfig, path="")
    if message is None:
        first = problems[0]
        raise ProxyDefaultsError(f"{ANNOTATION}: {first.path}: {first.message}")
    assert isinstance(message, proxy_pb2.ProxyConfig)
    return message, dropped

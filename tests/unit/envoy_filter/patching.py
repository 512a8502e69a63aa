"""EnvoyFilter patches as the patching code receives them, from YAML-shaped specs."""

from __future__ import annotations

import datetime
from typing import Any

from envoy.extensions.filters.network.http_connection_manager.v3 import (
    http_connection_manager_pb2 as hcm_pb2,
)
from google.protobuf.json_format import ParseDict

from pilothouse.api.istio.networking.v1alpha3.envoy_filter_pb2 import EnvoyFilter
from pilothouse.config.mesh import MeshSettings
from pilothouse.config.model import Config
from pilothouse.push.envoy_filters import EnvoyFilterIndex, PatchRule
from pilothouse.push.proxy import parse_node

HCM = "envoy.filters.network.http_connection_manager"
ROUTER = "envoy.filters.http.router"
LUA = "type.googleapis.com/envoy.extensions.filters.http.lua.v3.Lua"


def rules(*patches: dict[str, Any], namespace: str = "shop", **spec: Any) -> list[PatchRule]:
    """The patches of one EnvoyFilter in ``namespace``, as a sidecar of ``shop`` gets them."""
    config = Config(
        "EnvoyFilter",
        "f",
        namespace,
        ParseDict({"configPatches": list(patches), **spec}, EnvoyFilter()),
        resource_version="1",
        creation_time=datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC),
    )
    proxy = parse_node("sidecar~10.0.0.1~pod.shop~shop.svc.cluster.local", {})
    return list(EnvoyFilterIndex([config], MeshSettings()).for_proxy(proxy, None).rules)


def lua(code: str = "-- x") -> dict[str, Any]:
    return {"name": "envoy.filters.http.lua", "typed_config": {"@type": LUA, "inline_code": code}}


def http_filter_match(sub_filter: str = "") -> dict[str, Any]:
    found: dict[str, Any] = {"name": HCM}
    if sub_filter:
        found["subFilter"] = {"name": sub_filter}
    return {"listener": {"filterChain": {"filter": found}}}


def http_filter_names(listener: Any) -> list[str]:
    for chain in listener.filter_chains:
        for network_filter in chain.filters:
            if network_filter.name == HCM:
                manager = hcm_pb2.HttpConnectionManager()
                network_filter.typed_config.Unpack(manager)
                return [f.name for f in manager.http_filters]
    return []

"""MCP-over-xDS encodings: a Config as one response entry, MeshConfig, and GVK type names.

Each entry of an MCP-over-xDS ``DiscoveryResponse`` is an ``Any`` of
``istio.mcp.v1alpha1.Resource`` written by the MCP Resource codec
(:mod:`pilothouse.config.mcp_resource`), with the config's resource version as
``metadata.version``. The MeshConfig answer is not wrapped: one raw
``istio.mesh.v1alpha1.MeshConfig`` ``Any``.

GVK type names (``group/version/Kind``) are parsed here too; the wire names are shared
with the consumer side (:mod:`pilothouse.sources.upstream_resources`).
"""

from __future__ import annotations

import datetime

from pilothouse.config.mcp_resource import MCP_RESOURCE_TYPE_URL, encode_resource
from pilothouse.config.mesh import MeshSettings
from pilothouse.config.meshconfig import mesh_config_message
from pilothouse.config.model import Config
from pilothouse.protocol.type_urls import TYPE_PREFIX
from pilothouse.sources.upstream_resources import MESH_CONFIG_GVK, MESH_CONFIG_TYPE_URL
from pilothouse.xds.builders.encode import any_bytes, to_any_bytes

__all__ = [
    "MCP_RESOURCE_TYPE_URL",
    "MESH_CONFIG_GVK",
    "MESH_CONFIG_TYPE_URL",
    "api_kind",
    "mcp_name",
    "wrap_config",
    "wrap_mesh_config",
]


def api_kind(type_name: str) -> str | None:
    """The Kind of an MCP-over-xDS type name such as ``networking.istio.io/v1/ServiceEntry``.

    None for anything else: Envoy type URLs (``type.googleapis.com/...``) and debug
    types such as ``istio.io/debug/syncz`` (whose last part is not a Kind).
    """
    if type_name.startswith(TYPE_PREFIX):
        return None
    parts = type_name.split("/")
    if len(parts) != 3 or not all(parts) or not parts[2][0].isupper():
        return None
    return parts[2]


def mcp_name(config: Config) -> str:
    """``<namespace>/<name>``, the only name form MCP-over-xDS accepts."""
    return f"{config.namespace}/{config.name}"


def wrap_config(config: Config, first_seen: datetime.datetime) -> bytes:
    """The ``Any`` bytes of ``config``'s MCP resource, as one entry of a response.

    ``first_seen`` becomes ``metadata.create_time`` when the object has no
    ``creationTimestamp`` of its own.
    """
    resource = encode_resource(config, config.resource_version, first_seen)
    return any_bytes(MCP_RESOURCE_TYPE_URL, resource)


def wrap_mesh_config(mesh: MeshSettings) -> bytes:
    """The raw (unwrapped) MeshConfig ``Any`` bytes of the MeshConfig answer."""
    return to_any_bytes(mesh_config_message(mesh))

"""MCP-over-xDS encodings: a Config wrapped as ``istio.mcp.v1alpha1.Resource``, and MeshConfig.

Each entry of an MCP-over-xDS ``DiscoveryResponse`` is an ``Any`` of
``istio.mcp.v1alpha1.Resource``: ``metadata`` (name ``<ns>/<name>``, version = the
config's resource version, labels, annotations, create_time) and ``body``, an ``Any``
of the spec message. The body's type URL is the message's full name, which stays
``istio.networking.v1alpha3.<Kind>`` (``istio.security.v1beta1.<Kind>``) whatever GVK
spelling was requested. The MeshConfig answer is not wrapped: one raw
``istio.mesh.v1alpha1.MeshConfig`` ``Any``.

GVK type names (``group/version/Kind``) are parsed here too; the wire names are shared
with the consumer side (:mod:`pilothouse.sources.upstream_resources`).
"""

from __future__ import annotations

from google.protobuf import timestamp_pb2

from pilothouse.api.istio.mcp.v1alpha1 import metadata_pb2, resource_pb2
from pilothouse.config.mesh import MeshSettings
from pilothouse.config.meshconfig import mesh_config_message
from pilothouse.config.model import Config
from pilothouse.sources.upstream_resources import (
    MCP_RESOURCE_TYPE_URL,
    MESH_CONFIG_GVK,
    MESH_CONFIG_TYPE_URL,
)
from pilothouse.xds.builders.encode import to_any_bytes
from pilothouse.xds.protocol.type_urls import TYPE_PREFIX

__all__ = [
    "MCP_RESOURCE_TYPE_URL",
    "MESH_CONFIG_GVK",
    "MESH_CONFIG_TYPE_URL",
    "api_kind",
    "mcp_name",
    "mcp_resource",
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


def mcp_resource(config: Config) -> resource_pb2.Resource:
    """The ``istio.mcp.v1alpha1.Resource`` carrying ``config``."""
    metadata = metadata_pb2.Metadata(
        name=mcp_name(config),
        version=config.resource_version,
        labels=dict(config.labels),
        annotations=dict(config.annotations),
    )
    if config.creation_time is not None:
        stamp = timestamp_pb2.Timestamp()
        stamp.FromDatetime(config.creation_time)
        metadata.create_time.CopyFrom(stamp)
    resource = resource_pb2.Resource(metadata=metadata)
    resource.body.type_url = TYPE_PREFIX + config.spec.DESCRIPTOR.full_name
    resource.body.value = config.spec.SerializeToString(deterministic=True)
    return resource


def wrap_config(config: Config) -> bytes:
    """The ``Any`` bytes of ``config``'s MCP resource, as one entry of a response."""
    return to_any_bytes(mcp_resource(config))


def wrap_mesh_config(mesh: MeshSettings) -> bytes:
    """The raw (unwrapped) MeshConfig ``Any`` bytes of the MeshConfig answer."""
    return to_any_bytes(mesh_config_message(mesh))

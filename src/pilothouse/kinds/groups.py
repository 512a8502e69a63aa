"""The Istio API groups pilothouse serves, and the schema row each gives a kind.

A networking kind is accepted as ``networking.istio.io`` ``v1``, ``v1beta1`` and
``v1alpha3`` and travels over legacy MCP in ``istio/networking/v1alpha3/<plural>``; a
security kind as ``security.istio.io`` ``v1`` and ``v1beta1``, in
``istio/security/v1beta1/<plural>``; an extensions kind (WasmPlugin) as
``extensions.istio.io`` ``v1alpha1``. Every one is namespaced.
"""

from __future__ import annotations

from typing import Final

from google.protobuf.message import Message

from pilothouse.config.schema import Schema, Validator

NETWORKING: Final = "networking.istio.io"
SECURITY: Final = "security.istio.io"
NETWORKING_VERSIONS: Final = ("v1", "v1beta1", "v1alpha3")
SECURITY_VERSIONS: Final = ("v1", "v1beta1")
EXTENSIONS: Final = "extensions.istio.io"


def networking(
    kind: str,
    message: type[Message],
    plural: str,
    check: Validator,
    versions: tuple[str, ...] = NETWORKING_VERSIONS,
    mcp_version: str = "v1alpha3",
) -> Schema:
    """The schema row of a ``networking.istio.io`` kind (``versions``: the few kinds
    Istio serves in fewer versions, such as EnvoyFilter's ``v1alpha3`` alone;
    ``mcp_version``: the version of its legacy MCP collection, ``v1beta1`` for
    ProxyConfig, which Istio never had as ``v1alpha3``)."""
    return _row(kind, message, plural, check, NETWORKING, versions, mcp_version)


def security(kind: str, message: type[Message], plural: str, check: Validator) -> Schema:
    """The schema row of a ``security.istio.io`` kind."""
    return _row(kind, message, plural, check, SECURITY, SECURITY_VERSIONS, "v1beta1")


def extensions(kind: str, message: type[Message], plural: str, check: Validator) -> Schema:
    """The schema row of an ``extensions.istio.io`` kind: ``v1alpha1`` only, over legacy
    MCP in ``istio/extensions/v1alpha1/<plural>``."""
    return _row(kind, message, plural, check, EXTENSIONS, ("v1alpha1",), "v1alpha1")


def _row(
    kind: str,
    message: type[Message],
    plural: str,
    check: Validator,
    group: str,
    versions: tuple[str, ...],
    mcp_version: str,
) -> Schema:
    """A namespaced row of ``group``, sent over legacy MCP as ``mcp_version``."""
    return Schema(
        kind=kind,
        group=group,
        versions=versions,
        message=message,
        plural=plural,
        collection=f"istio/{group.split('.')[0]}/{mcp_version}/{plural}",
        namespaced=True,
        validator=check,
    )

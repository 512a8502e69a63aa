"""Discovery responses assembled from cached resource bytes, without building messages.

A SotW ``DiscoveryResponse`` is its scalar fields plus each resource's ``Any`` bytes
under field 2; a delta response wraps each resource in a small ``Resource`` message.
Both are written here by concatenating length-delimited fields, which is what lets
one encoded cluster be sent to a thousand proxies at the cost of a memory copy.
Field numbers are those of ``envoy.service.discovery.v3``.

Every response also carries ``control_plane`` (which replica sent it). That field is
the same on every response of a process, so it is encoded once
(:class:`ControlPlaneField`) and appended as bytes: a response costs one more part in
its join, not a message build.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import chain

from pilothouse.protowire import LENGTH_DELIMITED, length_delimited, tag, text_field, varint
from pilothouse.push.cache import Resource

# DiscoveryResponse
_VERSION_INFO = 1
_RESOURCES = 2
_TYPE_URL = 4
_NONCE = 5
_CONTROL_PLANE = 6
# DeltaDiscoveryResponse
_SYSTEM_VERSION_INFO = 1
_DELTA_RESOURCES = 2
_DELTA_TYPE_URL = 4
_DELTA_NONCE = 5
_REMOVED_RESOURCES = 6
_DELTA_CONTROL_PLANE = 7
# ControlPlane
_IDENTIFIER = 1
# Resource
_RESOURCE_VERSION = 1
_RESOURCE_BODY = 2
_RESOURCE_NAME = 3


class _ResourceHeaders(dict[int, bytes]):
    """The tag and length that go before an ``Any`` of each size in a ``DiscoveryResponse``.

    Kept per size, so that framing a response's resources is a C-level walk (a
    thousand proxies are sent the same few thousand sizes). Only sizes under 16 KiB
    (two-byte lengths) are kept, which bounds it to 16,384 small entries.
    """

    def __missing__(self, size: int) -> bytes:
        header = _RESOURCE_TAG + varint(size)
        if size < _KEPT_SIZES:
            self[size] = header
        return header


_RESOURCE_TAG = tag(_RESOURCES, LENGTH_DELIMITED)
_KEPT_SIZES = 1 << 14
_HEADERS = _ResourceHeaders()


@dataclass(frozen=True, slots=True)
class ControlPlaneField:
    """The encoded ``control_plane`` field of a SotW and of a delta response.

    Made once per process from the identifier (:func:`control_plane_field`); the empty
    default adds nothing to a response.
    """

    sotw: bytes = b""
    delta: bytes = b""


NO_CONTROL_PLANE = ControlPlaneField()


def control_plane_field(identifier: str) -> ControlPlaneField:
    """``control_plane { identifier }`` as field 6 of ``DiscoveryResponse`` and field 7
    of ``DeltaDiscoveryResponse``."""
    message = text_field(_IDENTIFIER, identifier)
    if not message:
        return NO_CONTROL_PLANE
    return ControlPlaneField(
        length_delimited(_CONTROL_PLANE, message), length_delimited(_DELTA_CONTROL_PLANE, message)
    )


def sotw_response(
    version: str,
    type_url: str,
    nonce: str,
    resources: Iterable[bytes],
    control_plane: ControlPlaneField = NO_CONTROL_PLANE,
) -> bytes:
    """A serialized ``DiscoveryResponse`` holding the given ``Any`` encodings."""
    bodies = resources if isinstance(resources, tuple) else tuple(resources)
    return _sotw_head(version, type_url, bodies) + text_field(_NONCE, nonce) + control_plane.sotw


@functools.lru_cache(maxsize=64)
def _sotw_head(version: str, type_url: str, bodies: tuple[bytes, ...]) -> bytes:
    """Every field of a SotW response but its nonce and ``control_plane``: the same for
    every proxy pushed the same resources at the same version (a fan-out frames them
    once, then each proxy's response is this plus its nonce). Keyed by the bodies
    themselves: a bytes object keeps its hash, and the cached bodies are the very
    objects a push sends, so a lookup compares them by identity. The last 64 kept."""
    parts = [text_field(_VERSION_INFO, version)]
    headers = map(_HEADERS.__getitem__, map(len, bodies))
    parts.extend(chain.from_iterable(zip(headers, bodies, strict=True)))
    parts.append(text_field(_TYPE_URL, type_url))
    return b"".join(parts)


def delta_resource(resource: Resource) -> bytes:
    """A serialized ``Resource`` (name, version, Any body) for delta responses."""
    return b"".join(
        (
            text_field(_RESOURCE_VERSION, resource.version),
            length_delimited(_RESOURCE_BODY, resource.body),
            text_field(_RESOURCE_NAME, resource.name),
        )
    )


def delta_response(
    system_version: str,
    type_url: str,
    nonce: str,
    resources: Sequence[Resource],
    removed: Iterable[str],
    control_plane: ControlPlaneField = NO_CONTROL_PLANE,
) -> bytes:
    """A serialized ``DeltaDiscoveryResponse``."""
    parts = [text_field(_SYSTEM_VERSION_INFO, system_version)]
    for resource in resources:
        parts.append(length_delimited(_DELTA_RESOURCES, delta_resource(resource)))
    parts.append(text_field(_DELTA_TYPE_URL, type_url))
    parts.append(text_field(_DELTA_NONCE, nonce))
    for name in removed:
        parts.append(length_delimited(_REMOVED_RESOURCES, name.encode()))
    parts.append(control_plane.delta)
    return b"".join(parts)

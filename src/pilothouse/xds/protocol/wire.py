"""Discovery responses assembled from cached resource bytes, without building messages.

A SotW ``DiscoveryResponse`` is its scalar fields plus each resource's ``Any`` bytes
under field 2; a delta response wraps each resource in a small ``Resource`` message.
Both are written here by concatenating length-delimited fields, which is what lets
one encoded cluster be sent to a thousand proxies at the cost of a memory copy, and a
SotW push share one whole response among the streams it sends the same content to
(:class:`FanOutResponses`). Field numbers are those of ``envoy.service.discovery.v3``.

Every response also carries ``control_plane`` (which replica sent it). That field is
the same on every response of a process, so it is encoded once
(:class:`ControlPlaneField`) and appended as bytes: a response costs one more part in
its join, not a message build.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import NamedTuple

from pilothouse.protowire import LENGTH_DELIMITED, length_delimited, tag, text_field, varint
from pilothouse.push.cache import Resource
from pilothouse.xds.protocol.name_sets import KEPT_SETS, NameSets
from pilothouse.xds.protocol.shared_content import KEPT_MAPPINGS, SharedContents, SotwContent
from pilothouse.xds.protocol.versions import nonce_token

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
    """A serialized ``DiscoveryResponse`` holding the given ``Any`` encodings (framed
    afresh; a stream's responses come from :class:`FanOutResponses`)."""
    bodies = resources if isinstance(resources, tuple) else tuple(resources)
    return sotw_head(version, type_url, bodies) + text_field(_NONCE, nonce) + control_plane.sotw


def sotw_head(version: str, type_url: str, bodies: Sequence[bytes]) -> bytes:
    """Every field of a SotW response but its nonce and ``control_plane``: the version,
    each body framed as a ``resources`` entry, and the type URL."""
    parts = [text_field(_VERSION_INFO, version)]
    headers = map(_HEADERS.__getitem__, map(len, bodies))
    parts.extend(chain.from_iterable(zip(headers, bodies, strict=True)))
    parts.append(text_field(_TYPE_URL, type_url))
    return b"".join(parts)


HEADS_BUDGET = 8 << 20
"""Bytes the shared SotW responses may hold (:class:`FanOutResponses`): a few fan-outs
of even MB-sized CDS responses, and all :data:`HEADS_KEPT` at the 21 KiB of 100
services."""
HEADS_KEPT = 64
"""Fan-outs whose response is kept at most, however small."""


_Key = tuple[str, str, tuple[bytes, ...] | SotwContent, bytes]
"""A shared response's key: version, type URL, its bodies (or their summary) and the
encoded control plane field."""


class SharedResponse(NamedTuple):
    """One encoded SotW response, and the nonce (and its serial) it carries."""

    body: bytes
    nonce: str
    serial: int


class FanOutResponses:
    """SotW responses shared by every stream that is sent the same content.

    A push sends the same resources at the same version to every proxy of a scope, so
    the whole response, nonce included, is encoded once and the very same bytes object
    is queued on each stream: no per-proxy framing, copy or memory. That is sound
    because a nonce only has to be unique on its own stream (it is echoed back on that
    stream to say which response a request answers), and every nonce made here is
    unique in this object: ``<version>/<token>-<serial>``, the serial counting up.

    A stream passes the serial of the last response it was sent for the type
    (``after``). A kept response whose serial is not above it (the same content sent to
    that stream again: a forced resend, or an answer to a request that changes
    nothing) is not reused: a fresh nonce and serial are made, and that response
    becomes the one kept. So each stream's nonces for a type only count up and never
    repeat.

    Keyed by ``(version, type_url, bodies, control plane)``: a bytes object keeps its
    hash and the bodies are the very objects a push sends, so a lookup hashes the
    tuple and compares its bodies by identity; or, in place of the bodies, their
    shared summary (:class:`~pilothouse.xds.protocol.shared_content.SotwContent`,
    hashed by identity: one lookup whatever the number of resources). An entry is
    charged twice its size (the response, and the bodies its key keeps alive); the first
    kept go first once the charge passes ``budget`` or there are more than ``kept``; a
    response over the budget on its own is returned without being kept.
    """

    __slots__ = (
        "_budget",
        "_entries",
        "_held",
        "_kept",
        "_serial",
        "_token",
        "contents",
        "name_sets",
    )

    def __init__(
        self, token: str | None = None, budget: int = HEADS_BUDGET, kept: int = HEADS_KEPT
    ) -> None:
        self._token = nonce_token(token)
        self._budget = budget
        self._kept = kept
        self._held = 0
        self._serial = 0
        self._entries: dict[_Key, tuple[SharedResponse, int]]
        self._entries = {}
        self.contents = SharedContents(kept=min(KEPT_MAPPINGS, 16 * kept))
        """The summaries of the generated mappings these responses are made from (as
        many more as responses kept: a stream's own keeps few)."""
        self.name_sets = NameSets(kept=min(KEPT_SETS, 16 * kept))
        """The name sets the streams sent these responses subscribe with, one per
        distinct set."""

    @property
    def held(self) -> int:
        """Bytes charged for the responses kept now (at most the budget)."""
        return self._held

    def __len__(self) -> int:
        return len(self._entries)

    def sotw(
        self,
        version: str,
        type_url: str,
        bodies: tuple[bytes, ...],
        control_plane: ControlPlaneField = NO_CONTROL_PLANE,
        after: int = 0,
    ) -> SharedResponse:
        """The response carrying ``bodies`` at ``version``, with a serial above ``after``."""
        key = (version, type_url, bodies, control_plane.sotw)
        return self._response(key, version, type_url, bodies, control_plane, after)

    def shared(
        self,
        version: str,
        type_url: str,
        content: SotwContent,
        control_plane: ControlPlaneField = NO_CONTROL_PLANE,
        after: int = 0,
    ) -> SharedResponse:
        """The response carrying ``content``'s bodies at ``version``, with a serial above
        ``after``: found by the summary itself (its identity), so a stream sent the same
        summary as others costs one lookup, not a walk over the bodies."""
        key = (version, type_url, content, control_plane.sotw)
        return self._response(key, version, type_url, content.bodies, control_plane, after)

    def _response(
        self,
        key: _Key,
        version: str,
        type_url: str,
        bodies: tuple[bytes, ...],
        control_plane: ControlPlaneField,
        after: int,
    ) -> SharedResponse:
        entries = self._entries
        found = entries.get(key)
        if found is not None:
            if found[0].serial > after:
                return found[0]
            head = found[0].body[: found[1]]
            self._forget(key)
        else:
            head = sotw_head(version, type_url, bodies)
        self._serial += 1
        nonce = f"{version}/{self._token}-{self._serial}"
        made = SharedResponse(
            b"".join((head, text_field(_NONCE, nonce), control_plane.sotw)), nonce, self._serial
        )
        cost = 2 * len(made.body)
        if cost <= self._budget:
            entries[key] = (made, len(head))
            self._held += cost
            while self._held > self._budget or len(entries) > self._kept:
                self._forget(next(iter(entries)))
        return made

    def _forget(self, key: _Key) -> None:
        response, _ = self._entries.pop(key)
        self._held -= 2 * len(response.body)


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

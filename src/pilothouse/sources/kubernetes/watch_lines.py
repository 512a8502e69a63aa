"""A watch body read as events: its JSON lines, however the chunks fall, each decoded
into an event type and object or into the reason it is malformed.

A line longer than a limit is dropped as its bytes come, never held whole (a stream
without newlines would otherwise grow without bound); what a well-formed event's object
holds is checked by the informer (:mod:`~pilothouse.sources.kubernetes.object_shape`).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any, Final

import aiohttp

from pilothouse.sources.kubernetes.object_shape import json_type

EVENT_TYPES: Final = frozenset({"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"})


async def watch_lines(response: aiohttp.ClientResponse, limit: int) -> AsyncIterator[bytes | None]:
    """The JSON lines of a watch body, however the chunks fall; None in place of a line
    longer than ``limit`` bytes, whose bytes are dropped as they come."""
    parts: list[bytes] = []
    size = 0
    dropping = False
    async for chunk in response.content.iter_any():
        *complete, rest = chunk.split(b"\n")
        for piece in complete:
            line = b"".join((*parts, piece)) if parts else piece
            parts, size = [], 0
            if dropping:
                dropping = False  # the end of the line too long to read
            elif len(line) > limit:
                yield None
            elif line.strip():
                yield line
        if rest and not dropping:
            parts.append(rest)
            size += len(rest)
            if size > limit:
                parts, size, dropping = [], 0, True
                yield None
    if parts and not dropping:
        line = b"".join(parts)
        if line.strip():
            yield line


def decode_event(line: bytes | None, limit: int) -> tuple[str, dict[str, Any]] | str:
    """One watch line (None: one longer than ``limit``, dropped) as (event type, object),
    or what is wrong with it."""
    if line is None:
        return f"a watch line longer than {limit} bytes"
    try:
        event = json.loads(line)
    except (ValueError, RecursionError):
        return "a watch line that is not JSON"
    if not isinstance(event, dict):
        return f"a watch line that is {json_type(event)}"
    kind, obj = event.get("type"), event.get("object")
    if kind not in EVENT_TYPES:
        shown = repr(kind)[:60] if isinstance(kind, str) else json_type(kind)
        return f"unknown watch event type {shown}"
    if not isinstance(obj, dict):
        return f"a {kind} event whose object is {json_type(obj)}"
    return kind, obj

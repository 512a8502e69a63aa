"""Messages about a field of an object read from a file, moved to that field's line.

An object remembers only the line it starts on; a message knows the field it is about
(``spec.http[1].route[0].destination.host``). Reading the files again for the line of
each field lets ``analyze`` print ``routing.yaml:12`` where the field is, as istioctl
does. A file that cannot be read again keeps its messages at the object's line.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from pathlib import Path

from pilothouse.analysis.messages import Message
from pilothouse.config.documents import MAX_BYTES, RawObject, read_documents
from pilothouse.config.encoding import decode_config
from pilothouse.config.model import Origin


def objects_of(files: Iterable[str]) -> dict[tuple[str, int], RawObject]:
    """Every object of ``files`` as written, by (file, first line)."""
    found: dict[tuple[str, int], RawObject] = {}
    for file in files:
        try:
            with open(file, "rb") as handle:
                data = handle.read(MAX_BYTES + 1)
            if len(data) > MAX_BYTES:
                continue
            text = decode_config(data)
        except Exception:  # unreadable now: its messages stay at the object's line
            continue
        for raw in read_documents(text, file).objects:
            found[(raw.file, raw.line)] = raw
    return found


def pinned(messages: Sequence[Message], files: Iterable[str]) -> list[Message]:
    """``messages``, each about a field of an object of ``files`` at that field's line."""
    wanted = {m.origin.file for m in messages if m.path and m.origin and m.origin.file}
    readable = [f for f in files if f in wanted and Path(f).is_file()]
    objects = objects_of(readable)
    moved: list[Message] = []
    for message in messages:
        origin = message.origin
        raw = None
        if message.path and origin is not None and origin.file and origin.line:
            raw = objects.get((origin.file, origin.line))
        if raw is None or origin is None:
            moved.append(message)
            continue
        line = raw.line_of(message.path)
        moved.append(dataclasses.replace(message, origin=Origin(origin.source, origin.file, line)))
    return moved

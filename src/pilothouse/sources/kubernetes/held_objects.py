"""What an informer holds of one resource, and the events each change to it delivers.

The :class:`~pilothouse.sources.kubernetes.informer.Informer` lists and watches; this is
what its answers mean for what it holds:

- A **list** (the first one, or a relist after 410 Gone) replaces what is held and
  delivers only the differences: ADDED for new objects, MODIFIED for a changed
  resourceVersion, DELETED for the vanished ones. Never a replay of everything. An
  object the list could not read (a malformed item with a readable key) keeps its last
  good version.
- A **watch line** is decoded and applied: ADDED and MODIFIED hold the object, DELETED
  lets it go, a BOOKMARK only advances the resourceVersion, and an ``ERROR`` event (a
  Status object) ends the watch (:func:`status_error`: 410 relists, 403/404 goes absent).
  A line of the wrong shape (see :mod:`~pilothouse.sources.kubernetes.object_shape`) is
  skipped and logged once per distinct problem
  (:class:`~pilothouse.sources.kubernetes.skipped.SkippedObjects`); an object held
  before keeps its last good version.
- The resource gone **absent** (403/404): everything held is delivered as DELETED.
"""

from __future__ import annotations

from collections.abc import Callable

from pilothouse.sources.kubernetes.client import KubeApiError
from pilothouse.sources.kubernetes.events import WatchEventType
from pilothouse.sources.kubernetes.listing import (
    Absent,
    Obj,
    checked_key,
    strip_managed_fields,
)
from pilothouse.sources.kubernetes.object_shape import (
    ObjectKey,
    key_problem,
    object_problem,
    readable_key,
)
from pilothouse.sources.kubernetes.skipped import SkippedObjects
from pilothouse.sources.kubernetes.watch_lines import decode_event

Emit = Callable[[WatchEventType, Obj], None]
"""Delivers one event of a held object to the informer's handlers."""


class Expired(Exception):
    """410 Gone: the resourceVersion is too old; relist."""


def object_version(obj: Obj) -> str:
    """The resourceVersion of a checked object (or of a bookmark), "" when it has none."""
    meta = obj.get("metadata")
    version = meta.get("resourceVersion") if isinstance(meta, dict) else None
    return version if isinstance(version, str) else ""


class HeldObjects:
    """The objects of one resource by key; each change delivers its events through
    ``emit``, one at a time, after what is held has changed."""

    def __init__(self, skipped: SkippedObjects, emit: Emit, max_line: int) -> None:
        self._objects: dict[ObjectKey, Obj] = {}
        self._skipped = skipped
        self._emit = emit
        self._max_line = max_line

    def __len__(self) -> int:
        return len(self._objects)

    def ordered(self) -> list[Obj]:
        """The objects held, by key."""
        return [self._objects[k] for k in sorted(self._objects)]

    def get(self, key: ObjectKey) -> Obj | None:
        return self._objects.get(key)

    def replace(self, listed: dict[ObjectKey, Obj], unreadable: set[ObjectKey]) -> None:
        """What a list read, in place of what is held; only the differences delivered."""
        held = self._objects
        for key in unreadable - listed.keys():
            if key in held:
                listed[key] = held[key]  # malformed now: its last good version stays
        self._objects = dict(listed)
        for key, obj in listed.items():
            before = held.get(key)
            if before is None:
                self._emit(WatchEventType.ADDED, obj)
            elif object_version(before) != object_version(obj):
                self._emit(WatchEventType.MODIFIED, obj)
        for key in sorted(set(held) - set(listed)):
            self._emit(WatchEventType.DELETED, held[key])

    def clear(self) -> None:
        """Nothing held any more (the resource cannot be read): each object DELETED."""
        held, self._objects = self._objects, {}
        for key in sorted(held):
            self._emit(WatchEventType.DELETED, held[key])

    def apply_line(self, line: bytes | None, namespaced: bool) -> str:
        """One watch line: applied, or skipped and logged when it is malformed (None: one
        too long to read). Returns the resourceVersion the watch has reached ("" when
        the line names none). An ``ERROR`` event raises what it means for the watch
        (:func:`status_error`)."""
        decoded = decode_event(line, self._max_line)
        if isinstance(decoded, str):
            self._skipped.skip("watch event", None, decoded)
            return ""
        kind, obj = decoded
        if kind == "ERROR":
            raise status_error(obj)
        version = object_version(obj)
        if kind == "BOOKMARK":
            if not version:
                self._skipped.skip("watch event", None, "a BOOKMARK without a resourceVersion")
            return version
        check = key_problem if kind == "DELETED" else object_problem
        problem = check(obj, namespaced=namespaced)
        if problem is not None:
            self._skipped.skip(
                "watch event", readable_key(obj, namespaced=namespaced), f"{kind}: {problem}"
            )
        else:
            key = checked_key(obj, namespaced)
            strip_managed_fields(obj)
            if kind == "DELETED":
                before = self._objects.pop(key, None)
                if before is not None:
                    self._emit(WatchEventType.DELETED, obj)
            else:
                self._skipped.forget(key)
                before = self._objects.get(key)
                self._objects[key] = obj
                self._emit(WatchEventType.ADDED if before is None else WatchEventType.MODIFIED, obj)
        return version


def status_error(status: Obj) -> Exception:
    """What an ``ERROR`` watch event (a Status object) means for the watch."""
    code = status.get("code")
    code = code if isinstance(code, int) and not isinstance(code, bool) else 0
    problem = KubeApiError(code, str(status.get("reason")), str(status.get("message")))
    if code == 410:
        return Expired()
    if code in (403, 404):
        return Absent(problem)
    return problem

"""Malformed objects and watch events skipped by an informer, logged so a flood cannot fill
the log.

Each distinct problem (the object's namespace/name when known, and what was wrong) is
logged once, as a warning naming the resource. Once ``remember`` distinct problems have
been logged, further new ones are only counted, and one summary line per ``interval``
seconds says how many were skipped. An object that is read well again is forgotten, so
that it is logged again if it goes bad again.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from pilothouse.sources.kubernetes.object_shape import ObjectKey


class SkippedObjects:
    """What one informer skipped, and the log lines about it."""

    def __init__(
        self,
        resource: str,
        log: logging.Logger,
        *,
        remember: int = 256,
        interval: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.resource = resource
        self._log = log
        self._remember = remember
        self._interval = interval
        self._clock = clock
        self._logged: dict[ObjectKey | None, set[str]] = {}
        self._logged_count = 0
        self._unlogged = 0
        self._summary_at: float | None = None
        self.count = 0
        """Objects and events skipped so far."""

    def skip(self, what: str, key: ObjectKey | None, problem: str) -> None:
        """Record one skipped ``what`` (``object``, ``watch event``, ``list item``) whose
        key is ``key`` (None: unknown) because of ``problem``."""
        self.count += 1
        logged = self._logged.get(key)
        if logged is not None and problem in logged:
            return
        if self._logged_count < self._remember:
            self._logged.setdefault(key, set()).add(problem)
            self._logged_count += 1
            where = f" {_named(key)}" if key is not None else ""
            self._log.warning(
                "kubernetes %s: malformed %s%s skipped: %s",
                self.resource,
                what,
                where,
                problem,
                extra={"resource": self.resource, "object": _named(key) if key else ""},
            )
            return
        self._unlogged += 1
        now = self._clock()
        if self._summary_at is None or now - self._summary_at >= self._interval:
            self._summary_at = now
            self._log.warning(
                "kubernetes %s: %d more malformed objects or events skipped (%d in all); "
                "not each logged",
                self.resource,
                self._unlogged,
                self.count,
                extra={"resource": self.resource},
            )
            self._unlogged = 0

    def forget(self, key: ObjectKey) -> None:
        """Object ``key`` was read well: a later problem with it is logged again."""
        if self._logged:
            self._logged_count -= len(self._logged.pop(key, ()))


def _named(key: ObjectKey | None) -> str:
    if key is None:
        return ""
    namespace, name = key
    return f"{namespace}/{name}" if namespace else name

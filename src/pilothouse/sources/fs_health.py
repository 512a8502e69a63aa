"""Whether a file source's root can be read, remembered and logged once per change.

The file source tells :class:`RootHealth` what each look at its root found: a readable
tree (perhaps with folders it could not list) or a root it cannot read. The health
keeps the source's :class:`Availability` and logs only transitions: unavailable with
the cause, available again, a folder newly unreadable.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from pilothouse.sources.availability import Availability
from pilothouse.sources.fs_tree import TreeScan

log = logging.getLogger("pilothouse.sources.fs")


class RootHealth:
    """The availability of one source's root directory."""

    def __init__(self, source: str, root: Path) -> None:
        self._source = source
        self._root = root
        self._state: Availability | None = None
        self._unreadable: dict[str, str] = {}

    def current(self) -> Availability:
        if self._state is None:
            return Availability(self._source, False, "not loaded yet")
        return self._state

    def seen(self, tree: TreeScan) -> None:
        """The root could be listed; ``tree`` says which folders under it could not."""
        for folder, reason in sorted(tree.unreadable.items()):
            if self._unreadable.get(folder) != reason:
                log.warning(
                    "config folder %s cannot be read (%s); its files keep their objects",
                    folder,
                    reason,
                    extra={"source": self._source},
                )
        self._unreadable = dict(tree.unreadable)
        reason = "; ".join(f"cannot read {f} ({r})" for f, r in sorted(tree.unreadable.items()))
        previous = self._state
        if previous is not None and not previous.available:
            log.info(
                "config directory %s is available again; applying what changed",
                self._root,
                extra={"source": self._source},
            )
        if previous is None or not previous.available or previous.reason != reason:
            since = previous.since if previous is not None and previous.available else time.time()
            self._state = Availability(self._source, True, reason, since)

    def lost(self, reason: str, objects: int) -> None:
        """The root cannot be read (``reason``); the source keeps its ``objects``."""
        previous = self._state
        if previous is not None and not previous.available and previous.reason == reason:
            return
        if previous is None and reason == "missing":
            log.warning(
                "config directory %s does not exist; serving no config from it until it does",
                self._root,
                extra={"source": self._source},
            )
        else:
            log.error(
                "config directory %s is unavailable (%s); keeping its %d object(s) until it"
                " comes back",
                self._root,
                reason,
                objects,
                extra={"source": self._source, "reason": reason},
            )
        since = previous.since if previous is not None and not previous.available else time.time()
        self._state = Availability(self._source, False, reason, since)

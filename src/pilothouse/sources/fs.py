"""The file source (``fs:///dir``): Istio YAML and JSON files in a directory tree, watched.

Rules, per file, so that one bad file never takes good config down:

- ``*.yaml``, ``*.yml`` and ``*.json`` files are read recursively; names starting with a
  dot (editor files, Kubernetes ConfigMap ``..data`` folders) are skipped.
- A file that cannot be parsed (bad YAML, unreadable) keeps every object it loaded
  before; the error is logged with file and line and kept in :meth:`FileSource.statuses`.
- An invalid object is skipped while its valid siblings load; if the same object was
  valid before, its last good version stays.
- Deleting a file deletes its objects. A file that cannot be *seen* (its folder cannot
  be read, permission denied) is not deleted: it keeps its objects and the problem is
  kept in its status.
- The root itself missing, not a directory, or unreadable makes the source
  *unavailable*, not empty: every object stays, the cause is logged once and shown by
  :meth:`FileSource.availability`, and the root is polled until it comes back (same
  inode, ``mv`` back, or ``rm -rf`` and recreated); then the tree is read again and only
  the differences are applied, and the watcher is armed again. A root missing at
  start-up gives an empty, synced source that fills when the directory appears.
- The same object in two files is an error naming both files; the file that defined it
  first keeps it (at start-up, in sorted path order). When that file lets go of it, the
  other file's copy takes over. An object that moves to another file in one change is
  handed over (files still there are read before the gone ones are forgotten), and if
  it is invalid in its new file, its last good version moves with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import stat
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from pilothouse.config.documents import MAX_BYTES, internal_error
from pilothouse.config.load import Loader, Problem
from pilothouse.config.model import Config, ConfigKey
from pilothouse.config.validation.report import Severity
from pilothouse.kinds.table import SCHEMAS
from pilothouse.settings import Settings
from pilothouse.sources.availability import Availability
from pilothouse.sources.fs_health import RootHealth
from pilothouse.sources.fs_tree import (
    SUFFIXES,
    RootUnavailable,
    TreeScan,
    check_root,
    is_config_file,
    reason_of,
    root_identity,
    scan_tree,
)
from pilothouse.sources.gc_pause import collector_paused
from pilothouse.sources.memory import MemoryStore

log = logging.getLogger("pilothouse.sources.fs")

__all__ = ["SUFFIXES", "FileSource", "FileStatus", "is_config_file"]


@dataclass(frozen=True, slots=True)
class FileStatus:
    """The outcome of the last load of one file, for logs and the debug endpoints."""

    path: str
    loaded_at: float
    objects: tuple[ConfigKey, ...]
    problems: tuple[Problem, ...]

    @property
    def ok(self) -> bool:
        return not any(p.severity is Severity.ERROR for p in self.problems)


class FileSource:
    """Loads a directory tree into its own :class:`MemoryStore` and keeps it current."""

    def __init__(
        self,
        root: Path,
        loader: Loader | None = None,
        *,
        debounce: float = Settings.file_debounce,
        force_polling: bool | None = None,
        root_poll: float = Settings.file_root_poll,
    ) -> None:
        self.root = root.resolve()
        self.loader = loader if loader is not None else Loader(SCHEMAS, source=f"fs://{self.root}")
        self.store = MemoryStore(name=f"fs://{self.root}")
        self._debounce = debounce
        self._force_polling = force_polling
        self._root_poll = root_poll
        self._defined: dict[str, dict[ConfigKey, Config]] = {}
        self._owner: dict[ConfigKey, str] = {}
        self._status: dict[str, FileStatus] = {}
        self._health = RootHealth(self.name, self.root)
        self._stop = asyncio.Event()

    @property
    def name(self) -> str:
        return self.store.name

    def has_synced(self) -> bool:
        return self.store.has_synced()

    def statuses(self) -> dict[str, FileStatus]:
        return dict(self._status)

    def config_errors(self) -> int:
        """Files whose last load had errors (their good objects, if any, are served)."""
        return sum(1 for status in self._status.values() if not status.ok)

    def availability(self) -> Availability:
        """Whether the root could be read at the last look, and if not, why."""
        return self._health.current()

    def scan(self) -> list[str]:
        """Every config file under the root, sorted (none when the root cannot be read)."""
        try:
            return list(scan_tree(self.root).files)
        except RootUnavailable:
            return []

    def load_all(self) -> None:
        """The initial load (and a full resync): every file, in sorted order.

        When the root cannot be read nothing changes: the source is marked unavailable
        and keeps what it holds.
        """
        tree = self._look()
        if tree is not None:
            with collector_paused():
                self.reload(sorted(set(tree.files) | set(self._defined)))
        self.store.mark_synced()

    async def run(self) -> None:
        """Load everything, then follow changes until :meth:`close`.

        While the root can be read, a watcher reports changes; when the root goes away
        (or is replaced) the watcher is closed, the root is polled every ``root_poll``
        seconds, and once it is back the tree is read again and a new watcher armed.
        """
        self.load_all()
        resync = False
        while not self._stop.is_set():
            if resync or self.availability().available:
                resync = await self._follow(resync)
            else:
                resync = await self._root_back()

    def close(self) -> None:
        self._stop.set()

    async def _root_back(self) -> bool:
        """Wait until the root can be listed again (True) or the source is closed."""
        while not self._stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), self._root_poll)
                return False
            try:
                check_root(self.root)
            except RootUnavailable as gone:
                self._health.lost(gone.reason, len(self._owner))
                continue
            return True
        return False

    async def _follow(self, resync: bool) -> bool:
        """Watch the tree until the source is closed (False) or the root is gone or
        replaced (True when it should be read again at once)."""
        from watchfiles import awatch

        try:
            armed = root_identity(self.root)
        except RootUnavailable as gone:
            self._health.lost(gone.reason, len(self._owner))
            return False
        debounce = max(1, int(self._debounce * 1000))
        try:
            # watchfiles yields after `step` ms without a change, or once `debounce` ms
            # have passed, checked every `step` ms: under steady writes a 50 ms step
            # held a 50 ms debounce to 100 ms, so the step is at most half the debounce.
            batches = awatch(
                self.root,
                debounce=debounce,
                step=max(1, min(50, debounce // 2)),
                stop_event=self._stop,
                rust_timeout=max(1, int(self._root_poll * 1000)),
                yield_on_timeout=True,
                force_polling=self._force_polling,
                recursive=True,
                ignore_permission_denied=True,
            )
            async with contextlib.aclosing(batches):
                async for changes in batches:
                    if resync:
                        # Re-armed after the root came back: read everything once the
                        # watcher runs, so that nothing changed in between is missed.
                        resync = False
                        self.load_all()
                        if not self.availability().available:
                            return False
                        continue
                    try:
                        now = root_identity(self.root)
                    except RootUnavailable as gone:
                        self._health.lost(gone.reason, len(self._owner))
                        return False
                    if now != armed:
                        log.info("config directory %s was replaced; reading it again", self.root)
                        return True
                    if changes and not self._on_changes({path for _change, path in changes}):
                        return False
        except Exception as exc:
            # The watcher itself failed (the root vanished while it started, a notify
            # backend error): look at the root again after a pause instead of failing.
            log.warning(
                "watching config directory %s failed (%s); looking at it again",
                self.root,
                type(exc).__name__,
                extra={"source": self.name},
            )
            log.debug("watcher for %s failed", self.root, exc_info=True)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), self._root_poll)
            self._look()
            return True
        return False

    def _on_changes(self, reported: set[str]) -> bool:
        """Reload what ``reported`` touched; False when the root cannot be read."""
        tree = self._look()
        if tree is None:
            return False
        self.reload(self._affected(reported, tree))
        return True

    def _affected(self, reported: set[str], tree: TreeScan) -> list[str]:
        present = set(tree.files)
        known = set(self._defined)
        touched = {p for p in reported if is_config_file(Path(p))}
        return sorted((touched & (present | known)) | (present - known) | (known - present))

    def reload(self, paths: Iterable[str]) -> None:
        """Load each of ``paths`` again (or forget it when it is gone). Whatever goes
        wrong with one file is that file's problem: it keeps its last good objects."""
        # Files still there first, then the ones gone: an object that moved from one file
        # to another is handed over (an update) instead of deleted and added again.
        ordered = sorted(paths, key=lambda path: not os.path.lexists(path))
        for path in ordered:
            try:
                self._reload_file(path)
            except Exception as exc:
                log.debug("reloading %s failed", path, exc_info=True)
                self._keep_last_good(path, internal_error("this file", exc))

    def _reload_file(self, path: str) -> None:
        try:
            mode = os.stat(path).st_mode
        except OSError as problem:
            if problem.errno in (errno.ENOENT, errno.ENOTDIR):
                self._forget_file(path)
            else:
                self._keep_unseen(path, reason_of(problem))
            return
        if stat.S_ISREG(mode):
            self._load_file(path)
        else:
            self._forget_file(path)

    def _look(self) -> TreeScan | None:
        """Scan the tree and update the availability; None when the root cannot be read."""
        try:
            tree = scan_tree(self.root)
        except RootUnavailable as gone:
            self._health.lost(gone.reason, len(self._owner))
            return None
        self._health.seen(tree)
        return tree

    def _keep_unseen(self, path: str, reason: str) -> None:
        """``path`` cannot be looked at (its folder is unreadable): keep its objects."""
        previous = self._defined.get(path)
        if previous is None:
            return
        message = f"cannot be read ({reason}); keeping its {len(previous)} object(s)"
        status = self._status.get(path)
        if status is not None and [p.message for p in status.problems] == [message]:
            return
        self._record(path, tuple(previous), (Problem(Severity.ERROR, path, None, message),))

    def _keep_last_good(self, path: str, message: str, line: int | None = None) -> None:
        previous = self._defined.get(path, {})
        self._defined[path] = previous
        self._record(path, tuple(previous), (Problem(Severity.ERROR, path, line, message),))

    def _load_file(self, path: str) -> None:
        previous = self._defined.get(path, {})
        try:
            with open(path, "rb") as handle:
                data = handle.read(MAX_BYTES + 1)
        except OSError as exc:
            self._keep_last_good(path, f"cannot read the file: {reason_of(exc)}")
            return
        if len(data) > MAX_BYTES:
            self._keep_last_good(path, f"file larger than {MAX_BYTES} bytes")
            return
        try:
            result = self.loader.load_bytes(data, path)
        except Exception as exc:  # the loader never raises; if it does, only this file fails
            log.debug("loading %s failed", path, exc_info=True)
            self._keep_last_good(path, internal_error("this file", exc))
            return
        if result.unreadable:
            # The file could not be parsed as a whole: keep what it loaded last time.
            self._defined[path] = previous
            self._record(path, tuple(previous), result.problems)
            return
        problems = list(result.problems)
        wanted: dict[ConfigKey, Config] = {}
        for config in result.configs:
            if config.key in wanted:
                problems.append(
                    Problem(
                        Severity.ERROR,
                        path,
                        config.origin.line,
                        f"duplicate object: also defined at line {wanted[config.key].origin.line}"
                        " of this file; keeping the first",
                        config.key,
                    )
                )
                continue
            wanted[config.key] = config
        for key in result.rejected:
            if key in wanted:
                continue
            if key in previous:
                wanted[key] = previous[key]  # invalid edit: the last good version stays
                continue
            owner = self._owner.get(key)
            if owner is not None and owner != path and not os.path.lexists(owner):
                # Moved here from a file that is gone, and invalid on the way: this file
                # takes over the last good version.
                wanted[key] = self._defined[owner][key]
        self._defined[path] = wanted
        for key in sorted(set(previous) - set(wanted)):
            self._release(key, path)
        for key, config in sorted(wanted.items()):
            owner = self._owner.get(key)
            if owner is not None and owner != path:
                problems.append(
                    Problem(
                        Severity.ERROR,
                        path,
                        config.origin.line,
                        f"{key} is already defined in {owner}; keeping that one",
                        key,
                    )
                )
                continue
            self._owner[key] = path
            self.store.apply(config)
        self._record(path, tuple(wanted), tuple(problems))

    def _forget_file(self, path: str) -> None:
        previous = self._defined.pop(path, {})
        self._status.pop(path, None)
        for key in sorted(previous):
            self._release(key, path)
        if previous:
            log.info("config file removed", extra={"file": path, "objects": len(previous)})

    def _release(self, key: ConfigKey, path: str) -> None:
        """``path`` no longer defines ``key``: delete it, or hand it to another file."""
        if self._owner.get(key) != path:
            return
        del self._owner[key]
        for other in sorted(self._defined):
            if other != path and key in self._defined[other]:
                self._owner[key] = other
                self.store.apply(self._defined[other][key])
                self._record_takeover(other, key)
                return
        self.store.delete(key)

    def _record_takeover(self, path: str, key: ConfigKey) -> None:
        status = self._status.get(path)
        if status is None:
            return
        kept = tuple(
            p for p in status.problems if not (p.key == key and "already defined" in p.message)
        )
        self._status[path] = FileStatus(path, status.loaded_at, status.objects, kept)

    def _record(
        self, path: str, objects: tuple[ConfigKey, ...], problems: tuple[Problem, ...]
    ) -> None:
        for problem in problems:
            if problem.severity is Severity.ERROR:
                log.warning("%s", problem)
            else:
                log.info("%s", problem)
        self._status[path] = FileStatus(path, time.time(), objects, problems)

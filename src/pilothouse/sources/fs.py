"""The file source (``fs:///dir``): Istio YAML and JSON files in a directory tree, watched.

Rules, per file, so that one bad file never takes good config down:

- ``*.yaml``, ``*.yml`` and ``*.json`` files are read recursively; names starting with a
  dot (editor files, Kubernetes ConfigMap ``..data`` folders) are skipped.
- A file that cannot be parsed (bad YAML, unreadable) keeps every object it loaded
  before; the error is logged with file and line and kept in :meth:`FileSource.statuses`.
- An invalid object is skipped while its valid siblings load; if the same object was
  valid before, its last good version stays.
- Deleting a file deletes its objects.
- The same object in two files is an error naming both files; the file that defined it
  first keeps it (at start-up, in sorted path order). When that file lets go of it, the
  other file's copy takes over.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from pilothouse.config.load import Loader, Problem
from pilothouse.config.model import Config, ConfigKey
from pilothouse.config.validation.report import Severity
from pilothouse.settings import Settings
from pilothouse.sources.collector import collector_paused
from pilothouse.sources.memory import MemoryStore

log = logging.getLogger("pilothouse.sources.fs")

SUFFIXES = (".yaml", ".yml", ".json")


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


def is_config_file(path: Path) -> bool:
    return path.suffix in SUFFIXES and not path.name.startswith(".")


class FileSource:
    """Loads a directory tree into its own :class:`MemoryStore` and keeps it current."""

    def __init__(
        self,
        root: Path,
        loader: Loader | None = None,
        *,
        debounce: float = Settings.file_debounce,
        force_polling: bool | None = None,
    ) -> None:
        self.root = root.resolve()
        self.loader = loader if loader is not None else Loader(source=f"fs://{self.root}")
        self.store = MemoryStore(name=f"fs://{self.root}")
        self._debounce = debounce
        self._force_polling = force_polling
        self._defined: dict[str, dict[ConfigKey, Config]] = {}
        self._owner: dict[ConfigKey, str] = {}
        self._status: dict[str, FileStatus] = {}
        self._stop = asyncio.Event()

    @property
    def name(self) -> str:
        return self.store.name

    def has_synced(self) -> bool:
        return self.store.has_synced()

    def statuses(self) -> dict[str, FileStatus]:
        return dict(self._status)

    def scan(self) -> list[str]:
        """Every config file under the root, sorted."""
        found: list[str] = []
        if not self.root.is_dir():
            return found
        for directory, dirs, files in os.walk(self.root):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            for file in files:
                path = Path(directory, file)
                if is_config_file(path):
                    found.append(str(path))
        return sorted(found)

    def load_all(self) -> None:
        """The initial load (and a full resync): every file, in sorted order."""
        present = self.scan()
        with collector_paused():
            self.reload(sorted(set(present) | set(self._defined)))
        self.store.mark_synced()

    async def run(self) -> None:
        """Load everything, then follow changes until :meth:`close`."""
        if not self.root.is_dir():
            log.warning("config directory %s does not exist; serving no config from it", self.root)
        self.load_all()
        if not self.root.is_dir():
            await self._stop.wait()
            return
        from watchfiles import awatch

        async for changes in awatch(
            self.root,
            debounce=max(1, int(self._debounce * 1000)),
            step=50,
            stop_event=self._stop,
            force_polling=self._force_polling,
            recursive=True,
            ignore_permission_denied=True,
        ):
            reported = {path for _change, path in changes}
            self.reload(self._affected(reported))

    def close(self) -> None:
        self._stop.set()

    def _affected(self, reported: set[str]) -> list[str]:
        present = set(self.scan())
        known = set(self._defined)
        touched = {p for p in reported if is_config_file(Path(p))}
        return sorted((touched & (present | known)) | (present - known) | (known - present))

    def reload(self, paths: Iterable[str]) -> None:
        for path in paths:
            if os.path.isfile(path):
                self._load_file(path)
            else:
                self._forget_file(path)

    def _load_file(self, path: str) -> None:
        previous = self._defined.get(path, {})
        try:
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
        except (OSError, UnicodeDecodeError) as exc:
            self._defined[path] = previous
            self._record(path, tuple(previous), (Problem(Severity.ERROR, path, None, str(exc)),))
            return
        result = self.loader.load_text(text, path)
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
            if key not in wanted and key in previous:
                wanted[key] = previous[key]  # invalid edit: the last good version stays
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

"""``serve``'s analysis: the config it serves analyzed again after each change.

The follower listens to the store's events; once the store has synced (and ``ready``:
in ``serve``, the first PushContext, which a large mesh's analysis would compete with)
and the config has been quiet for :data:`QUIET` seconds (or :data:`MOST` after the first
of a burst of changes, and no sooner than :data:`SHARE` of the time allows after the
last run), it snapshots every object and runs the analyzers in a thread, so that the
analysis never holds up the event loop that serves xDS (findings about objects of files
are pinned to their fields' lines there too, reading only the files that have findings).
Each message that was not found by the previous run is logged once (a new finding after
a change, not once per push); those that went away are logged as resolved, at debug
level. The latest result is what ``/debug/analyzez`` serves and
``pilothouse_analysis_messages`` counts, and what ``on_result`` is given (``serve
--write-status`` writes it into the objects' status, :mod:`.status`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Protocol

from pilothouse.analysis.analyzers import analyze
from pilothouse.analysis.field_lines import pinned
from pilothouse.analysis.mesh_view import mesh_view
from pilothouse.analysis.messages import Level, Message
from pilothouse.config.mesh import MeshSettings
from pilothouse.config.model import Config, ConfigKey

log = logging.getLogger("pilothouse.analysis")

QUIET = 0.5
"""Seconds without a change before the config is analyzed again."""
MOST = 5.0
"""Seconds after the first change of a burst by which it is analyzed, quiet or not."""
SHARE = 0.1
"""The most of the time analysis may take: a run that took 2 s is followed by none for
18 s, so that a large mesh under constant change spends at most a tenth of a core on it
(``bench/analysis_cost.py``: 24,000 objects took 2.8 s on a loaded 2-core machine)."""

_LOG_LEVELS = {Level.ERROR: logging.ERROR, Level.WARNING: logging.WARNING, Level.INFO: logging.INFO}


class AnalyzedStore(Protocol):
    """What the follower reads of a config store."""

    def get(self, key: ConfigKey) -> Config | None: ...

    def keys(self) -> list[ConfigKey]: ...

    def has_synced(self) -> bool: ...


@dataclass(frozen=True, slots=True)
class Analysis:
    """One run's result: the messages, when it ran, and how many objects it read."""

    messages: tuple[Message, ...] = ()
    analyzed_at: float = 0.0
    """Wall time of the run (0: none yet)."""
    objects: int = 0
    runs: int = 0

    def counts(self) -> dict[tuple[str, str], int]:
        """Messages by (level, code)."""
        counted: dict[tuple[str, str], int] = {}
        for message in self.messages:
            where = (message.type.level.label, message.type.code)
            counted[where] = counted.get(where, 0) + 1
        return counted


@dataclass
class AnalysisFollower:
    """Analyzes ``store`` after every burst of changes; ``run()`` until cancelled."""

    store: AnalyzedStore
    mesh: Callable[[], MeshSettings] = MeshSettings
    quiet: float = QUIET
    most: float = MOST
    share: float = SHARE
    logs: bool = True
    """Whether new findings are logged (one worker of several logs them)."""
    ready: Callable[[], Awaitable[object]] | None = None
    """Awaited before the first run (``serve``: the first PushContext, so that the
    analysis of a large mesh does not compete with building it)."""
    on_result: Callable[[Analysis], None] | None = None
    """Called with each run's result (``serve --write-status``: the objects' status)."""
    latest: Analysis = field(default_factory=Analysis)
    _changed: asyncio.Event = field(default_factory=asyncio.Event)

    def on_event(self, _event: object) -> None:
        """A store subscriber: the config changed."""
        self._changed.set()

    async def run(self) -> None:
        while not self.store.has_synced():
            await asyncio.sleep(self.quiet)
        if self.ready is not None:
            await self.ready()
        while True:
            self._changed.clear()
            started = time.monotonic()
            await self.analyze_now()
            took = time.monotonic() - started
            await self._changed.wait()
            await self._settle()
            rest = took / self.share - (time.monotonic() - started)  # since the run began
            if rest > 0:
                await asyncio.sleep(rest)

    async def _settle(self) -> None:
        """Return once no change came for ``quiet`` seconds, or ``most`` have passed."""
        deadline = time.monotonic() + self.most
        while True:
            self._changed.clear()
            left = deadline - time.monotonic()
            if left <= 0:
                return
            try:
                await asyncio.wait_for(self._changed.wait(), min(self.quiet, left))
            except TimeoutError:
                return

    async def analyze_now(self) -> Analysis:
        """Analyze the store as it is now, log what is new, and keep the result."""
        configs = [c for key in self.store.keys() if (c := self.store.get(key)) is not None]
        mesh = self.mesh()
        try:
            messages = await asyncio.to_thread(_analyze, configs, mesh)
        except Exception:  # a bug here must not end the server: keep the last result
            log.exception("the analysis of the served config failed")
            return self.latest
        previous = {_identity(m) for m in self.latest.messages}
        current = {_identity(m) for m in messages}
        if self.logs:
            for message in messages:
                if _identity(message) not in previous:
                    log.log(_LOG_LEVELS[message.type.level], "analysis: %s", message)
            for message in self.latest.messages:
                if _identity(message) not in current:
                    log.debug("analysis resolved: %s", message)
        self.latest = Analysis(tuple(messages), time.time(), len(configs), self.latest.runs + 1)
        if self.on_result is not None:
            self.on_result(self.latest)
        return self.latest


def _analyze(configs: Iterable[Config], mesh: MeshSettings) -> list[Message]:
    """The findings, those about objects of files at their fields' lines."""
    messages = analyze(mesh_view(configs, mesh=mesh))
    files = {m.origin.file for m in messages if m.origin is not None and m.origin.file}
    return pinned(messages, sorted(files))


def _identity(message: Message) -> tuple[object, ...]:
    return (message.key, message.type.code, message.text)

"""A second process that checks part of a large upstream response while this one does the rest.

Validating an object is pure Python and costs tens of microseconds; an upstream that
sends 100,000 ServiceEntries in one response would keep one core busy for seconds
while the machine's other cores idle. :class:`CheckWorker` runs one worker process
(``spawn``, so no gRPC state is forked) that takes a share of the entries, decodes and
validates them exactly as :class:`~pilothouse.sources.upstream_resources.KindDecoder`
does, and answers with only the verdicts: None for a valid entry, ``(name, reason)``
for a rejected one. The source then builds the Configs of the valid ones without
checking them a second time.

The worker is an optimisation and never a dependency: until it has started, for
small responses, and after any failure (a crash, a timeout) the source checks
everything itself, with the same outcome.
"""

from __future__ import annotations

import logging
import multiprocessing
from collections.abc import Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from typing import NamedTuple

from pilothouse.config.schema import SchemaSet

log = logging.getLogger("pilothouse.sources.xds")

Verdict = tuple[str, str] | None
"""None when the entry is valid, else the rejected entry's name and the reason."""


class Packed(NamedTuple):
    """One response entry as bytes: what crosses to the worker (an ``Any``'s two fields)."""

    type_url: str
    value: bytes


def check_entries(kind: str, source: str, entries: Sequence[Packed]) -> list[Verdict]:
    """In the worker: decode and validate ``entries`` of ``kind``; one verdict each."""
    from pilothouse.sources.upstream_resources import KindDecoder, Rejection

    schema = SchemaSet().by_kind(kind)
    if schema is None:
        raise ValueError(f"unknown kind {kind!r}")
    decoder = KindDecoder(schema, source)
    verdicts: list[Verdict] = []
    for entry in entries:
        outcome = decoder.decode_entry(entry)
        verdicts.append((outcome.name, outcome.reason) if isinstance(outcome, Rejection) else None)
    return verdicts


def _started() -> bool:
    return True


class CheckWorker:
    """One worker process for one source; ``share`` of a large response goes to it."""

    def __init__(self, *, min_entries: int = 2000, share: float = 0.55) -> None:
        self.min_entries = min_entries
        self.share = share
        self._executor: ProcessPoolExecutor | None = None
        self._warm: Future[bool] | None = None
        self._broken = False

    def start(self) -> None:
        """Start the process in the background (importing pilothouse there takes a while)."""
        if self._executor is None and not self._broken:
            self._executor = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
            self._warm = self._executor.submit(_started)

    def usable(self, count: int) -> bool:
        """Whether ``count`` fresh entries are worth sending, and the worker is up."""
        return (
            count >= self.min_entries
            and not self._broken
            and self._warm is not None
            and self._warm.done()
            and self._warm.exception() is None
        )

    def submit(self, kind: str, source: str, entries: Sequence[Packed]) -> Future[list[Verdict]]:
        assert self._executor is not None
        return self._executor.submit(check_entries, kind, source, list(entries))

    def verdicts(self, pending: Future[list[Verdict]], timeout: float) -> list[Verdict] | None:
        """The worker's verdicts, or None (and no more use of it) if it failed."""
        try:
            return pending.result(timeout=timeout)
        except Exception as problem:  # a crash, a timeout: check locally from now on
            log.warning("validation worker failed (%s); validating in-process", problem)
            self._broken = True
            self.close()
            return None

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None

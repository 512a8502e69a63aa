"""Steady background load through a listener, recorded with timestamps, for config-change tests.

``SteadyLoad`` runs a few workers that send requests back to back until stopped (one
fresh connection per request unless told otherwise) and records every outcome with the
time it completed: status, answering upstream (``x-upstream``) or error.  Tests change
config while it runs, then ask when traffic moved and what failed meanwhile.  Loopback
only; the caller bounds it by stopping it (``async with`` stops it on exit).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from dataclasses import dataclass
from types import TracebackType

from tests.e2e.harness.client import UPSTREAM_HEADER, fetch
from tests.e2e.harness.http1 import HttpProtocolError
from tests.e2e.harness.ports import LOOPBACK


@dataclass(frozen=True, slots=True)
class Sample:
    """One request: when it completed (monotonic seconds) and how."""

    at: float
    status: int | None
    upstream: str | None
    error: str | None

    @property
    def failed(self) -> bool:
        """A connection error, a timeout, or a 5xx."""
        return self.status is None or self.status >= 500


class SteadyLoad:
    """``workers`` concurrent request loops against ``host:port`` until :meth:`stop`."""

    def __init__(
        self,
        port: int,
        *,
        host: str = LOOPBACK,
        path: str = "/",
        workers: int = 2,
        request_timeout: float = 2.0,
    ) -> None:
        self.host, self.port, self.path = host, port, path
        self.workers = workers
        self.request_timeout = request_timeout
        self.samples: list[Sample] = []
        self._stop = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []

    async def __aenter__(self) -> SteadyLoad:
        self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.stop()

    def start(self) -> None:
        self._tasks = [asyncio.create_task(self._worker()) for _ in range(self.workers)]

    async def stop(self) -> None:
        self._stop.set()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []

    async def _worker(self) -> None:
        while not self._stop.is_set():
            try:
                response = await fetch(
                    self.host, self.port, self.path, timeout=self.request_timeout
                )
            except (OSError, TimeoutError, EOFError, HttpProtocolError) as exc:
                error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
                self.samples.append(Sample(time.monotonic(), None, None, error))
                await asyncio.sleep(0.001)  # a refused port must not spin the loop
                continue
            self.samples.append(
                Sample(time.monotonic(), response.status, response.header(UPSTREAM_HEADER), None)
            )

    # -- what happened ------------------------------------------------------------------

    def since(self, moment: float) -> list[Sample]:
        return [s for s in self.samples if s.at >= moment]

    def failures(self) -> list[Sample]:
        return [s for s in self.samples if s.failed]

    def outcomes(self) -> Counter[str]:
        """Counts by outcome: the upstream for a success, ``"<status>"`` or the error."""
        return Counter(
            s.error or (s.upstream if s.status == 200 else str(s.status)) or "?"
            for s in self.samples
        )

    async def wait_for_upstream(
        self, upstream: str, *, after: float, streak: int = 5, timeout: float = 5.0
    ) -> float:
        """Wait until the last ``streak`` requests completed after ``after`` all came from
        ``upstream``; returns when the first of them completed."""
        deadline = time.monotonic() + timeout
        while True:
            recent = self.since(after)[-streak:]
            if len(recent) == streak and all(s.upstream == upstream for s in recent):
                return recent[0].at
            if time.monotonic() >= deadline:
                raise TimeoutError(
                    f"traffic did not move to {upstream} within {timeout}s: "
                    f"{Counter(s.upstream or s.error or s.status for s in self.since(after))}"
                )
            await asyncio.sleep(0.005)

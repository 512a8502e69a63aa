"""Steady background load through a listener, recorded with timestamps, for config-change tests.

``SteadyLoad`` runs a few workers that send requests back to back until stopped (one
fresh connection per request), or paced to a total ``rate`` of requests per second, and
records every outcome with the time it completed: status, answering upstream
(``x-upstream``) or error.  Tests change config while it runs, then ask when traffic
moved and what failed meanwhile.  Loopback only; the caller bounds it by stopping it
(``async with`` stops it on exit).
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
        authority: str | None = None,
        rate: float | None = None,
    ) -> None:
        """``rate``: requests per second over all workers (None: back to back);
        ``authority``: the ``Host`` header (default ``host:port``)."""
        if rate is not None and rate <= 0:
            raise ValueError("rate must be positive")
        self.host, self.port, self.path = host, port, path
        self.authority = authority
        self.workers = workers
        self.interval = 0.0 if rate is None else workers / rate
        """Seconds between the starts of one worker's requests (0: back to back)."""
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
        due = time.monotonic()
        while not self._stop.is_set():
            try:
                response = await fetch(
                    self.host,
                    self.port,
                    self.path,
                    authority=self.authority,
                    timeout=self.request_timeout,
                )
            except (OSError, TimeoutError, EOFError, HttpProtocolError) as exc:
                error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
                self.samples.append(Sample(time.monotonic(), None, None, error))
                await asyncio.sleep(max(0.001, self.interval))  # a refused port must not spin
                due = time.monotonic()
                continue
            self.samples.append(
                Sample(time.monotonic(), response.status, response.header(UPSTREAM_HEADER), None)
            )
            if self.interval:
                # the next slot; a worker that fell behind starts again from now (no burst)
                due = max(due + self.interval, time.monotonic())
                await self._pause(due - time.monotonic())

    async def _pause(self, seconds: float) -> None:
        """Sleep ``seconds``, or less when the load is stopped meanwhile."""
        if seconds > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), seconds)

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

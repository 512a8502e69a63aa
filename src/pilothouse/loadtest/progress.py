"""The live progress display of a load run, on stderr.

On a terminal it is one line rewritten in place twice a second; elsewhere (a
log, a pipe) a plain line every few seconds.  ``--quiet`` turns it off.  A line
reads: elapsed time and phase, proxies connected and converged, changes made and
(proxy, change) pairs still on their way, responses per second, errors, and the
server's memory and CPU when they are known.  ``follow`` samples the server and
redraws the line every half second while a run goes on.
"""

from __future__ import annotations

import asyncio
import shutil
import time
from collections.abc import Callable
from typing import Final, TextIO

from pilothouse.loadtest.outcome import ShareStatus
from pilothouse.loadtest.scenarios import LoadRun
from pilothouse.loadtest.server_process import ServerProbe, ServerRecord, ServerSample

PLAIN_INTERVAL: Final = 5.0
PROGRESS_INTERVAL: Final = 0.5
CLEAR_LINE: Final = "\x1b[K"


def progress_line(
    *,
    elapsed: float,
    phase: str,
    status: ShareStatus,
    responses_per_second: float | None,
    changes: int,
    server: ServerSample | None,
    server_cpu_percent: float | None,
) -> str:
    """One line of progress."""
    parts = [
        f"[{elapsed:6.1f}s] {phase}",
        f"connected {status.connected}/{status.proxies}",
        f"converged {status.converged}/{status.proxies}",
    ]
    if changes:
        parts.append(f"changes {changes} pending {status.pending}")
    if responses_per_second is not None:
        parts.append(f"{responses_per_second:.0f} responses/s")
    parts.append(f"errors {status.traffic.nacks + status.stream_failures}")
    if server is not None and server.rss_bytes is not None:
        text = f"server {server.rss_bytes / 2**20:.0f} MiB"
        if server_cpu_percent is not None:
            text += f" {server_cpu_percent:.0f}% CPU"
        parts.append(text)
    return " | ".join(parts)


class ProgressDisplay:
    """Writes progress lines: in place on a terminal, now and then elsewhere."""

    def __init__(
        self,
        stream: TextIO,
        *,
        enabled: bool = True,
        terminal: bool | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream = stream
        self.enabled = enabled
        self.terminal = stream.isatty() if terminal is None else terminal
        self._clock = clock
        self._last_plain: float | None = None
        self._shown = False

    def show(self, line: str) -> None:
        if not self.enabled:
            return
        if self.terminal:
            width = shutil.get_terminal_size((120, 24)).columns - 1
            self.stream.write("\r" + line[:width] + CLEAR_LINE)
            self.stream.flush()
            self._shown = True
            return
        now = self._clock()
        if self._last_plain is None or now - self._last_plain >= PLAIN_INTERVAL:
            self._last_plain = now
            self.stream.write(line + "\n")
            self.stream.flush()

    def close(self) -> None:
        """Clear the line on a terminal, so the report starts on a clean one."""
        if self.enabled and self.terminal and self._shown:
            self.stream.write("\r" + CLEAR_LINE)
            self.stream.flush()
            self._shown = False


async def follow(
    load: LoadRun,
    probe: ServerProbe | None,
    server: ServerRecord | None,
    display: ProgressDisplay,
) -> None:
    """Sample the server and redraw the progress line until cancelled."""
    loop = asyncio.get_running_loop()
    began = loop.time()
    previous: tuple[float, ShareStatus] | None = None
    last_sample: tuple[float, ServerSample] | None = None
    while True:
        await asyncio.sleep(PROGRESS_INTERVAL)
        now = loop.time()
        status = load.status()
        rate = None
        if previous is not None and now > previous[0]:
            moved = status.traffic.responses - previous[1].traffic.responses
            rate = max(0.0, moved / (now - previous[0]))
        previous = (now, status)
        sample = await probe.sample() if probe is not None else None
        cpu_percent = None
        if sample is not None:
            if server is not None:
                server.note(sample)
            if last_sample is not None and sample.cpu_seconds is not None:
                before = last_sample[1].cpu_seconds
                if before is not None and now > last_sample[0]:
                    cpu_percent = 100 * (sample.cpu_seconds - before) / (now - last_sample[0])
            last_sample = (now, sample)
        display.show(
            progress_line(
                elapsed=now - began,
                phase=load.phase,
                status=status,
                responses_per_second=rate,
                changes=load.armed,
                server=sample,
                server_cpu_percent=cpu_percent,
            )
        )

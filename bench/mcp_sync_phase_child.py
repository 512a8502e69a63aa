"""Runs ``bench/mcp_sync_phases.py`` in a child process and reads what it got through.

The child prints one JSON line per phase as the phase ends; :class:`PhasesChild`
starts it, and :meth:`PhasesChild.collect` reads those lines until the last one
arrives, the child dies or the time limit passes, then stops it. A phase that does
not scale is thereby cut off and named in the report instead of stalling the
benchmark. :class:`PhaseRun` is what was read.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.harness.child import Child
from bench.harness.figures import ms
from bench.mcp_sync_phases import PHASES

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True, slots=True)
class PhaseRun:
    """What a phases child reported before it finished or was cut off."""

    seconds: dict[str, float]
    response_bytes: int | None
    gc_seconds: float | None
    gc_collections: int | None
    cut_off: str
    where: list[str]
    text: str
    built: bool = True

    def summary(self) -> str:
        if not self.built:
            return f"the source store was not built: {self.cut_off}"
        shown = []
        for phase in PHASES:
            if phase in self.seconds:
                shown.append(f"{phase} {ms(self.seconds[phase])}")
            else:
                shown.append(f"{phase} {self.cut_off or 'not run'}")
                break
        return ", ".join(shown)

    def gc_summary(self) -> str | None:
        if self.gc_seconds is None:
            return None
        if self.gc_collections is None:
            return f"{ms(self.gc_seconds)} in the phases that finished"
        return f"{ms(self.gc_seconds)} in {self.gc_collections} collections"

    def per_object_us(self, phases: tuple[str, ...], count: int) -> float | None:
        if not all(p in self.seconds for p in phases):
            return None
        return round(sum(self.seconds[p] for p in phases) / count * 1e6, 1)


class PhasesChild:
    """One run of the phases (or of their profile) in a child process."""

    def __init__(self, workdir: Path, count: int, *, profile: bool = False) -> None:
        name = "phases-profile" if profile else "phases"
        argv = [sys.executable, str(HERE / "mcp_sync_phases.py"), "--count", str(count)]
        self.profile = profile
        self.child = Child(name, [*argv, "--profile"] if profile else argv, workdir / f"{name}.log")
        self.started = time.monotonic()
        self._last = "profile" if profile else "done"
        self._seen: list[dict[str, Any]] = []
        self._changed = self.started

    def _read(self) -> bool:
        """Take in new lines; True once the last one has arrived."""
        lines = [ln for ln in self.child.output().splitlines() if ln.startswith('{"phase"')]
        if len(lines) > len(self._seen):
            self._seen = [json.loads(ln) for ln in lines]
            self._changed = time.monotonic()
        return any(item["phase"] == self._last for item in self._seen)

    def due(self, timeout: float) -> bool:
        """True when :meth:`collect` would not wait: done, dead or out of time."""
        return self._read() or not self.child.alive() or time.monotonic() >= self.started + timeout

    def collect(self, timeout: float) -> PhaseRun:
        """Wait until the child is done, dead, or ``timeout`` s after it started; stop it."""
        deadline = self.started + timeout
        try:
            finished = self._read()
            while not finished and self.child.alive() and time.monotonic() < deadline:
                time.sleep(0.1)
                finished = self._read()
            if finished and self.profile:
                self.child.wait_for_line(r"^== cProfile", 5)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.child.wait_exit(30)
            text = self.child.output()
        finally:
            self.stop()
        values = {item["phase"]: item for item in self._seen}
        cut_off = ""
        if not finished:
            running = time.monotonic() - self._changed
            cut_off = f"> {running:.0f} s (cut off at the {timeout:.0f} s limit)"
            if time.monotonic() < deadline:
                cut_off = f"failed: {text[-1500:]}"
        return PhaseRun(
            seconds={p: values[p]["seconds"] for p in PHASES if p in values},
            response_bytes=values.get("response", {}).get("bytes"),
            gc_seconds=max(
                (item["gc_seconds"] for item in self._seen if "gc_seconds" in item), default=None
            ),
            gc_collections=values.get("done", {}).get("gc_collections"),
            cut_off=cut_off,
            where=values.get("profile", {}).get("where", []),
            text=text[text.find("== cProfile") :] if self.profile else "",
            built="build" in values,
        )

    def stop(self) -> None:
        self.child.stop()

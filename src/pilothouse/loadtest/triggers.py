"""Making a change for a load run: run the user's shell command, or write a file.

The instant a change was made is taken just before the trigger runs, so the
convergence time a run reports includes the trigger's own time (a command's
start-up, say); ``Fired.seconds`` says how long the trigger took.  A file is
written whole and renamed into place, so a watcher never reads half of it.
The change's number (from 1) replaces ``{n}`` in the file's text and is given to
a command as ``PILOTHOUSE_LOADTEST_CHANGE``.  A command runs in its own process
group, so that one running past the timeout is stopped with everything it started.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from pilothouse.loadtest.spec import Trigger

CHANGE_VARIABLE: Final = "PILOTHOUSE_LOADTEST_CHANGE"
NUMBER_PLACEHOLDER: Final = "{n}"
ERROR_TAIL: Final = 400


@dataclass(frozen=True)
class Fired:
    """One change: its number, when it began (``time.monotonic()``), how long the trigger
    took, and why it failed (None when it worked)."""

    number: int
    at: float
    seconds: float
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def file_text(trigger: Trigger, number: int) -> str:
    """The file's text for change ``number``."""
    return trigger.content.replace(NUMBER_PLACEHOLDER, str(number))


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to a hidden file beside ``path`` and rename it over ``path``."""
    temporary = path.with_name(f".{path.name}.loadtest-tmp")
    try:
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()


async def _run_command(command: str, number: int, timeout: float) -> str | None:
    process = await asyncio.create_subprocess_shell(
        command,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, CHANGE_VARIABLE: str(number)},
        start_new_session=True,
    )
    try:
        _, errors = await asyncio.wait_for(process.communicate(), timeout)
    except TimeoutError:
        return f"the trigger command ran longer than {timeout:g}s"
    finally:
        if process.returncode is None:
            # The whole group: a shell's children would hold its pipes open.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            await process.wait()
    if process.returncode != 0:
        detail = errors.decode(errors="replace").strip()[-ERROR_TAIL:]
        return f"the trigger command exited with status {process.returncode}" + (
            f": {detail}" if detail else ""
        )
    return None


async def fire(trigger: Trigger, number: int, timeout: float) -> Fired:
    """Make change ``number``; never raises for a failing trigger (``Fired.error`` says)."""
    at = time.monotonic()
    error: str | None
    if trigger.command is not None:
        error = await _run_command(trigger.command, number, timeout)
    elif trigger.file is not None:
        try:
            write_atomically(Path(trigger.file), file_text(trigger, number))
            error = None
        except OSError as problem:
            error = f"cannot write {trigger.file}: {problem}"
    else:
        error = "no trigger given"
    return Fired(number, at, time.monotonic() - at, error)

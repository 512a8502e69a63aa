"""The ``pilothouse`` command run in this process, for a command that only prints
(``bootstrap``) or only reads a control plane's admin port (``proxy-status``,
``proxy-config``): the same parser and the same code as the console script, without a
new Python that imports pilothouse again (seconds each on a loaded machine).

:func:`run_cli` answers like ``subprocess.run(..., capture_output=True, text=True)``: the
exit status (argparse's usage errors included) and what was printed on each stream.
:func:`run_cli_in_thread` is the same from a running event loop (the commands that ask
over HTTP run their own loop).
"""

from __future__ import annotations

import asyncio
import contextlib
import io
from dataclasses import dataclass

from pilothouse.cli.main import main


@dataclass(frozen=True)
class Ran:
    """What one command did: its exit status and what it printed."""

    returncode: int
    stdout: str
    stderr: str


def run_cli(*args: str) -> Ran:
    """``pilothouse ARGS`` in this process."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(args))
        except SystemExit as exit:
            code = exit.code if isinstance(exit.code, int) else int(exit.code is not None)
    return Ran(code, out.getvalue(), err.getvalue())


async def run_cli_in_thread(*args: str) -> Ran:
    """``pilothouse ARGS`` in this process, on a thread of its own."""
    return await asyncio.to_thread(run_cli, *args)

"""The unit tier starts no process: a unit test that forks, spawns or execs fails at once.

Every way Python starts a child goes through one of the functions replaced here
(``subprocess`` and ``asyncio``'s subprocesses through ``fork_exec`` or
``os.posix_spawn``, ``multiprocessing`` through ``os.fork`` or ``fork_exec``,
``os.system`` on its own). A test that needs a real process belongs in
``tests/integration``, ``tests/e2e`` or ``tests/bench``.
"""

from __future__ import annotations

import _posixsubprocess
import os
import subprocess
from collections.abc import Iterator
from typing import Any, NoReturn

import pytest

SPAWNERS: tuple[tuple[Any, str], ...] = (
    (_posixsubprocess, "fork_exec"),
    (subprocess, "_fork_exec"),
    (os, "posix_spawn"),
    (os, "posix_spawnp"),
    (os, "fork"),
    (os, "forkpty"),
    (os, "system"),
)


class ProcessStartedInUnitTier(AssertionError):
    """A unit test tried to start a process."""


def _refuse(name: str) -> Any:
    def refuse(*args: object, **kwargs: object) -> NoReturn:
        raise ProcessStartedInUnitTier(
            f"a unit test started a process ({name}); move it to tests/integration, "
            "tests/e2e or tests/bench"
        )

    return refuse


@pytest.fixture(autouse=True)
def no_process_started(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Replace every process-starting primitive for the length of one unit test."""
    for module, name in SPAWNERS:
        if hasattr(module, name):
            monkeypatch.setattr(module, name, _refuse(f"{module.__name__}.{name}"))
    yield

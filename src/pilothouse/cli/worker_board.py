"""``WorkerBoard``: what every ``serve --workers N`` worker tells the others, in shared memory.

The supervising parent allocates one row per worker slot (pid, ready, xDS connections,
the worker's private admin port: :mod:`pilothouse.cli.worker_debug`)
in a shared array before it starts any worker and hands it to each of them; a worker
writes only its own row, a few times a second, and reads every row to answer ``/ready``
(ready only when every slot holds a live worker that is ready) and ``/debug/workers``.
The parent clears a row when its worker dies, so a dead worker is never counted ready
while its replacement starts. The rows are plain integers written and read without a
lock: each field is one aligned machine word, and a reader that sees a row half
updated sees it right on its next look.
"""

from __future__ import annotations

import multiprocessing.context
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

_FIELDS: Final = 4
_PID, _READY, _CONNECTIONS, _ADMIN_PORT = range(_FIELDS)


@dataclass(frozen=True, slots=True)
class WorkerRow:
    """One worker slot as last written."""

    index: int
    pid: int
    """0 while no worker holds the slot (not started yet, or died)."""
    ready: bool
    connections: int
    """xDS streams the worker serves (plaintext and TLS ports)."""
    admin_port: int = 0
    """The worker's private admin port on loopback (0: not listening yet)."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "pid": self.pid,
            "ready": self.ready,
            "connections": self.connections,
            "admin_port": self.admin_port,
        }


class WorkerBoard:
    """``workers`` rows of shared integers (forked workers inherit them)."""

    def __init__(self, workers: int, context: multiprocessing.context.BaseContext) -> None:
        if workers < 1:
            raise ValueError("a worker board needs at least one slot")
        self.workers = workers
        self._cells: Any = context.Array("q", workers * _FIELDS, lock=False)

    def publish(self, index: int, pid: int, *, ready: bool, connections: int) -> None:
        """Worker ``index`` writes its row."""
        base = index * _FIELDS
        self._cells[base + _PID] = pid
        self._cells[base + _CONNECTIONS] = connections
        self._cells[base + _READY] = 1 if ready else 0

    def publish_admin_port(self, index: int, port: int) -> None:
        """Worker ``index`` listens privately on ``port`` (loopback)."""
        self._cells[index * _FIELDS + _ADMIN_PORT] = port

    def clear(self, index: int) -> None:
        """The slot holds no live worker (the parent saw it die)."""
        base = index * _FIELDS
        self._cells[base + _ADMIN_PORT] = 0
        self._cells[base + _READY] = 0
        self._cells[base + _CONNECTIONS] = 0
        self._cells[base + _PID] = 0

    def rows(self) -> list[WorkerRow]:
        cells = self._cells
        return [
            WorkerRow(
                index=index,
                pid=int(cells[index * _FIELDS + _PID]),
                ready=bool(cells[index * _FIELDS + _READY]),
                connections=int(cells[index * _FIELDS + _CONNECTIONS]),
                admin_port=int(cells[index * _FIELDS + _ADMIN_PORT]),
            )
            for index in range(self.workers)
        ]

    def not_ready(self) -> str | None:
        """A readiness check: None when every slot's worker is ready, else why not."""
        waiting: Sequence[WorkerRow] = [row for row in self.rows() if row.pid == 0 or not row.ready]
        if not waiting:
            return None
        names = ", ".join(
            f"{row.index} (" + ("not started" if row.pid == 0 else f"pid {row.pid}") + ")"
            for row in waiting
        )
        return f"workers not ready: {names}"

"""The parent of ``pilothouse serve --workers N``: holds the ports, runs N workers, drains.

The parent never serves and creates no gRPC object: it reserves the shared ports
(:mod:`pilothouse.cli.port_reservation`), then forks each worker (``multiprocessing``'s
``fork``, running :func:`pilothouse.cli.worker.worker_main`). By then it has imported
everything a worker runs (``serve`` and its modules) and read only the mesh config and
the CA's root, and it freezes its heap (``gc.freeze``) before the first fork: the
imported modules (code, classes, protobuf descriptors) stay shared
copy-on-write between the parent and every worker instead of being imported again in
each, and a worker's routine collections do not write to them (its heap compactions,
every few minutes, do: see :mod:`pilothouse.heap`). gRPC and ``fork`` mix as long as
gRPC has not started in the forking process: no channel, server or call, hence no gRPC
thread; the parent creates none. Shared, with ``SO_REUSEPORT``: the xDS port, the TLS xDS
port (each worker has its own loopback backend behind its TLS front), the admin port and
the webhook port. ControlZ runs in worker 0 only (its knobs are that process's).

Supervision: a worker that exits with an error before it was ever ready the first time
(a config source it cannot set up, a port it cannot bind) stops the whole ``serve`` with
status 1, as one process would. Any other worker that dies is logged (index, pid, exit
code or signal) and started again after an exponential backoff (0.25–0.5 s, doubling up
to 15–30 s; it starts again from the first step once a worker has lived a minute).
SIGTERM or SIGINT to the parent is forwarded to every worker, which drains as a single
``serve`` does; a worker still there ``drain_seconds`` + :data:`STOP_GRACE` later is
killed. The parent exits 0 when every worker is gone.
"""

from __future__ import annotations

import gc
import logging
import multiprocessing
import multiprocessing.connection
import os
import random
import signal
import time
from dataclasses import dataclass
from types import FrameType
from typing import Any

from pilothouse.backoff import Backoff
from pilothouse.cli.port_reservation import Reservation, reserve
from pilothouse.cli.worker import Serve, WorkerRole, worker_main
from pilothouse.cli.worker_board import WorkerBoard
from pilothouse.settings import Settings

log = logging.getLogger("pilothouse.supervisor")

STOP_GRACE = 3.0
"""Seconds a worker gets past ``drain_seconds`` to finish stopping before SIGKILL."""
HEALTHY_AFTER = 60.0
"""A worker that lived this long before dying restarts after the first backoff step."""
RESTART_BACKOFF = Backoff(initial=0.5, maximum=30.0)
POLL = 0.1
"""Seconds between two looks for dead workers, restarts due and signals."""


def shared_addresses(settings: Settings) -> dict[str, str]:
    """The ``Settings`` paths of the addresses workers share, with their values."""
    shared = {"xds.address": settings.xds.address, "admin.address": settings.admin.address}
    if settings.xds.tls_address:
        shared["xds.tls_address"] = settings.xds.tls_address
    if settings.webhook.cert and settings.webhook.key:
        shared["webhook.address"] = settings.webhook.address
    return shared


def reserve_all(settings: Settings) -> tuple[list[Reservation], Settings]:
    """Reserve every shared address; the settings with concrete ports. Raises
    SystemExit naming the address that cannot be had."""
    held: list[Reservation] = []
    concrete: dict[str, str] = {}
    for path, address in shared_addresses(settings).items():
        try:
            reservation = reserve(address)
        except (OSError, ValueError) as problem:
            for taken in held:
                taken.close()
            raise SystemExit(f"pilothouse: cannot listen on {address}: {problem}") from None
        held.append(reservation)
        concrete[path] = reservation.address
    return held, settings.with_overrides(concrete)


@dataclass
class _Slot:
    index: int
    process: Any = None
    """The worker's ``multiprocessing`` process, None while it waits for a restart."""
    started: float = 0.0
    failures: int = 0
    restart_at: float = 0.0
    ever_ready: bool = False
    """Whether a worker in this slot has been ready once (on the board)."""


class Supervisor:
    """Starts, restarts and stops the workers of one ``serve --workers N``."""

    def __init__(self, settings: Settings, serve: Serve, *, rng: random.Random | None = None):
        self.settings = settings
        self._serve = serve
        self._context = multiprocessing.get_context("fork")
        self.board = WorkerBoard(settings.workers, self._context)
        self._slots = [_Slot(index) for index in range(settings.workers)]
        self._rng = rng if rng is not None else random.Random()
        self._stopping = False
        self._failed = False

    def run(self) -> int:
        """Run the workers until SIGTERM or SIGINT (0), or until a worker fails to start
        the first time (1); returns the exit status."""
        previous = {
            sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGTERM, signal.SIGINT)
        }
        try:
            # what the workers inherit (the imports) stays shared: out of the collector's
            # reach, its pages are not written by a worker's collections
            gc.collect()
            gc.freeze()
            for slot in self._slots:
                self._start(slot)
            while not self._stopping:
                self._step()
            self._drain()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        log.info("stopped")
        return 1 if self._failed else 0

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self._stopping = True

    def _start(self, slot: _Slot) -> None:
        role = WorkerRole(index=slot.index, board=self.board, parent_pid=os.getpid())
        process = self._context.Process(
            target=worker_main,
            args=(self._serve, worker_settings(self.settings, slot.index), role),
            name=f"pilothouse-worker-{slot.index}",
        )
        process.start()
        slot.process, slot.started = process, time.monotonic()
        log.info("worker started", extra={"worker": slot.index, "pid": process.pid})

    def _step(self) -> None:
        now = time.monotonic()
        running = [slot.process.sentinel for slot in self._slots if slot.process is not None]
        waits = [slot.restart_at - now for slot in self._slots if slot.process is None]
        timeout = max(0.0, min([POLL, *waits]))
        multiprocessing.connection.wait(running, timeout)
        now = time.monotonic()
        rows = self.board.rows()
        for slot in self._slots:
            if slot.process is not None and rows[slot.index].ready:
                slot.ever_ready = True
            if slot.process is not None and not slot.process.is_alive():
                self._reap(slot, now)
            elif slot.process is None and slot.restart_at <= now and not self._stopping:
                self._start(slot)

    def _reap(self, slot: _Slot, now: float) -> None:
        process, slot.process = slot.process, None
        process.join()
        self.board.clear(slot.index)
        if not slot.ever_ready and process.exitcode is not None and process.exitcode > 0:
            log.error(
                "worker %d (pid %d) could not start (%s): stopping",
                slot.index,
                process.pid,
                _how(process.exitcode),
                extra={"worker": slot.index, "pid": process.pid},
            )
            self._failed = self._stopping = True
            return
        if now - slot.started >= HEALTHY_AFTER:
            slot.failures = 0
        slot.failures += 1
        delay = RESTART_BACKOFF.delay(slot.failures, self._rng)
        slot.restart_at = now + delay
        log.warning(
            "worker %d (pid %d) died (%s); restarting in %.2f s",
            slot.index,
            process.pid,
            _how(process.exitcode),
            delay,
            extra={"worker": slot.index, "pid": process.pid, "restart_in": round(delay, 3)},
        )

    def _drain(self) -> None:
        alive = [slot.process for slot in self._slots if slot.process is not None]
        log.info("draining workers", extra={"workers": len(alive)})
        for process in alive:
            if process.is_alive() and process.pid is not None:
                os.kill(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + self.settings.drain_seconds + STOP_GRACE
        for process in alive:
            process.join(max(0.0, deadline - time.monotonic()))
        for process in alive:
            if process.is_alive():
                log.warning(
                    "worker did not stop in time: killed",
                    extra={"pid": process.pid},
                )
                process.kill()
                process.join()
        for slot in self._slots:
            slot.process = None
            self.board.clear(slot.index)


def _how(exitcode: int | None) -> str:
    if exitcode is None:
        return "unknown"
    if exitcode < 0:
        try:
            return f"signal {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"signal {-exitcode}"
    return f"exit code {exitcode}"


def supervise(settings: Settings, serve: Serve) -> int:
    """``serve --workers N`` (N > 1): reserve the shared ports, then run the workers."""
    held, concrete = reserve_all(settings)
    try:
        log.info(
            "serving with %d workers",
            settings.workers,
            extra={path: address for path, address in shared_addresses(concrete).items()},
        )
        return Supervisor(concrete, serve).run()
    finally:
        for reservation in held:
            reservation.close()


def worker_settings(settings: Settings, index: int) -> Settings:
    """What worker ``index`` runs with: worker 0 as configured; the others with no
    ControlZ page and writing no Kubernetes status (one writer is enough: they would all
    write the same)."""
    if index == 0:
        return settings
    return settings.with_overrides({"ctrlz.address": "off", "kube.write_status": False})

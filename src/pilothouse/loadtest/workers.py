"""Worker processes of a load run: each runs a slice of the fleet and talks JSON lines.

With ``--processes K`` the parent runs one slice itself and starts K−1 copies of
``pilothouse loadtest --worker``.  Parent and worker exchange one JSON object
per line: the parent writes to the worker's stdin, the worker answers on its
stdout (its stderr is kept for error messages).

parent → worker: ``{"op": "plan", "spec": …, "slice": …}`` (first),
``{"op": "start", "ramp": s}``, ``{"op": "arm", "index": i, "at": t}``,
``{"op": "mark", "name": n}``, ``{"op": "finish"}``.

worker → parent: ``{"kind": "ready"}`` once its fleet is built,
``{"kind": "status", "status": …}`` ten times a second,
``{"kind": "result", "result": …}`` after ``finish``, or
``{"kind": "error", "message": …}``.

A worker stops when its stdin closes, so it never outlives the parent, even
one that was killed; the parent closes the pipe, then terminates and kills
what is left (``WorkerShare.close``).  Workers run in their own session, so a
Ctrl-C at the terminal reaches only the parent, which stops them in order.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import traceback
from collections import deque
from collections.abc import Sequence
from typing import Any, Final, TextIO

from pilothouse.heap import HeapKeeper
from pilothouse.loadtest.outcome import ShareResult, ShareStatus
from pilothouse.loadtest.shares import LocalShare
from pilothouse.loadtest.spec import FleetSlice, LoadSpec

STATUS_INTERVAL: Final = 0.1
READY_TIMEOUT: Final = 60.0
RESULT_TIMEOUT: Final = 60.0
STOP_GRACE: Final = 5.0
GONE_GRACE: Final = 2.0
"""Seconds to wait, once a worker's stdin is gone, for its exit status and stderr."""
LINE_LIMIT: Final = 64 * 1024 * 1024
"""A worker's result is one line; it may be large (histograms of many changes)."""


def worker_command() -> list[str]:
    """The command that runs one worker: this Python, this package."""
    return [sys.executable, "-m", "pilothouse.cli.main", "loadtest", "--worker"]


class WorkerError(RuntimeError):
    """A worker process failed, or stopped answering."""


class WorkerShare:
    """The parent's handle on one worker process."""

    def __init__(
        self, spec: LoadSpec, part: FleetSlice, command: Sequence[str] | None = None
    ) -> None:
        self.spec = spec
        self.part = part
        self._command = list(command) if command is not None else worker_command()
        self._process: asyncio.subprocess.Process | None = None
        self._status = ShareStatus(proxies=part.count)
        self._ready: asyncio.Future[None] | None = None
        self._result: asyncio.Future[ShareResult] | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._stderr: deque[str] = deque(maxlen=20)
        self._problem: str | None = None

    @property
    def name(self) -> str:
        return f"worker {self.part.index}"

    @property
    def proxies(self) -> int:
        return self.part.count

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    def problem(self) -> str | None:
        """Why the worker failed, once it has."""
        return self._problem

    async def prepare(self) -> None:
        loop = asyncio.get_running_loop()
        self._ready = loop.create_future()
        self._result = loop.create_future()
        self._process = await asyncio.create_subprocess_exec(
            *self._command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
            limit=LINE_LIMIT,
        )
        self._tasks = [
            loop.create_task(self._read_stdout(), name=f"{self.name} stdout"),
            loop.create_task(self._read_stderr(), name=f"{self.name} stderr"),
        ]
        part = {"index": self.part.index, "first": self.part.first, "count": self.part.count}
        await self._send({"op": "plan", "spec": self.spec.to_json(), "slice": part})
        try:
            await asyncio.wait_for(asyncio.shield(self._ready), READY_TIMEOUT)
        except TimeoutError:
            raise WorkerError(f"{self.name} did not get ready in {READY_TIMEOUT:.0f}s") from None

    async def start(self, ramp: float) -> None:
        await self._send({"op": "start", "ramp": ramp})

    def status(self) -> ShareStatus:
        return self._status

    async def arm(self, index: int, at: float) -> None:
        await self._send({"op": "arm", "index": index, "at": at})

    async def mark(self, name: str) -> None:
        await self._send({"op": "mark", "name": name})

    async def finish(self) -> ShareResult:
        if self._result is None:
            raise WorkerError(f"{self.name} was never started")
        await self._send({"op": "finish"})
        try:
            return await asyncio.wait_for(asyncio.shield(self._result), RESULT_TIMEOUT)
        except TimeoutError:
            raise WorkerError(f"{self.name} sent no result in {RESULT_TIMEOUT:.0f}s") from None

    async def close(self) -> None:
        """Close its stdin (it stops), then terminate and kill it if it lingers."""
        process = self._process
        if process is not None:
            if process.stdin is not None and not process.stdin.is_closing():
                process.stdin.close()
            if process.returncode is None:
                try:
                    await asyncio.wait_for(process.wait(), STOP_GRACE)
                except TimeoutError:
                    with contextlib.suppress(ProcessLookupError):
                        process.terminate()
                    try:
                        await asyncio.wait_for(process.wait(), STOP_GRACE)
                    except TimeoutError:
                        with contextlib.suppress(ProcessLookupError):
                            process.kill()
                        await process.wait()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []

    # -- the pipes -------------------------------------------------------------

    async def _send(self, message: dict[str, Any]) -> None:
        process = self._process
        if self._problem is not None:
            raise WorkerError(self._problem)
        if process is None:
            raise WorkerError(f"{self.name} is not running")
        if process.stdin is None or process.stdin.is_closing():
            raise WorkerError(await self._why_gone("is not running"))
        process.stdin.write((json.dumps(message) + "\n").encode())
        try:
            await process.stdin.drain()
        except (BrokenPipeError, ConnectionResetError) as problem:
            raise WorkerError(await self._why_gone(f"went away: {problem}")) from None

    async def _why_gone(self, otherwise: str) -> str:
        """Why a worker's stdin is gone: its exit status and stderr once its output is
        read (a process that dies at once closes its stdin before that), else
        ``otherwise``."""
        if self._tasks:
            with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(asyncio.gather(*self._tasks)), GONE_GRACE)
        return self._problem or f"{self.name} {otherwise}"

    def _fail(self, message: str) -> None:
        if self._problem is None:
            self._problem = message
        error = WorkerError(self._problem)
        for future in (self._ready, self._result):
            if future is not None and not future.done():
                future.set_exception(error)
                future.exception()  # retrieved here: a waiter may never come

    async def _read_stdout(self) -> None:
        process = self._process
        assert process is not None and process.stdout is not None
        while True:
            line = await process.stdout.readline()
            if not line:
                break
            try:
                message = json.loads(line)
                kind = message["kind"]
            except (ValueError, KeyError, TypeError):
                self._stderr.append(f"(stdout) {line.decode(errors='replace').rstrip()}")
                continue
            if kind == "status":
                self._status = ShareStatus.from_json(message["status"])
            elif kind == "ready" and self._ready is not None and not self._ready.done():
                self._ready.set_result(None)
            elif kind == "result" and self._result is not None and not self._result.done():
                self._result.set_result(ShareResult.from_json(message["result"]))
            elif kind == "error":
                self._fail(f"{self.name}: {message.get('message', 'failed')}")
        code = await process.wait()
        readers = [t for t in self._tasks if t is not asyncio.current_task()]
        with contextlib.suppress(TimeoutError):  # stderr's last lines go in the message
            await asyncio.wait_for(asyncio.shield(asyncio.gather(*readers)), GONE_GRACE)
        if self._result is None or not self._result.done():
            tail = "\n".join(self._stderr)
            self._fail(f"{self.name} exited with status {code}" + (f":\n{tail}" if tail else ""))

    async def _read_stderr(self) -> None:
        process = self._process
        assert process is not None and process.stderr is not None
        while True:
            line = await process.stderr.readline()
            if not line:
                return
            self._stderr.append(line.decode(errors="replace").rstrip())


# -- the worker process side ---------------------------------------------------


class _Output:
    """JSON lines to the parent."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def send(self, message: dict[str, Any]) -> None:
        self.stream.write(json.dumps(message, separators=(",", ":")) + "\n")
        self.stream.flush()


async def _stdin_lines() -> asyncio.StreamReader:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=LINE_LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    return reader


async def _report_status(share: LocalShare, output: _Output) -> None:
    with contextlib.suppress(BrokenPipeError):
        while True:
            output.send({"kind": "status", "status": share.status().to_json()})
            await asyncio.sleep(STATUS_INTERVAL)


async def run_worker(stream: TextIO | None = None) -> int:
    """The worker's main loop: read the plan, build the slice, obey until finish or EOF."""
    output = _Output(stream if stream is not None else sys.stdout)
    commands = await _stdin_lines()
    first = await commands.readline()
    if not first:
        return 0
    share: LocalShare | None = None
    reporter: asyncio.Task[None] | None = None
    # a worker process holds thousands of proxies' state: keep it out of full scans
    keeper = asyncio.get_running_loop().create_task(HeapKeeper().run())
    try:
        plan = json.loads(first)
        if plan.get("op") != "plan":
            raise ValueError(f"expected the plan first, got {plan.get('op')!r}")
        part = FleetSlice(**plan["slice"])
        share = LocalShare(LoadSpec.from_json(plan["spec"]), part)
        await share.prepare()
        output.send({"kind": "ready"})
        while True:
            line = await commands.readline()
            if not line:
                return 0
            command = json.loads(line)
            op = command["op"]
            if op == "start":
                await share.start(float(command["ramp"]))
                if reporter is None:
                    reporter = asyncio.get_running_loop().create_task(_report_status(share, output))
            elif op == "arm":
                await share.arm(int(command["index"]), float(command["at"]))
            elif op == "mark":
                await share.mark(str(command["name"]))
            elif op == "finish":
                result = await share.finish()
                if reporter is not None:
                    reporter.cancel()
                output.send({"kind": "status", "status": share.status().to_json()})
                output.send({"kind": "result", "result": result.to_json()})
                return 0
            else:
                raise ValueError(f"unknown command {op!r}")
    except BrokenPipeError:
        return 0
    except Exception as problem:
        detail = "".join(traceback.format_exception_only(problem)).strip()
        with contextlib.suppress(BrokenPipeError):
            output.send({"kind": "error", "message": detail})
        traceback.print_exc(file=sys.stderr)
        return 1
    finally:
        keeper.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await keeper
        if reporter is not None:
            reporter.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reporter
        if share is not None:
            await share.close()

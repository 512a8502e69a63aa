"""A proxyless gRPC client process driven by the tests over stdin/stdout (one JSON per line).

grpcio reads ``GRPC_XDS_BOOTSTRAP`` once per process, so every client variant runs
in its own process: ``python -m tests.e2e.grpc_apps.client`` with that variable set.
Each command is a JSON object on stdin; the answer is one JSON object on stdout.

- ``{"op": "calls", "target", "n", "method", "metadata", "timeout"}``: make ``n``
  calls one after another; answer ``{"tags": {tag: count}, "errors": {code: count},
  "details": [...]}``. ``method`` is ``tag`` (the generic Tag method, the default) or
  ``health`` (``grpc.health.v1.Health/Check``, the tag read from its metadata) or
  ``flaky`` (``Flaky`` with a fresh request body: it succeeds only when retried).
- ``{"op": "until", "target", "tag" | "code", "within", ...}``: call until one call
  answers with that tag or fails with that status code; answer the outcome and the
  time it took (``{"ok": bool, "elapsed", "outcome", "detail"}``).
- ``{"op": "loop_start", "target", ...}`` / ``{"op": "loop_stop"}``: call without
  pause in a background thread; ``loop_stop`` answers every call as
  ``[monotonic start time, outcome]`` (``CLOCK_MONOTONIC`` is shared by processes).

An outcome is the backend's tag, or ``"!CODE"`` for a failed call.
"""

from __future__ import annotations

import json
import sys
import threading
import time
import uuid
from collections import Counter
from typing import Any

import grpc
from grpc_health.v1 import health_pb2

from tests.e2e.grpc_apps.backends import (
    BACKEND_HEADER,
    FLAKY_METHOD,
    HEALTH_CHECK_METHOD,
    TAG_METHOD,
)


class Caller:
    """Channels by target, and one call made the way a command asks."""

    def __init__(self) -> None:
        self._channels: dict[str, grpc.Channel] = {}

    def channel(self, target: str) -> grpc.Channel:
        if target not in self._channels:
            self._channels[target] = grpc.insecure_channel(target)
        return self._channels[target]

    def call(self, command: dict[str, Any]) -> tuple[str, str]:
        """(outcome, detail) of one call."""
        channel = self.channel(command["target"])
        metadata = tuple((k, v) for k, v in command.get("metadata", ()))
        timeout = float(command.get("timeout", 5.0))
        try:
            if command.get("method", "tag") == "health":
                check = channel.unary_unary(
                    HEALTH_CHECK_METHOD,
                    request_serializer=health_pb2.HealthCheckRequest.SerializeToString,
                    response_deserializer=health_pb2.HealthCheckResponse.FromString,
                )
                _, call = check.with_call(
                    health_pb2.HealthCheckRequest(), timeout=timeout, metadata=metadata
                )
                tags = [v for k, v in call.initial_metadata() or () if k == BACKEND_HEADER]
                return (str(tags[0]) if tags else "?"), ""
            if command.get("method") == "flaky":
                method, request = FLAKY_METHOD, uuid.uuid4().bytes
            else:
                method, request = TAG_METHOD, b""
            body = channel.unary_unary(method)(request, timeout=timeout, metadata=metadata)
            return bytes(body).decode(), ""
        except grpc.RpcError as error:
            code = error.code()
            return f"!{code.name if code else 'UNKNOWN'}", str(error.details())


def run_calls(caller: Caller, command: dict[str, Any]) -> dict[str, Any]:
    tags: Counter[str] = Counter()
    errors: Counter[str] = Counter()
    details: list[str] = []
    for _ in range(int(command["n"])):
        outcome, detail = caller.call(command)
        if outcome.startswith("!"):
            errors[outcome[1:]] += 1
            if len(details) < 3:
                details.append(detail)
        else:
            tags[outcome] += 1
    return {"tags": dict(tags), "errors": dict(errors), "details": details}


def run_until(caller: Caller, command: dict[str, Any]) -> dict[str, Any]:
    wanted = command.get("tag") or f"!{command['code']}"
    start = time.monotonic()
    deadline = start + float(command.get("within", 10.0))
    outcome, detail = "", ""
    while time.monotonic() < deadline:
        outcome, detail = caller.call(command)
        if outcome == wanted:
            break
        time.sleep(float(command.get("pause", 0.02)))
    elapsed = time.monotonic() - start
    return {"ok": outcome == wanted, "elapsed": elapsed, "outcome": outcome, "detail": detail}


class Loop:
    """Calls without pause in a thread, recording (start time, outcome) per call."""

    def __init__(self, caller: Caller, command: dict[str, Any]) -> None:
        self.records: list[tuple[float, str]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(caller, command), daemon=True)
        self._thread.start()

    def _run(self, caller: Caller, command: dict[str, Any]) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            outcome, _ = caller.call(command)
            self.records.append((started, outcome))

    def stop(self) -> list[tuple[float, str]]:
        self._stop.set()
        self._thread.join()
        return self.records


def main() -> None:
    caller = Caller()
    loop: Loop | None = None
    for line in sys.stdin:
        if not line.strip():
            continue
        command = json.loads(line)
        op = command["op"]
        if op == "calls":
            answer = run_calls(caller, command)
        elif op == "until":
            answer = run_until(caller, command)
        elif op == "loop_start":
            loop = Loop(caller, command)
            answer = {"started": time.monotonic()}
        elif op == "loop_stop":
            answer = {"records": loop.stop() if loop is not None else []}
            loop = None
        else:
            answer = {"error": f"unknown op {op!r}"}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()

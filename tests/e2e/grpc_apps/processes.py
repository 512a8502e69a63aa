"""Proxyless gRPC processes for the tests: a bootstrap file each, driven over stdin/stdout.

:func:`proxyless_bootstrap` writes the bootstrap ``pilothouse bootstrap --grpc`` prints
for a node (``GENERATOR: grpc``, Istio's server listener template). :class:`GrpcProcess`
runs one of this package's apps with ``GRPC_XDS_BOOTSTRAP`` pointing at it, in its own
process group, and stops it by its pid.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

from pilothouse.bootstrap.grpc import grpc_bootstrap

REPO_ROOT = Path(__file__).resolve().parents[3]


def proxyless_bootstrap(path: Path, xds_port: int, pod: str, namespace: str = "default") -> Path:
    """Write the proxyless bootstrap of pod ``pod.namespace`` to ``path``."""
    node_id = f"sidecar~127.0.0.1~{pod}.{namespace}~{namespace}.svc.cluster.local"
    document = grpc_bootstrap(
        node_id=node_id,
        server_uri=f"127.0.0.1:{xds_port}",
        node_cluster=pod,
        metadata={"NAMESPACE": namespace},
    )
    path.write_text(json.dumps(document, indent=2), encoding="utf-8")
    return path


ANSWER_LIMIT = 16 * 1024 * 1024
"""Longest answer line read back: ``loop_stop`` lists every call of a busy loop, far
more than asyncio's 64 KiB default."""


class GrpcProcess:
    """One app process (``tests.e2e.grpc_apps.<module>``) with its own bootstrap."""

    def __init__(self, process: asyncio.subprocess.Process, log: Path) -> None:
        self._process = process
        self.log = log

    @classmethod
    async def start(cls, module: str, bootstrap: Path, *args: str) -> GrpcProcess:
        log = bootstrap.with_suffix(".log")
        env = dict(os.environ, GRPC_XDS_BOOTSTRAP=str(bootstrap), PYTHONPATH=str(REPO_ROOT))
        env.pop("GRPC_XDS_BOOTSTRAP_CONFIG", None)
        with log.open("wb") as stderr:
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                f"tests.e2e.grpc_apps.{module}",
                *args,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=stderr,
                env=env,
                cwd=REPO_ROOT,
                start_new_session=True,
                limit=ANSWER_LIMIT,
            )
        return cls(process, log)

    async def read(self, timeout: float = 30.0) -> dict[str, Any]:
        """The next JSON line the process prints."""
        assert self._process.stdout is not None
        line = await asyncio.wait_for(self._process.stdout.readline(), timeout)
        if not line:
            raise RuntimeError(f"the process ended; its log:\n{self.describe()}")
        answer: dict[str, Any] = json.loads(line)
        return answer

    async def ask(self, wait: float = 30.0, /, **command: Any) -> dict[str, Any]:
        """Send one command and wait at most ``wait`` seconds for its answer."""
        assert self._process.stdin is not None
        self._process.stdin.write((json.dumps(command) + "\n").encode())
        await self._process.stdin.drain()
        return await self.read(wait)

    def describe(self) -> str:
        try:
            return self.log.read_text(encoding="utf-8", errors="replace")[-4000:]
        except OSError:
            return ""

    async def stop(self) -> None:
        process = self._process
        if process.returncode is None and process.stdin is not None:
            with contextlib.suppress(Exception):
                process.stdin.close()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(process.wait(), 2.0)
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if process.returncode is not None:
                return
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, sig)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(process.wait(), 2.0)

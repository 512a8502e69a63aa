"""One agent for one workload: its certificate, its SDS and xDS sockets, its Envoy.

:class:`SidecarAgent` wires :class:`~pilothouse.agent.workload_identity.WorkloadIdentity`
(key made here, CSR to pilothouse), :class:`~pilothouse.agent.sds_socket.SdsSocket` and
:class:`~pilothouse.agent.xds_proxy.XdsProxy` on their Unix sockets, and, when given,
the Envoy supervisor and the status port. Construction does no I/O; :meth:`run` serves
until :meth:`close` (or until Envoy exits).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

from pilothouse.agent.envoy_process import EnvoyExited, EnvoyProcess
from pilothouse.agent.remote_authority import CaEndpoint, RemoteAuthority
from pilothouse.agent.sds_socket import SdsSocket
from pilothouse.agent.status import StatusServer
from pilothouse.agent.unix_socket import restrict, unix_server
from pilothouse.agent.upstream import Upstream
from pilothouse.agent.workload_identity import WorkloadIdentity
from pilothouse.agent.xds_proxy import XdsProxy
from pilothouse.security.identity import SpiffeId
from pilothouse.security.workload_keys import KeyAlgorithm

log = logging.getLogger("pilothouse.agent")


@dataclass(frozen=True, slots=True)
class AgentOptions:
    """What one sidecar agent needs to know."""

    identity: SpiffeId
    xds_addresses: tuple[str, ...]
    ca: CaEndpoint
    sds_socket: Path
    xds_socket: Path
    ttl: float = 86400.0
    """SECRET_TTL: the certificate lifetime asked for, seconds."""
    grace_ratio: float = 0.5
    jitter: float = 0.01
    key: KeyAlgorithm = KeyAlgorithm.RSA


class SidecarAgent:
    """The agent's parts for one workload, run together."""

    def __init__(
        self,
        options: AgentOptions,
        *,
        envoy: EnvoyProcess | None = None,
        status: StatusServer | None = None,
    ) -> None:
        self.options = options
        self.authority = RemoteAuthority(options.ca, self._client_certificate)
        self.identity = WorkloadIdentity(
            self.authority,
            (options.identity,),
            ttl=options.ttl,
            algorithm=options.key,
            grace_ratio=options.grace_ratio,
            jitter=options.jitter,
        )
        self.upstream = Upstream(options.xds_addresses, options.ca, self.identity)
        self.sds = SdsSocket(self.identity, self._caller)
        self.xds = XdsProxy(self.upstream, self.identity)
        self.envoy = envoy
        self.status = status
        if status is not None:
            status.checks.append(self.readiness)
        self.envoy_exit: int | None = None
        """Envoy's exit status when it exited by itself."""
        self._stop = asyncio.Event()
        self.serving = asyncio.Event()
        """Set once both sockets accept connections."""

    def _client_certificate(self, identity: SpiffeId) -> Any:
        return self.identity.client_certificate(identity)

    def _caller(self, context: grpc.aio.ServicerContext[Any, Any]) -> SpiffeId | None:
        return self.options.identity  # one workload: whoever reaches the socket is it

    async def run(self) -> None:
        """Serve until :meth:`close`, or until Envoy exits (then its exit is raised as
        :class:`~pilothouse.agent.envoy_process.EnvoyExited`)."""
        sds_server = unix_server(self.options.sds_socket)
        self.sds.add_to(sds_server)
        xds_server = unix_server(self.options.xds_socket)
        self.xds.add_to(xds_server)
        await sds_server.start()
        await xds_server.start()
        restrict(self.options.sds_socket)
        restrict(self.options.xds_socket)
        log.info(
            "agent serving",
            extra={
                "identity": str(self.options.identity),
                "sds": str(self.options.sds_socket),
                "xds": str(self.options.xds_socket),
            },
        )
        self.serving.set()
        try:
            async with asyncio.TaskGroup() as tasks:
                tasks.create_task(self.identity.run())
                if self.status is not None:
                    await self.status.start()
                envoy = tasks.create_task(self._supervise()) if self.envoy is not None else None
                await self._stop.wait()
                if envoy is not None:
                    await envoy
                self.identity.close()
        finally:
            if self.status is not None:
                await self.status.close()
            await xds_server.stop(grace=0.5)
            await sds_server.stop(grace=0.5)
            await self.upstream.close()
            for path in (self.options.sds_socket, self.options.xds_socket):
                with contextlib.suppress(OSError):
                    path.unlink()

    async def _supervise(self) -> None:
        assert self.envoy is not None
        try:
            await self.envoy.run(self._stop)
        except EnvoyExited as exited:
            self.envoy_exit = exited.code
            self._stop.set()

    async def readiness(self) -> str | None:
        """None when the certificate is issued, pilothouse answered and Envoy is
        ready; else why not (``/healthz/ready``)."""
        if self.identity.current(self.options.identity) is None:
            return "no workload certificate yet"
        if not self.xds.first_response.is_set():
            return "no configuration from pilothouse yet"
        if self.envoy is not None:
            return await self.envoy.ready()
        return None

    def close(self) -> None:
        """Stop: drain Envoy (when supervised), then the sockets."""
        self._stop.set()

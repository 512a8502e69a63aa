"""The TLS xDS port (istiod's 15012): everything the plaintext port serves, plus the
certificate service, for authenticated callers only.

Its parts: a backend gRPC server on ``127.0.0.1`` (a port of its own, chosen at start)
carrying ADS and the per-type services with a :class:`~pilothouse.xds.server.tls_guard.TlsGuard`,
``IstioCertificateService``, for root-namespace callers only, legacy MCP, and the node
agents' node-set service (each caller for the node it runs on); the
:class:`~pilothouse.xds.server.tls_front.TlsFront` terminating TLS on the configured
address, with its limits on connections that have not authenticated; and the port's
:class:`~pilothouse.security.serving_cert.ServingCertificate` issued by the CA and
renewed before it expires. Refusals on the port go to the discovery server's
:class:`~pilothouse.xds.server.refusals.RefusalLog`, with those of the plaintext port.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from pilothouse.security.authn import Authenticator
from pilothouse.security.ca import CertificateAuthority
from pilothouse.security.ca_metrics import CaCounters
from pilothouse.security.ca_service import CertificateService
from pilothouse.security.serving_cert import ServingCertificate
from pilothouse.settings import XdsSettings
from pilothouse.xds.server.ads import add_discovery_services, new_grpc_server
from pilothouse.xds.server.discovery import DiscoveryServer
from pilothouse.xds.server.tls_front import BACKEND_HOST, TlsFront
from pilothouse.xds.server.tls_guard import TlsGuard


class TlsPort:
    """The TLS port's servers; :meth:`start`, :meth:`run` until cancelled, :meth:`stop`."""

    def __init__(
        self,
        settings: XdsSettings,
        discovery: DiscoveryServer,
        ca: CertificateAuthority,
        authenticator: Authenticator,
        *,
        root_namespace: str,
        mcp: Any = None,
    ) -> None:
        """``mcp`` has ``add_to(server, guard)`` (``McpRoles``): legacy MCP for
        root-namespace callers only, node sets for the node each caller runs on."""
        self.ca = ca
        self.serving = ServingCertificate(ca, settings.tls_names)
        self.backend = new_grpc_server(settings)
        refusals = discovery.admission.refusals
        self.front = TlsFront(
            self.serving.context,
            handshake_timeout=settings.tls_handshake_timeout,
            auth_timeout=settings.tls_auth_timeout,
            max_unauthenticated=settings.tls_max_unauthenticated,
            max_unauthenticated_per_address=settings.tls_max_unauthenticated_per_address,
            accept_pause=settings.tls_accept_pause,
            log_interval=settings.refusal_log_interval,
            refusals=refusals,
        )
        self.guard = TlsGuard(
            self.front,
            authenticator,
            root_namespace=root_namespace,
            identity_check=settings.identity_check,
            refusals=refusals,
        )
        self.counters = CaCounters()
        add_discovery_services(self.backend, discovery, self.guard)
        CertificateService(ca, self.guard, self.counters).add_to(self.backend)
        if mcp is not None:
            mcp.add_to(self.backend, self.guard)
        self._runner: asyncio.Task[None] | None = None

    async def start(self, host: str, port: int, *, reuse_port: bool = False) -> int:
        """Start the backend, then listen with TLS (raises OSError); the port bound.
        ``reuse_port`` shares the public port (``serve --workers``); the backend, on
        loopback, is this process's own either way."""
        try:
            backend_port = self.backend.add_insecure_port(f"{BACKEND_HOST}:0")
        except RuntimeError as problem:  # grpcio's way of saying it cannot bind
            raise OSError(f"the TLS port's backend on {BACKEND_HOST}: {problem}") from None
        if backend_port == 0:
            raise OSError("cannot listen on 127.0.0.1 for the TLS port's backend")
        self.serving.start()  # the first certificate: an EC key and one signature
        await self.backend.start()
        return await self.front.start(host, port, backend_port, reuse_port=reuse_port)

    async def run(self) -> None:
        """Renew the serving certificate until cancelled."""
        await self.serving.run()

    async def stop(self, grace: float) -> None:
        """Drain the backend's streams (as the plaintext port's), then close the front."""
        with contextlib.suppress(Exception):
            await self.backend.stop(grace)
        await self.front.stop()

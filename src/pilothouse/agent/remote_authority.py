"""The CA as the agent sees it: ``IstioCertificateService/CreateCertificate`` over TLS.

:class:`RemoteAuthority` plays :class:`~pilothouse.security.authority.Authority` for
:class:`~pilothouse.security.workload_certificates.WorkloadCertificates`, so the agent
makes keys, rotates and retries exactly as the server-side issuer does, with the
signing done elsewhere: ``sign`` sends only the CSR (the key never leaves the agent).

A call proves the workload's identity with its current certificate when it has a valid
one (a TLS client certificate) and otherwise with the token file, re-read on every call
(istio-agent's ``/var/run/secrets/tokens/istio-token``), sent as
``authorization: Bearer``; a certificate the CA refuses (UNAUTHENTICATED) is followed by
one call with the token. The answer must hold at least two certificates (leaf …
root, istio-agent's "invalid empty CertChain"); its last one is the root served as
``ROOTCA`` and trusted for xDS. ``sign`` blocks (a synchronous gRPC call): the issuer
runs it in a thread, and bundle changes are reported on the event loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import grpc
from cryptography import x509

from pilothouse.api.istio.security.v1alpha1 import ca_pb2
from pilothouse.security.authority import IssuedCertificate, SigningRefused
from pilothouse.security.identity import SpiffeId

log = logging.getLogger("pilothouse.agent.ca")

CREATE_CERTIFICATE: Final = "/istio.v1.auth.IstioCertificateService/CreateCertificate"
CALL_TIMEOUT: Final = 10.0
"""Seconds a CSR call may take before it is tried again."""


@dataclass(frozen=True, slots=True)
class ClientCertificate:
    """A certificate chain (PEM, leaf first) and its private key (PEM)."""

    chain: str
    private_key: str

    def __repr__(self) -> str:  # never print a private key
        return "ClientCertificate(...)"


@dataclass(frozen=True, slots=True)
class CaEndpoint:
    """Where the certificate service is and how the agent trusts and reaches it."""

    address: str
    """``host:port`` of pilothouse's TLS port."""
    root_file: Path
    """PEM roots the server's certificate must chain to."""
    token_file: Path | None = None
    """A bearer token (JWT) file, read again on every call."""
    server_name: str = ""
    """The name the server's certificate must carry; empty: the address's host."""

    def channel_credentials(self, client: ClientCertificate | None) -> grpc.ChannelCredentials:
        root = self.root_file.read_bytes()
        if client is None:
            return grpc.ssl_channel_credentials(root_certificates=root)
        return grpc.ssl_channel_credentials(
            root_certificates=root,
            private_key=client.private_key.encode(),
            certificate_chain=client.chain.encode(),
        )

    def channel_options(self) -> list[tuple[str, str | int]]:
        if self.server_name:
            return [("grpc.ssl_target_name_override", self.server_name)]
        return []

    def token(self) -> str | None:
        if self.token_file is None:
            return None
        try:
            text = self.token_file.read_text().strip()
        except OSError as problem:
            log.warning("token file %s cannot be read: %s", self.token_file, problem)
            return None
        return text or None


class RemoteAuthority:
    """Signs CSRs through pilothouse's certificate service (one per agent)."""

    def __init__(
        self,
        endpoint: CaEndpoint,
        current: Callable[[SpiffeId], ClientCertificate | None] = lambda identity: None,
        *,
        token_for: Callable[[SpiffeId], str | None] | None = None,
    ) -> None:
        """``current`` gives the identity's certificate, to authenticate with;
        ``token_for`` an identity's token (node mode), else the endpoint's file."""
        self._endpoint = endpoint
        self._current = current
        self._token_for = token_for
        self._bundle: tuple[str, ...] = ()
        self._callbacks: list[Callable[[], None]] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self.calls = 0
        """CSR calls made (answered or not)."""

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """The event loop bundle changes are reported on (the agent's)."""
        self._loop = loop

    def trust_bundle(self) -> tuple[str, ...]:
        """The root of the last chain the CA answered (empty before the first)."""
        return self._bundle

    def on_bundle_change(self, callback: Callable[[], None]) -> None:
        self._callbacks.append(callback)

    def sign(self, csr_pem: str, identity: SpiffeId, ttl_seconds: int) -> IssuedCertificate:
        """Send the CSR; the chain the CA answers (blocking: run it in a thread)."""
        self.calls += 1
        client = self._current(identity)
        metadata: list[tuple[str, str | bytes]] = []
        token = self._token_for(identity) if self._token_for else self._endpoint.token()
        if client is None and token is None:
            raise SigningRefused(f"no certificate and no token to prove {identity} with")
        if client is None and token is not None:
            metadata.append(("authorization", f"Bearer {token}"))
        request = ca_pb2.IstioCertificateRequest(csr=csr_pem, validity_duration=ttl_seconds)
        try:
            response = self._call(request, client, metadata)
        except grpc.RpcError as error:
            refused = error.code() is grpc.StatusCode.UNAUTHENTICATED
            if client is None or token is None or not refused:
                raise
            log.info("the certificate was refused for a renewal; proving %s with the token",
                     identity)  # fmt: skip
            response = self._call(request, None, [("authorization", f"Bearer {token}")])
        chain = tuple(response.cert_chain)
        if len(chain) < 2:
            raise SigningRefused("the CA answered an empty certificate chain")
        leaf = x509.load_pem_x509_certificate(chain[0].encode())
        self._root_seen(chain[-1])
        return IssuedCertificate(
            chain=chain,
            not_before=leaf.not_valid_before_utc,
            not_after=leaf.not_valid_after_utc,
            serial=leaf.serial_number,
        )

    def _call(
        self,
        request: ca_pb2.IstioCertificateRequest,
        client: ClientCertificate | None,
        metadata: list[tuple[str, str | bytes]],
    ) -> ca_pb2.IstioCertificateResponse:
        credentials = self._endpoint.channel_credentials(client)
        with grpc.secure_channel(
            self._endpoint.address, credentials, options=self._endpoint.channel_options()
        ) as channel:
            call = channel.unary_unary(
                CREATE_CERTIFICATE,
                request_serializer=ca_pb2.IstioCertificateRequest.SerializeToString,
                response_deserializer=ca_pb2.IstioCertificateResponse.FromString,
            )
            response: ca_pb2.IstioCertificateResponse = call(
                request, metadata=tuple(metadata), timeout=CALL_TIMEOUT
            )
        return response

    def _root_seen(self, root: str) -> None:
        if self._bundle == (root,):
            return
        self._bundle = (root,)
        loop = self._loop
        for callback in list(self._callbacks):
            if loop is not None:
                loop.call_soon_threadsafe(callback)

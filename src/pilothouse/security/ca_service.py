"""``istio.v1.auth.IstioCertificateService/CreateCertificate`` on the TLS port.

A call is authenticated first (the caller source: client certificate or bearer token;
failure is UNAUTHENTICATED). The request is bounded before it is parsed
(:data:`MAX_REQUEST_BYTES`, CVE-2022-23635), then the CSR is signed for the caller's
primary identity, whatever the CSR asks for, in a thread (RSA signing is CPU work).
A CSR the CA refuses (malformed, bad signature, lifetime above the maximum) is
INVALID_ARGUMENT with the reason. The answer is the chain, leaf first, root last.

Request metadata (``WorkloadName``, ``ClusterID``...) is not used; istiod's
``ImpersonatedIdentity`` is refused outright: pilothouse has no trusted node accounts.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Final, Protocol

import grpc
from google.protobuf.message import DecodeError

from pilothouse.api.istio.security.v1alpha1 import ca_pb2
from pilothouse.security.authn import Unauthenticated
from pilothouse.security.authority import Authority, SigningRefused
from pilothouse.security.ca_metrics import CaCounters
from pilothouse.security.identity import Caller

log = logging.getLogger("pilothouse.ca")

SERVICE: Final = "istio.v1.auth.IstioCertificateService"
METHOD: Final = "CreateCertificate"
MAX_REQUEST_BYTES: Final = 64 * 1024
"""A CSR is a few KiB; the metadata Struct a few hundred bytes."""
IMPERSONATED_IDENTITY: Final = "ImpersonatedIdentity"


class CallerSource(Protocol):
    """Who the peer of a call is (raises Unauthenticated)."""

    def caller(self, context: grpc.aio.ServicerContext[Any, Any]) -> Caller: ...


class CertificateService:
    """The CSR servicer: authenticate, bound, sign in a thread, answer the chain."""

    def __init__(
        self, authority: Authority, callers: CallerSource, counters: CaCounters | None = None
    ) -> None:
        self._authority = authority
        self._callers = callers
        self.counters = counters if counters is not None else CaCounters()

    def add_to(self, server: grpc.aio.Server) -> None:
        handler = grpc.unary_unary_rpc_method_handler(
            self.create_certificate,
            request_deserializer=_raw,
            response_serializer=_serialized,
        )
        server.add_generic_rpc_handlers(
            [grpc.method_handlers_generic_handler(SERVICE, {METHOD: handler})]
        )

    async def create_certificate(
        self, body: bytes, context: grpc.aio.ServicerContext[Any, Any]
    ) -> ca_pb2.IstioCertificateResponse:
        counters = self.counters
        counters.csr += 1
        try:
            caller = self._callers.caller(context)
        except Unauthenticated as problem:
            counters.authentication_failure += 1
            log.info("CSR refused", extra={"reason": str(problem), "peer": context.peer()})
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, str(problem))
        request = _parsed(body)
        if isinstance(request, str):
            counters.sign_error += 1
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, request)
        if IMPERSONATED_IDENTITY in request.metadata.fields:
            counters.sign_error += 1
            await context.abort(
                grpc.StatusCode.PERMISSION_DENIED,
                f"{IMPERSONATED_IDENTITY} is not allowed: no node account is trusted to use it",
            )
        identity = caller.primary
        try:
            issued = await asyncio.to_thread(
                self._authority.sign, request.csr, identity, request.validity_duration
            )
        except SigningRefused as refused:
            counters.sign_error += 1
            log.info("CSR refused", extra={"identity": str(identity), "reason": str(refused)})
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(refused))
        counters.success += 1
        log.info(
            "certificate issued",
            extra={
                "identity": str(identity),
                "serial": f"{issued.serial:x}",
                "expires": str(issued.not_after),
            },
        )
        return ca_pb2.IstioCertificateResponse(cert_chain=list(issued.chain))


def _raw(body: bytes) -> bytes:
    return body


def _serialized(message: ca_pb2.IstioCertificateResponse) -> bytes:
    return message.SerializeToString()


def _parsed(body: bytes) -> ca_pb2.IstioCertificateRequest | str:
    """The request, or why it cannot be read (size first, then decoding)."""
    if len(body) > MAX_REQUEST_BYTES:
        return f"request larger than {MAX_REQUEST_BYTES} bytes"
    request = ca_pb2.IstioCertificateRequest()
    try:
        request.ParseFromString(body)
    except (DecodeError, RecursionError, ValueError):
        return "the request does not decode as IstioCertificateRequest"
    if not request.csr:
        return "the request carries no CSR"
    return request

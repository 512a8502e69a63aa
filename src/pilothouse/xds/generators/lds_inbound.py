"""Inbound listeners: one per port of the proxy's own workload (see inbound.py).

:class:`InboundListenerInputs` is all a listener is built from besides the proxy's
address: the port, its protocol, whether it binds, a Sidecar ingress listener's TLS
settings, the port's PeerAuthentication mode (see listener_mtls.py), the workload's
AuthorizationPolicies and RequestAuthentications (see access_control.py), its server-side
telemetry (see telemetry.py) and the transport.
The listeners of a workload's proxies differ only by that address, which they hold
verbatim, so each is encoded once per inputs value and address length and patched with
each proxy's address (:class:`AddressTemplate`).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pilothouse.push.authorization import NO_AUTHORIZATION, WorkloadAuthorization
from pilothouse.push.cache import Resource
from pilothouse.push.inputs import FrozenInputs
from pilothouse.push.peer_authentication import MtlsMode
from pilothouse.push.telemetry import NO_TELEMETRY, ModeTelemetry
from pilothouse.xds.builders.access_control import AccessFilters
from pilothouse.xds.builders.cluster import RestPolling
from pilothouse.xds.builders.encode import content_hash, to_any_bytes
from pilothouse.xds.builders.listener import UNIX_PREFIX, listener_name
from pilothouse.xds.builders.listener_rest import rds_over_rest
from pilothouse.xds.builders.listener_sidecar import build_inbound_listener
from pilothouse.xds.builders.names import inbound_cluster_name
from pilothouse.xds.builders.telemetry import apply_telemetry
from pilothouse.xds.generators.base import GenerationInput
from pilothouse.xds.generators.cds import encode
from pilothouse.xds.generators.inbound import InboundPort, inbound_authorization, inbound_mtls


@dataclass(frozen=True, slots=True, eq=False)
class InboundListenerInputs(FrozenInputs):
    """Everything an inbound listener is built from besides the proxy's address: the
    port, its protocol, whether it binds, a Sidecar ingress listener's TLS settings (by
    their bytes), the port's mutual-TLS mode and the transport."""

    port: int
    protocol: str
    bind: bool
    tls_bytes: bytes | None
    mtls: MtlsMode
    rest: RestPolling | None
    authorization: WorkloadAuthorization = NO_AUTHORIZATION
    telemetry: ModeTelemetry = NO_TELEMETRY
    """The proxy's server-side access logs and tracing."""
    tls: Any = field(default=None, compare=False, repr=False)
    """The TLS settings ``tls_bytes`` serialise, for the builder to read."""
    access: AccessFilters | None = field(default=None, compare=False, repr=False)
    """The filters ``authorization`` becomes, built once per distinct policies."""

    @classmethod
    def of(
        cls, given: GenerationInput, port: InboundPort, telemetry: ModeTelemetry = NO_TELEMETRY
    ) -> InboundListenerInputs:
        tls = port.tls
        authorization = inbound_authorization(given)
        return cls(
            port=port.port,
            protocol=port.protocol,
            bind=port.bind,
            tls_bytes=None if tls is None else tls.SerializeToString(deterministic=True),
            mtls=inbound_mtls(given, port),
            rest=given.rest,
            authorization=authorization,
            telemetry=telemetry,
            tls=tls,
        )

    def guarded(self, given: GenerationInput) -> InboundListenerInputs:
        """The same inputs carrying their access-control filters, as built once for the
        policies (``access`` is not compared: the policies in ``authorization`` are)."""
        if self.authorization.empty:
            return self
        return dataclasses.replace(self, access=access_filters(given, self.authorization))


def inbound_listener(
    given: GenerationInput, port: InboundPort, telemetry: ModeTelemetry = NO_TELEMETRY
) -> Resource:
    """The inbound listener of one port of the proxy's workload, with ``telemetry`` (the
    proxy's server side).

    The listener differs between the proxies of a workload only by their address, which
    it holds verbatim (socket, names, stat prefix). So it is encoded once per inputs value
    and address length, with a placeholder address of the same length, and each proxy's
    copy is those bytes with its address written over the placeholder (see
    :class:`AddressTemplate`). The builder reads the inputs value and the address alone.
    The templates live in the resource cache, keyed by inputs and length: the inputs name
    everything the listener is built from, so a template outlives its PushContext (a
    new context after an unrelated change rebuilds none of them).
    """
    inputs = InboundListenerInputs.of(given, port, telemetry)
    address = port.address
    # ASCII: the placeholder's length in characters is its length in bytes
    if address and address.isascii() and not address.startswith(UNIX_PREFIX):
        template = given.cache.value(
            InboundTemplateKey(inputs, len(address)),
            lambda: AddressTemplate.make(
                len(address), functools.partial(build_inbound, inputs.guarded(given))
            ),
        )
        if template is not None:
            return template.resource(address, _inbound_name(inputs, address))
    built = build_inbound(inputs.guarded(given), address)
    return encode(built, built.name)


@dataclass(frozen=True, slots=True, eq=False)
class InboundTemplateKey(FrozenInputs):
    """The resource cache's key for an inbound listener's :class:`AddressTemplate`."""

    inputs: InboundListenerInputs
    address_length: int


@dataclass(frozen=True, slots=True)
class AccessFilterInputs:
    """What a workload's access-control filters are built from: its policies."""

    authorization: WorkloadAuthorization


def access_filters(given: GenerationInput, authorization: WorkloadAuthorization) -> AccessFilters:
    """The filters of ``authorization``, built once per distinct policies (shared by every
    port of every workload the same policies select)."""
    return given.cache.value(
        AccessFilterInputs(authorization), lambda: AccessFilters.of(authorization)
    )


def _inbound_name(inputs: InboundListenerInputs, address: str) -> str:
    return listener_name(address, inputs.port) if inputs.bind else inbound_cluster_name(inputs.port)


def build_inbound(inputs: InboundListenerInputs, address: str) -> Any:
    """The inbound listener ``inputs`` describe, on ``address``."""
    listener = build_inbound_listener(
        address,
        inputs.port,
        inputs.protocol,
        cluster=inbound_cluster_name(inputs.port),
        tls=inputs.tls,
        mtls=inputs.mtls,
        authorization=inputs.authorization,
        access=inputs.access,
    )
    apply_telemetry(listener, inputs.telemetry, gateway=False)
    if not inputs.bind:
        listener.name = inbound_cluster_name(inputs.port)
        listener.bind_to_port.value = False
    if inputs.rest is not None:
        rds_over_rest(listener, inputs.rest)
    return listener


class AddressTemplate:
    """An encoded resource with a placeholder where an address of a given length goes.

    :meth:`make` encodes the resource twice, with two different placeholders, and keeps
    the template only if swapping one placeholder for the other turns the first
    encoding into the second: then the address reaches the bytes verbatim and nowhere
    else, so writing a real address (of the same length, so no length prefix moves)
    over the placeholder gives exactly the bytes a fresh build would.
    """

    FILL = "~"
    CHECK = "^"

    def __init__(self, body: bytes, placeholder: bytes) -> None:
        self._body = body
        self._placeholder = placeholder

    @classmethod
    def make(cls, length: int, build: Callable[[str], Any]) -> AddressTemplate | None:
        placeholder, check = cls.FILL * length, cls.CHECK * length
        first = encode(build(placeholder), "").body
        second = to_any_bytes(build(check))
        held = placeholder.encode()
        if held not in first or first.replace(held, check.encode()) != second:
            return None
        return cls(first, held)

    def resource(self, address: str, name: str) -> Resource:
        body = self._body.replace(self._placeholder, address.encode())
        return Resource(name, content_hash(body), body)

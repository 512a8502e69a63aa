"""Authentication and authorisation for the TLS port's streams and calls.

Every call on the TLS port's backend server asks :class:`TlsGuard` who its peer is: the
front (:mod:`pilothouse.xds.server.tls_front`) gives the verified client certificate and
the client's real address, the call's metadata may carry a bearer token, and
:class:`~pilothouse.security.authn.Authenticator` decides. A call that did not come
through the front is unauthenticated. A call whose caller is established marks its
connection trusted on the front (:meth:`TlsFront.trust`), which lifts the deadline and
the limit that connections without an identity are held to.

Then, for xDS streams (istiod's rules, ``conventions.md`` §13):

- the identity check (``PILOT_ENABLE_XDS_IDENTITY_CHECK``): the proxy's namespace must be
  one of the caller's, and its ``SERVICE_ACCOUNT`` metadata, when set, must match an
  identity in that namespace; else PERMISSION_DENIED naming the mismatch;
- MCP-over-xDS (``GENERATOR=api``), legacy MCP and the ``istio.io/debug/*`` types are for
  identities of the root namespace only (``istio-system`` by default).

:class:`RootNamespaceOnly` puts the last rule in front of whole services (legacy MCP):
:class:`GuardedServer` wraps each handler registered through it; its refusals are
recorded and logged (:class:`~pilothouse.xds.server.refusals.RefusalLog`) as the xDS
streams' are.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import grpc

from pilothouse.push.proxy import ProxyIdentity
from pilothouse.security.authn import Authenticator, Unauthenticated
from pilothouse.security.identity import Caller
from pilothouse.xds.server.refusals import RefusalLog
from pilothouse.xds.server.tls_front import TlsFront


class TlsGuard:
    """Who a TLS-port call's peer is, and what it may do."""

    def __init__(
        self,
        front: TlsFront,
        authenticator: Authenticator,
        *,
        root_namespace: str,
        identity_check: bool = True,
        refusals: RefusalLog | None = None,
    ) -> None:
        self._front = front
        self._authenticator = authenticator
        self.root_namespace = root_namespace
        self._identity_check = identity_check
        self.refusals = refusals if refusals is not None else RefusalLog()

    def caller(self, context: grpc.aio.ServicerContext[Any, Any]) -> Caller:
        """The authenticated caller (its connection trusted from now on);
        Unauthenticated otherwise."""
        grpc_peer = context.peer()
        peer = self._front.peer(grpc_peer)
        if peer is None:
            raise Unauthenticated("authentication failed: the call did not come through TLS")
        metadata = [(str(k), v) for k, v in context.invocation_metadata() or ()]
        caller = self._authenticator.authenticate(peer.cert_der, metadata)
        self._front.trust(grpc_peer)
        return caller

    def peer(self, context: grpc.aio.ServicerContext[Any, Any]) -> str:
        """The client's own address (the backend sees the front's)."""
        found = self._front.peer(context.peer())
        return found.address if found is not None else context.peer()

    def refused(self, kind: str, context: grpc.aio.ServicerContext[Any, Any], reason: str) -> None:
        """Record and log a refusal of ``context``'s call (``unauthenticated``,
        ``permission_denied``), with the client's own address."""
        self.refusals.note(kind, self.peer(context), reason)

    def proxy_denial(self, proxy: ProxyIdentity, caller: Caller) -> str | None:
        """Why ``caller`` may not be ``proxy``, or None."""
        if not self._identity_check:
            return None
        if proxy.namespace not in caller.namespaces():
            return (
                f"node {proxy.node_id!r} claims namespace {proxy.namespace!r}, but the caller "
                f"is {_names(caller)}"
            )
        account = (proxy.metadata or {}).get("SERVICE_ACCOUNT", "")
        if account and not any(
            i.namespace == proxy.namespace and i.service_account == account
            for i in caller.identities
        ):
            return (
                f"node {proxy.node_id!r} claims service account {account!r} in "
                f"{proxy.namespace!r}, but the caller is {_names(caller)}"
            )
        return None

    def root_denial(self, caller: Caller, what: str) -> str | None:
        """Why ``caller`` may not use ``what`` (root-namespace only), or None."""
        if self.root_namespace in caller.namespaces():
            return None
        return f"{what} needs an identity in namespace {self.root_namespace!r}; the caller is " + (
            _names(caller)
        )


def _names(caller: Caller) -> str:
    return ", ".join(str(identity) for identity in caller.identities)


class RootNamespaceOnly(grpc.GenericRpcHandler):
    """A generic handler whose methods refuse callers outside the root namespace."""

    def __init__(self, inner: grpc.GenericRpcHandler, guard: TlsGuard, what: str) -> None:
        self._inner = inner
        self._guard = guard
        self._what = what

    def service(self, handler_call_details: grpc.HandlerCallDetails) -> Any:
        handler = self._inner.service(handler_call_details)
        if handler is None or handler.stream_stream is None:
            return handler  # the MCP services are all bidirectional streams
        behaviour: Any = handler.stream_stream
        guard, what = self._guard, self._what

        async def guarded(requests: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
            try:
                caller = guard.caller(context)
            except Unauthenticated as problem:
                guard.refusals.note("unauthenticated", guard.peer(context), str(problem))
                await context.abort(grpc.StatusCode.UNAUTHENTICATED, str(problem))
            denial = guard.root_denial(caller, what)
            if denial is not None:
                guard.refusals.note("permission_denied", guard.peer(context), denial)
                await context.abort(grpc.StatusCode.PERMISSION_DENIED, denial)
            return await behaviour(requests, context)

        return grpc.stream_stream_rpc_method_handler(
            guarded,
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )


class GuardedServer:
    """Stands in for a grpc.aio server when registering services that only root-namespace
    callers may use (``McpRoles.add_to``)."""

    def __init__(self, server: grpc.aio.Server, guard: TlsGuard, what: str) -> None:
        self._server = server
        self._guard = guard
        self._what = what

    def add_generic_rpc_handlers(self, handlers: Sequence[grpc.GenericRpcHandler]) -> None:
        self._server.add_generic_rpc_handlers(
            [RootNamespaceOnly(handler, self._guard, self._what) for handler in handlers]
        )

"""etcd's authentication tokens kept fresh for a long-lived client.

With authentication on, etcd hands a user a token that it forgets after
``--auth-token-ttl`` seconds without use (300 by default; a watch stream does not count
as use). A client that was quiet that long (the etcd source between status writes, the
CA's store, a store session) would then be refused every request with
``UNAUTHENTICATED: etcdserver: invalid auth token``. :class:`TokenRefresh`, an
interceptor on the client's channel, authenticates again when a unary request is refused
so and sends that request once more with the new token, as etcd's own client does: the
caller never sees the refusal, so a source neither relists nor loses its revision.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Final

import grpc

AUTHENTICATE: Final = "/etcdserverpb.Auth/Authenticate"
TOKEN: Final = "token"


def token_in(metadata: Any) -> str | None:
    """The ``token`` a request's metadata carries, if any."""
    for key, value in metadata or ():
        if key == TOKEN:
            return str(value)
    return None


def with_token(metadata: Any, token: str) -> grpc.aio.Metadata:
    """``metadata`` with its ``token`` replaced by ``token``."""
    pairs = [(key, value) for key, value in metadata or () if key != TOKEN]
    return grpc.aio.Metadata(*pairs, (TOKEN, token))


def token_refused(problem: grpc.aio.AioRpcError) -> bool:
    """Whether etcd refused a request for its token (expired, or from before a restart)."""
    return problem.code() is grpc.StatusCode.UNAUTHENTICATED


class TokenRefresh(grpc.aio.UnaryUnaryClientInterceptor):
    """Retries a unary request once, with a new token, when etcd refused its token.

    ``authenticate(stale)`` returns a token to use instead of ``stale``: a new one, or
    the one another request already obtained (so that requests refused together
    authenticate once)."""

    def __init__(self, authenticate: Callable[[str], Awaitable[str]]) -> None:
        self._authenticate = authenticate

    async def intercept_unary_unary(
        self,
        continuation: Callable[[grpc.aio.ClientCallDetails, Any], Awaitable[Any]],
        client_call_details: grpc.aio.ClientCallDetails,
        request: Any,
    ) -> Any:
        call = await continuation(client_call_details, request)
        stale = token_in(client_call_details.metadata)
        if stale is None or client_call_details.method in (AUTHENTICATE, AUTHENTICATE.encode()):
            return call
        try:
            return await call
        except grpc.aio.AioRpcError as problem:
            if not token_refused(problem):
                raise
        fresh = await self._authenticate(stale)
        details = grpc.aio.ClientCallDetails(
            client_call_details.method,
            client_call_details.timeout,
            with_token(client_call_details.metadata, fresh),
            client_call_details.credentials,
            client_call_details.wait_for_ready,
        )
        return await continuation(details, request)

"""One key set fetched over HTTP(S) from where :class:`JwksAddressPolicy` allows, and no further.

:func:`fetch_jwks` GETs a ``jwksUri`` and answers the body. Each request goes to the
addresses the policy checked, and only there: the connection's resolver is pinned to
them (:class:`PinnedResolver`), so the host is never resolved a second time between the
check and the connect (DNS rebinding). A redirect (301, 302, 303, 307, 308) is followed
at most :data:`MAX_REDIRECTS` times, each new location checked by the policy as the
first one was. No proxy from the environment is used, no cookie kept. The body must
answer 200 and be at most ``max_bytes``; ``timeout`` bounds the whole fetch, redirects
included.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from typing import Final
from urllib.parse import urljoin

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult

from pilothouse.security.jwks_addresses import Destination, JwksAddressPolicy, UriRefused

MAX_REDIRECTS: Final = 5
REDIRECTS: Final = frozenset({301, 302, 303, 307, 308})


class FetchFailed(ValueError):
    """The key set could not be fetched (an answer other than a key set's)."""


class PinnedResolver(AbstractResolver):
    """Answers the checked addresses of one host, and refuses any other host."""

    def __init__(self, destination: Destination) -> None:
        self._destination = destination

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        if host.rstrip(".").lower() != self._destination.host.lower():
            raise OSError(f"{host} is not the host that was checked")
        answers: list[ResolveResult] = []
        for address in self._destination.addresses:
            version = ipaddress.ip_address(address.split("%", 1)[0]).version
            found = socket.AF_INET if version == 4 else socket.AF_INET6
            if family not in (socket.AF_UNSPEC, found):
                continue
            answers.append(
                ResolveResult(
                    hostname=host, host=address, port=port or self._destination.port,
                    family=found, proto=socket.IPPROTO_TCP, flags=socket.AI_NUMERICHOST,
                )
            )  # fmt: skip
        if not answers:
            raise OSError(f"{host} has no checked address of the family asked for")
        return answers

    async def close(self) -> None:
        return None


async def fetch_jwks(
    url: str, policy: JwksAddressPolicy, *, timeout: float, max_bytes: int
) -> bytes:
    """The body ``url`` answers (following checked redirects); UriRefused where the policy
    refuses a location, FetchFailed, aiohttp.ClientError or TimeoutError otherwise."""
    async with asyncio.timeout(timeout):  # for the redirects too, not per request
        return await _follow(url, policy, aiohttp.ClientTimeout(total=timeout), max_bytes)


async def _follow(
    url: str, policy: JwksAddressPolicy, limits: aiohttp.ClientTimeout, max_bytes: int
) -> bytes:
    for _hop in range(MAX_REDIRECTS + 1):
        destination = await policy.destination(url)
        connector = aiohttp.TCPConnector(
            resolver=PinnedResolver(destination), use_dns_cache=False, force_close=True
        )
        async with (
            aiohttp.ClientSession(
                connector=connector, timeout=limits, cookie_jar=aiohttp.DummyCookieJar()
            ) as session,
            session.get(url, allow_redirects=False) as response,
        ):
            if response.status in REDIRECTS:
                location = response.headers.get("Location", "")
                if not location:
                    raise FetchFailed(f"HTTP status {response.status} without a Location")
                url = urljoin(url, location)
                continue
            if response.status != 200:
                raise FetchFailed(f"HTTP status {response.status}")
            body = await response.content.read(max_bytes + 1)
            if len(body) > max_bytes:
                raise FetchFailed(f"larger than {max_bytes} bytes")
            return body
    raise FetchFailed(f"more than {MAX_REDIRECTS} redirects")


__all__ = ["FetchFailed", "PinnedResolver", "UriRefused", "fetch_jwks"]

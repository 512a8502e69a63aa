"""Where a ``jwksUri`` may lead: the addresses the key fetcher may connect to.

A RequestAuthentication author chooses the URL pilothouse fetches, so without a rule
its fetcher would reach what only the server can reach: its own loopback-only admin
port, the cloud's metadata service, the private network. :class:`JwksAddressPolicy`
decides, for one URL, which addresses the fetch may connect to:

- only ``http`` and ``https`` URLs with a host;
- the host is resolved once, here, and every address it resolves to must be allowed
  (one bad address refuses the host: a name that answers a public and a private address
  is how DNS rebinding is done); the fetch then connects to exactly these addresses
  (:mod:`pilothouse.security.jwks_fetch` pins them), so a second answer between check
  and connect is never used;
- refused by default: loopback, link-local, private (RFC 1918, IPv6 ULA), shared
  address space (CGNAT, 100.64/10), unspecified, multicast, every other address that
  is not globally routable, and this host's own addresses (any address a socket can
  bind to); IPv4 addresses inside IPv6 (``::ffff:a.b.c.d``, 6to4, NAT64) are judged
  as the IPv4 address;
- ``allowed`` (``PILOTHOUSE_JWKS_ALLOWED_HOSTS``) opts hosts in: a host name allows
  URLs naming that host, whatever it resolves to; an address or CIDR allows the
  addresses inside it.

:meth:`JwksAddressPolicy.addresses` answers the addresses or raises
:class:`UriRefused` with the reason.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Final
from urllib.parse import urlsplit

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IpNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
HostResolver = Callable[[str, int], Awaitable[Sequence[str]]]
"""(host, port) → the addresses the host resolves to (text form)."""

SCHEMES: Final = frozenset({"http", "https"})
_CGNAT: Final = ipaddress.IPv4Network("100.64.0.0/10")
_NAT64: Final = ipaddress.IPv6Network("64:ff9b::/96")


class UriRefused(ValueError):
    """The fetcher will not connect where this URL leads; the message says why."""


@dataclass(frozen=True, slots=True)
class Destination:
    """Where one URL's request goes: host and port as written, and the checked addresses."""

    scheme: str
    host: str
    port: int
    addresses: tuple[str, ...]


def parse_allowed(entries: Sequence[str]) -> tuple[frozenset[str], tuple[IpNetwork, ...]]:
    """``PILOTHOUSE_JWKS_ALLOWED_HOSTS`` entries as host names and networks; ValueError
    naming an entry that is neither."""
    names: set[str] = set()
    networks: list[IpNetwork] = []
    for entry in entries:
        text = entry.strip()
        try:
            networks.append(ipaddress.ip_network(text.strip("[]"), strict=False))
            continue
        except ValueError:
            pass
        if not text or "/" in text or ":" in text or " " in text:
            raise ValueError(
                f"jwks allowed host {entry!r} is neither a host name nor an address or CIDR"
            )
        names.add(text.lower().rstrip("."))
    return frozenset(names), tuple(networks)


class JwksAddressPolicy:
    """Which addresses a key set may be fetched from."""

    def __init__(self, allowed: Sequence[str] = (), resolve: HostResolver | None = None) -> None:
        """``resolve`` answers a host's addresses (default: the system's resolver, in
        the event loop's thread pool)."""
        self._names, self._networks = parse_allowed(allowed)
        self._resolve = resolve or system_resolve

    async def destination(self, url: str) -> Destination:
        """Where ``url`` may be fetched from; UriRefused saying why not."""
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError as problem:
            raise UriRefused(f"not a valid URL: {problem}") from None
        scheme = parts.scheme.lower()
        if scheme not in SCHEMES:
            raise UriRefused(f"scheme {scheme!r} is not fetched (only http and https)")
        host = (parts.hostname or "").rstrip(".")
        if not host:
            raise UriRefused("the URL has no host")
        port = port or (443 if scheme == "https" else 80)
        literal = _literal(host)
        if literal is not None:
            found: Sequence[str] = (str(literal),)
        else:
            try:
                found = await self._resolve(host, port)
            except OSError as problem:
                raise UriRefused(f"cannot resolve {host}: {problem}") from None
            if not found:
                raise UriRefused(f"{host} resolves to no address")
        addresses = tuple(dict.fromkeys(found))
        if host.lower() not in self._names:
            for text in addresses:
                reason = self.refusal(ipaddress.ip_address(text.split("%", 1)[0]))
                if reason is not None:
                    shown = host if literal is not None else f"{host} resolves to {text}, which"
                    raise UriRefused(
                        f"{shown} is {reason}; allow it with PILOTHOUSE_JWKS_ALLOWED_HOSTS"
                    )
        return Destination(scheme, host, port, addresses)

    def refusal(self, address: IpAddress) -> str | None:
        """Why the fetcher may not connect to ``address``, or None when it may."""
        if any(address in network for network in self._networks):
            return None
        judged = _embedded_ipv4(address) or address
        if any(judged in network for network in self._networks):
            return None
        reason = _kind(judged)
        if reason is None and own_address(address):
            reason = "an address of this host"
        return reason


def _literal(host: str) -> IpAddress | None:
    try:
        return ipaddress.ip_address(host.strip("[]").split("%", 1)[0])
    except ValueError:
        return None


def _embedded_ipv4(address: IpAddress) -> ipaddress.IPv4Address | None:
    if isinstance(address, ipaddress.IPv4Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def _kind(address: IpAddress) -> str | None:
    """What kind of address no key set is fetched from, or None for a public one."""
    if address.is_unspecified:
        return "unspecified"
    if address.is_loopback:
        return "loopback"
    if address.is_link_local:
        return "link-local"
    if address.is_multicast:
        return "multicast"
    if isinstance(address, ipaddress.IPv4Address) and address in _CGNAT:
        return "in the shared address space (CGNAT)"
    if address.is_reserved:
        return "reserved"
    if address.is_private:
        return "private"
    if not address.is_global:
        return "not a public address"
    return None


def own_address(address: IpAddress) -> bool:
    """Whether ``address`` is one of this host's: a socket can bind to it (unless this
    host lets a socket bind to any address, ``ip_nonlocal_bind``: then nothing tells)."""
    if not _binds(address):
        return False
    return not _binds(_DOCUMENTATION[address.version])


_DOCUMENTATION: Final[dict[int, IpAddress]] = {
    4: ipaddress.IPv4Address("192.0.2.1"),
    6: ipaddress.IPv6Address("2001:db8::1"),
}


def _binds(address: IpAddress) -> bool:
    family = socket.AF_INET if address.version == 4 else socket.AF_INET6
    try:
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.bind((str(address), 0))
    except OSError:
        return False
    return True


async def system_resolve(host: str, port: int) -> Sequence[str]:
    """Every address the system's resolver gives ``host`` for TCP."""
    answers = await asyncio.get_running_loop().getaddrinfo(
        host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP
    )
    return [str(sockaddr[0]) for _family, _type, _proto, _name, sockaddr in answers]

"""Which ``Host`` headers name this server: the DNS-rebinding guard of every admin page.

A web page on ``attacker.example`` can have its name resolve to 127.0.0.1 a moment
after it loaded (DNS rebinding); its scripts then reach pilothouse's loopback ports as
"same origin" and read the answers: every proxy's config from ``/debug/config_dump``,
the metrics, the admin API. The browser cannot hide the page's own name, though: it
sends ``Host: attacker.example:15014``. So every request to the admin port and to
ControlZ must name this server in its ``Host`` header, or it is answered 421
(:mod:`pilothouse.boundary.host_check`, which the validation webhook uses too).

This server's names are:

- ``localhost`` and names under ``.localhost`` (browsers resolve those to loopback
  themselves, never through DNS);
- loopback addresses (``127.0.0.0/8``, ``::1``);
- the address the request's connection arrived at (the pod IP a kubelet probe or
  Prometheus uses), and every host the servers were told to bind;
- the machine's host name;
- the names in ``PILOTHOUSE_ADMIN_HOST_NAMES`` (a Service's DNS name, say); ``*`` there
  accepts any name and turns this guard off.

The port in the header is not checked: a rebinding page uses the server's own port
anyway. A request without a ``Host`` header names nothing; :meth:`ServerNames.refusal`
lets it pass (it is no browser's), and the check in front of each server answers it 400.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Final

from aiohttp import web

ANY_NAME: Final = "*"
SETTING: Final = "PILOTHOUSE_ADMIN_HOST_NAMES"
ADVICE: Final = (
    "use localhost, a loopback address or this server's own address (a guard against "
    f"DNS rebinding; add the name to {SETTING} to allow it)"
)
"""How to reach the admin port and ControlZ by name, said when a ``Host`` is refused."""

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


def host_of(header: str) -> str:
    """The host part of a ``Host`` header, lowercased, without brackets, port or final
    dot (``[::1]:15014`` → ``::1``, ``Example.COM.:80`` → ``example.com``)."""
    text = header.strip()
    if text.startswith("["):
        host = text[1:].partition("]")[0]
    else:
        host, colon, port = text.rpartition(":")
        if not colon or ":" in host or not port.isdigit():
            host = text  # no port (or not a valid one: the whole text is compared)
    return host.rstrip(".").lower()


def ip_of(host: str) -> IpAddress | None:
    """``host`` as an IP address (IPv4 mapped into IPv6 unwrapped, zone dropped)."""
    try:
        address = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


@dataclass(frozen=True, slots=True)
class ServerNames:
    """The names and addresses a ``Host`` header may carry to reach this server."""

    names: frozenset[str] = frozenset({"localhost"})
    """Lowercased host names and IP addresses (as :func:`ip_of` prints them)."""
    any_name: bool = False
    """Accept every ``Host`` (``*`` among the configured names)."""
    addresses: frozenset[IpAddress] = field(default_factory=frozenset)

    @classmethod
    def of_this_host(cls, *, bound: Iterable[str] = (), extra: Iterable[str] = ()) -> ServerNames:
        """``localhost``, the machine's host name, the hosts the servers bind (``bound``,
        unspecified addresses like ``0.0.0.0`` left out) and the ``extra`` names."""
        given = [host_of(name) for name in (*bound, *extra) if name.strip()]
        hostname = socket.gethostname().rstrip(".").lower()
        names: set[str] = {"localhost", *([hostname] if hostname else [])}
        addresses: set[IpAddress] = set()
        for name in given:
            address = ip_of(name)
            if address is None:
                names.add(name)
            elif not address.is_unspecified:
                addresses.add(address)
        return cls(frozenset(names), ANY_NAME in given, frozenset(addresses))

    def including(self, *names: str) -> ServerNames:
        """These names and ``names`` (host names, not addresses)."""
        return replace(self, names=self.names | {host_of(name) for name in names})

    def names_this_server(self, host_header: str | None, local_address: str | None) -> bool:
        """Whether ``host_header`` names this server, for a connection that arrived at
        ``local_address``."""
        if self.any_name or host_header is None:
            return True
        host = host_of(host_header)
        if not host:
            return False
        address = ip_of(host)
        if address is None:
            return host in self.names or host.endswith(".localhost")
        if address.is_loopback or address in self.addresses:
            return True
        return local_address is not None and ip_of(local_address) == address

    def refusal(self, request: web.Request) -> str | None:
        """Why ``request`` does not reach this server by one of its names, or None."""
        header = request.headers.get("Host")
        if self.names_this_server(header, _local_address(request)):
            return None
        return f"Host {header!r} is not a name of this server; {ADVICE}"


def _local_address(request: web.Request) -> str | None:
    transport = request.transport
    if transport is None:
        return None
    sockname = transport.get_extra_info("sockname")
    if isinstance(sockname, tuple) and sockname and isinstance(sockname[0], str):
        return sockname[0]
    return None

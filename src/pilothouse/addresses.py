"""``HOST:PORT`` addresses: the one parser behind every address flag and setting.

A server address (``--xds-address``, ``--admin-address``, ``--ctrlz-address``, ...)
and a dialled one (``--mcp-sink-address``, ``bootstrap --xds-address``, ``loadtest
--server``) are written the same way:

- ``host:port`` with a host name or an IPv4 address (``localhost:15010``,
  ``0.0.0.0:15014``);
- ``[IPv6]:port`` with the IPv6 address in brackets (``[::1]:15010``, ``[::]:0``,
  ``[fe80::1%eth0]:80``).

Port 0 asks the kernel for a free port; it is refused where the address is dialled.
Every refusal names the flag or setting and quotes what was given, in one wording
(``--admin-address: expected HOST:PORT or [IPv6]:PORT, got '::1:80'``), so an operator
reads the same sentence whichever server it concerns. :class:`HostPort` prints back in
the same form, which is how ``serve`` reports where it really listens.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import Final

_NAME: Final = re.compile(
    r"^(?=.{1,253}\.?$)[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?"
    r"(\.[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)*\.?$"
)
_DOTTED_NUMBERS: Final = re.compile(r"^[0-9.]+$")
_IPV6_LIKE: Final = re.compile(r"^[0-9A-Fa-f:.]*(%.*)?$")


class AddressError(ValueError):
    """An address that cannot be used; the message names its flag or setting."""


@dataclass(frozen=True, slots=True)
class HostPort:
    """A parsed address: ``host`` without brackets (a name, IPv4 or IPv6 address)."""

    host: str
    port: int

    def __str__(self) -> str:
        return join_host_port(self.host, self.port)

    @property
    def is_ipv6(self) -> bool:
        return ":" in self.host

    def with_port(self, port: int) -> HostPort:
        """The same host on ``port`` (the port a server really bound)."""
        return HostPort(self.host, port)


def join_host_port(host: str, port: int) -> str:
    """``host:port``, with an IPv6 ``host`` in brackets."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def parse_host_port(text: str, what: str, *, dial: bool = False) -> HostPort:
    """``text`` as an address; ``what`` names where it came from (``--admin-address``).

    ``dial`` refuses port 0 (a port to connect to, not to listen on). Raises
    :class:`AddressError`.
    """
    expected = f"{what}: expected HOST:PORT or [IPv6]:PORT, got {text!r}"
    if text.startswith("["):
        inside, bracket, rest = text[1:].partition("]")
        if not bracket or not rest.startswith(":"):
            raise AddressError(expected)
        host, port_text = inside, rest[1:]
        if not _is_ipv6(host):
            raise AddressError(f"{expected} ({host!r} is not an IPv6 address)")
    else:
        host, colon, port_text = text.rpartition(":")
        if not colon or not host:
            raise AddressError(expected)
        if ":" in host and _IPV6_LIKE.match(host):
            hint = f"[{host}]:{port_text}" if _is_ipv6(host) else "[IPv6]:PORT"
            raise AddressError(f"{expected} (write an IPv6 address in brackets: {hint})")
        if not _is_host(host):
            raise AddressError(f"{expected} ({host!r} is not a host name or IPv4 address)")
    if not port_text.isascii() or not port_text.isdigit():
        raise AddressError(expected)
    port = int(port_text)
    low = 1 if dial else 0
    if not low <= port <= 65535:
        raise AddressError(f"{what}: port must be {low}-65535, got {text!r}")
    return HostPort(host, port)


def _is_ipv6(host: str) -> bool:
    try:
        ipaddress.IPv6Address(host)
    except ValueError:
        return False
    return True


def _is_host(host: str) -> bool:
    if _DOTTED_NUMBERS.match(host):
        try:
            ipaddress.IPv4Address(host)
        except ValueError:
            return False
        return True
    return bool(_NAME.match(host))

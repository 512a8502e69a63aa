"""The TLS port's slots for connections that have not proved an identity yet.

A connection to the TLS port holds a slot from the moment it is accepted until it is
trusted (a verified client certificate, or an authenticated call) or closed. The slots
are bounded twice: ``limit`` at once in all, and ``per_address`` at once from one
client IP address, so that one host (a flood, or a misbehaving node) cannot take every
slot and keep every other host out. :class:`UnauthenticatedSlots` only counts;
:class:`~pilothouse.xds.server.tls_front.TlsFront` closes what it refuses.
"""

from __future__ import annotations

import resource
from typing import Final

from pilothouse.boundary.host_names import ip_of

ALL_TAKEN: Final = "all"
ADDRESS_TAKEN: Final = "address"


def unauthenticated_limit(configured: int) -> int:
    """``configured``, or for 0 an eighth of this process's open-file limit (16 to 1,024)."""
    if configured > 0:
        return configured
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return 1024
    return max(16, min(1024, soft // 8))


def per_address_limit(configured: int, limit: int) -> int:
    """``configured`` (at most ``limit``), or for 0 a quarter of ``limit``, at least 4;
    never above ``limit``."""
    if configured > 0:
        return min(configured, limit)
    return min(limit, max(4, limit // 4))


def source_of(peername: object) -> str:
    """The client IP address of a socket's ``peername`` (an IPv4 address mapped into
    IPv6 as the IPv4 one, an IPv6 zone dropped); ``unknown`` for anything else."""
    if not isinstance(peername, tuple) or not peername:
        return "unknown"
    host = str(peername[0]).split("%", 1)[0]
    address = ip_of(host)
    return host if address is None else str(address)


class UnauthenticatedSlots:
    """How many unauthenticated connections are open, in all and per client address."""

    __slots__ = ("_by_source", "_taken", "limit", "per_address")

    def __init__(self, limit: int, per_address: int) -> None:
        self.limit = limit
        """At most this many at once in all."""
        self.per_address = min(per_address, limit)
        """At most this many at once from one client IP address."""
        self._taken = 0
        self._by_source: dict[str, int] = {}
        """Slots held per client IP address (none kept at 0)."""

    @property
    def taken(self) -> int:
        """Slots held now, in all."""
        return self._taken

    def taken_by(self, source: str) -> int:
        """Slots held now by connections from the client IP address ``source``."""
        return self._by_source.get(source, 0)

    def take(self, source: str) -> str | None:
        """Take a slot for a connection from ``source``: None when taken, else which
        bound stops it (:data:`ALL_TAKEN` or :data:`ADDRESS_TAKEN`)."""
        if self._taken >= self.limit:
            return ALL_TAKEN
        held = self._by_source.get(source, 0)
        if held >= self.per_address:
            return ADDRESS_TAKEN
        self._taken += 1
        self._by_source[source] = held + 1
        return None

    def give_back(self, source: str) -> None:
        """A connection from ``source`` no longer holds its slot (trusted, or closed)."""
        self._taken -= 1
        left = self._by_source[source] - 1
        if left:
            self._by_source[source] = left
        else:
            del self._by_source[source]

"""Who may read the debug views: loopback clients, and everyone else only when allowed.

istiod authorizes its debug endpoints (HTTP ``/debug/*`` and the ``istio.io/debug/*``
xDS types) by the caller's authenticated identity, and lets loopback callers through
without one: that is how ``kubectl port-forward`` and ``istioctl`` on the node work.
pilothouse has no authentication yet, so it keeps only the loopback half: a debug view
answers a peer whose address is loopback (``127.0.0.0/8``, ``::1``, and IPv4 loopback
mapped into IPv6), and refuses every other peer unless the ``debug_allow_remote``
setting opens the views to all. Syncz and config dumps name every proxy and carry
their whole config, which is why istiod fixed exactly this exposure in 2026.

The decision is made from the socket's peer address, never from headers such as
``X-Forwarded-For`` that a client can write. One function serves both transports;
:func:`grpc_peer_host` reads the address out of grpc's ``context.peer()`` form.
"""

from __future__ import annotations

import ipaddress
from typing import Final

SETTING: Final = "PILOTHOUSE_DEBUG_ALLOW_REMOTE"


def is_loopback(host: str | None) -> bool:
    """Whether ``host`` (an IP address as text) is a loopback address.

    Anything that is not an IP address (None, a Unix socket path, garbage) is not.
    """
    if not host:
        return False
    try:
        address = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped.is_loopback
    return address.is_loopback


def debug_denial(host: str | None, *, allow_remote: bool) -> str | None:
    """None when a peer at ``host`` may read the debug views, else why not (a sentence
    for the 403 body or the PERMISSION_DENIED status)."""
    if allow_remote or is_loopback(host):
        return None
    shown = host or "an unknown address"
    return (
        f"debug views answer only loopback clients, and this request came from {shown}; "
        f"set {SETTING}=true on the server to open them to every client"
    )


def grpc_peer_host(peer: str) -> str | None:
    """The IP address in a grpc peer string (``ipv4:127.0.0.1:5000``,
    ``ipv6:[::1]:5000``, ``ipv6:%5B::1%5D:5000``); None for ``unix:`` and other forms."""
    kind, _, rest = peer.partition(":")
    if kind == "ipv4":
        return rest.rpartition(":")[0] or None
    if kind == "ipv6":
        rest = rest.replace("%5B", "[").replace("%5D", "]")
        if rest.startswith("["):
            return rest[1:].partition("]")[0] or None
        return rest.rpartition(":")[0] or None
    return None

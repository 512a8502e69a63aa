"""The debug access decision over every address form a peer can arrive with.

The end-to-end tests reach the servers from a real non-loopback source address
(tests/e2e/harness/remote_peer.py); this table covers the forms a single host cannot
produce (IPv6 loopback, IPv4 mapped into IPv6, scoped addresses, Unix sockets).
"""

from __future__ import annotations

import pytest

from pilothouse.boundary.debug_access import debug_denial, grpc_peer_host, is_loopback


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.1.2.3", True),
        ("::1", True),
        ("::ffff:127.0.0.1", True),
        ("10.0.0.5", False),
        ("192.0.2.2", False),
        ("::ffff:10.0.0.5", False),
        ("fe80::1%eth0", False),
        ("0.0.0.0", False),
        ("", False),
        (None, False),
        ("localhost", False),  # a name, not an address: the socket never reports one
        ("/run/admin.sock", False),
    ],
)
def test_is_loopback(host: str | None, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_denial_names_the_peer_and_the_setting_and_the_setting_opens() -> None:
    reason = debug_denial("10.0.0.5", allow_remote=False)
    assert reason is not None
    assert "10.0.0.5" in reason and "PILOTHOUSE_DEBUG_ALLOW_REMOTE=true" in reason
    assert debug_denial("10.0.0.5", allow_remote=True) is None
    assert debug_denial("127.0.0.1", allow_remote=False) is None
    assert "an unknown address" in (debug_denial(None, allow_remote=False) or "")


@pytest.mark.parametrize(
    ("peer", "host"),
    [
        ("ipv4:127.0.0.1:5000", "127.0.0.1"),
        ("ipv4:192.0.2.2:40000", "192.0.2.2"),
        ("ipv6:[::1]:5000", "::1"),
        ("ipv6:%5B::1%5D:5000", "::1"),
        ("ipv6:[::ffff:127.0.0.1]:5000", "::ffff:127.0.0.1"),
        ("unix:/tmp/xds.sock", None),
        ("unix-abstract:xds", None),
        ("", None),
    ],
)
def test_grpc_peer_host(peer: str, host: str | None) -> None:
    assert grpc_peer_host(peer) == host

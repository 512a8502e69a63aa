"""ServerNames: which ``Host`` headers name this server (the DNS-rebinding guard)."""

from __future__ import annotations

import socket

import pytest

from pilothouse.boundary.host_names import ServerNames, host_of


@pytest.mark.parametrize(
    ("header", "host"),
    [("127.0.0.1:15014", "127.0.0.1"), ("[::1]:15014", "::1"), ("[::1]", "::1"),
     ("Example.COM.:80", "example.com"), ("localhost", "localhost"), ("a:b:c", "a:b:c"),
     ("host:http", "host:http"), ("", "")],
)  # fmt: skip
def test_host_of(header: str, host: str) -> None:
    assert host_of(header) == host


NAMES = ServerNames.of_this_host(bound=["10.9.8.7", "0.0.0.0", "::"], extra=["istiod.svc."])


@pytest.mark.parametrize(
    "header",
    ["localhost:15014", "LOCALHOST.", "app.localhost:15014", "127.0.0.1:15014", "127.4.5.6",
     "[::1]:15014", "[::ffff:127.0.0.1]:15014", "10.9.8.7:15014", "istiod.svc:15014",
     "ISTIOD.SVC", f"{socket.gethostname()}:15014"],
)  # fmt: skip
def test_names_of_this_server(header: str) -> None:
    assert NAMES.names_this_server(header, local_address="127.0.0.1")


@pytest.mark.parametrize(
    "header",
    ["evil.example", "attacker.com:15014", "localhost.evil:15014", "istiod.svc.evil",
     "[2001:db8::1]:15014", "[2001:db8::1]", "[fe80::1%25eth0]:15014", "10.9.8.6:15014",
     "0.0.0.0:15014", "[::]:15014", "", ":15014"],
)  # fmt: skip
def test_foreign_names(header: str) -> None:
    assert not NAMES.names_this_server(header, local_address="127.0.0.1")


def test_the_address_a_connection_arrived_at_is_a_name() -> None:
    """A server bound to 0.0.0.0 is reached at its pod IP by probes and Prometheus."""
    names = ServerNames.of_this_host(bound=["0.0.0.0"])
    assert names.names_this_server("10.1.2.3:15014", local_address="10.1.2.3")
    assert names.names_this_server("[2001:db8::5]:15014", local_address="2001:db8::5")
    assert not names.names_this_server("10.1.2.4:15014", local_address="10.1.2.3")
    assert not names.names_this_server("10.1.2.3:15014", local_address=None)


def test_a_star_accepts_every_name_and_no_header_is_no_browser() -> None:
    assert ServerNames.of_this_host(extra=["*"]).names_this_server("evil.example", None)
    assert ServerNames.of_this_host().names_this_server(None, None)

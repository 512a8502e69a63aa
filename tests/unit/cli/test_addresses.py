"""The one ``HOST:PORT`` parser (:mod:`pilothouse.addresses`) and the flags that use it:
the same forms accepted and the same sentence for a refusal, whichever address it is."""

from __future__ import annotations

import pytest

from pilothouse.addresses import AddressError, HostPort, join_host_port, parse_host_port
from pilothouse.cli.main import build_parser
from pilothouse.cli.serve_args import ADDRESSES, settings_from
from pilothouse.environment import SettingsError

GOOD = [
    ("127.0.0.1:15010", HostPort("127.0.0.1", 15010)),
    ("0.0.0.0:0", HostPort("0.0.0.0", 0)),
    ("localhost:0", HostPort("localhost", 0)),
    ("istiod.istio-system.svc:15012", HostPort("istiod.istio-system.svc", 15012)),
    ("host.example.:80", HostPort("host.example.", 80)),
    ("[::]:0", HostPort("::", 0)),
    ("[::1]:15014", HostPort("::1", 15014)),
    ("[2001:db8::7]:65535", HostPort("2001:db8::7", 65535)),
    ("[fe80::1%eth0]:80", HostPort("fe80::1%eth0", 80)),
    ("[::ffff:127.0.0.1]:9", HostPort("::ffff:127.0.0.1", 9)),
]

BAD = [
    ("", "expected HOST:PORT or [IPv6]:PORT, got ''"),
    ("15014", "expected HOST:PORT or [IPv6]:PORT, got '15014'"),
    (":15014", "expected HOST:PORT or [IPv6]:PORT, got ':15014'"),
    ("host:", "expected HOST:PORT or [IPv6]:PORT, got 'host:'"),
    ("host:http", "expected HOST:PORT or [IPv6]:PORT, got 'host:http'"),
    ("host:-1", "expected HOST:PORT or [IPv6]:PORT, got 'host:-1'"),
    ("host:٣", "expected HOST:PORT or [IPv6]:PORT, got 'host:٣'"),
    ("host:65536", "port must be 0-65535, got 'host:65536'"),
    ("::1:80", "write an IPv6 address in brackets: [::1]:80"),
    ("::", "write an IPv6 address in brackets: [IPv6]:PORT"),
    ("[::1]", "expected HOST:PORT or [IPv6]:PORT, got '[::1]'"),
    ("[::1]80", "expected HOST:PORT or [IPv6]:PORT, got '[::1]80'"),
    ("[::1:80", "expected HOST:PORT or [IPv6]:PORT, got '[::1:80'"),
    ("[127.0.0.1]:80", "'127.0.0.1' is not an IPv6 address"),
    ("[nope]:80", "'nope' is not an IPv6 address"),
    ("a b:80", "'a b' is not a host name or IPv4 address"),
    ("http://host:80", "'http://host' is not a host name or IPv4 address"),
    ("user@host:80", "'user@host' is not a host name or IPv4 address"),
    ("999.1.1.1:80", "'999.1.1.1' is not a host name or IPv4 address"),
    ("-host:80", "'-host' is not a host name or IPv4 address"),
    (" 127.0.0.1:80", "is not a host name or IPv4 address"),
]


@pytest.mark.parametrize(("text", "expected"), GOOD)
def test_accepted_forms(text: str, expected: HostPort) -> None:
    assert parse_host_port(text, "--admin-address") == expected


@pytest.mark.parametrize(("text", "expected"), GOOD)
def test_an_address_prints_back_in_the_form_it_was_given(text: str, expected: HostPort) -> None:
    assert str(parse_host_port(text, "--x")) == text
    assert join_host_port(expected.host, 7) == str(expected.with_port(7))


@pytest.mark.parametrize(("text", "reason"), BAD)
def test_refusals_name_the_flag_and_quote_the_value(text: str, reason: str) -> None:
    with pytest.raises(AddressError) as refused:
        parse_host_port(text, "--admin-address")
    message = str(refused.value)
    assert message.startswith("--admin-address: ")
    assert reason in message


def test_a_dialled_address_needs_a_port() -> None:
    assert parse_host_port("[::1]:1", "--server", dial=True).port == 1
    with pytest.raises(AddressError, match=r"^--server: port must be 1-65535, got 'h:0'$"):
        parse_host_port("h:0", "--server", dial=True)


@pytest.mark.parametrize("path", sorted(ADDRESSES))
def test_every_serve_address_flag_refuses_in_the_same_words(path: str) -> None:
    flag = "--" + ADDRESSES[path].replace("_", "-")
    args = build_parser().parse_args(["serve", flag, "::1:80"])
    with pytest.raises(SettingsError) as refused:
        settings_from(args, {})
    assert str(refused.value) == (
        f"{flag}: expected HOST:PORT or [IPv6]:PORT, got '::1:80' "
        "(write an IPv6 address in brackets: [::1]:80)"
    )


@pytest.mark.parametrize("path", sorted(ADDRESSES))
def test_every_serve_address_flag_takes_bracketed_ipv6(path: str) -> None:
    flag = "--" + ADDRESSES[path].replace("_", "-")
    value = "[::1]:15099" if path == "mcp.sink_address" else "[::]:0"
    settings = settings_from(build_parser().parse_args(["serve", flag, value]), {})
    part, _, leaf = path.partition(".")
    assert getattr(getattr(settings, part), leaf) == value


def test_an_address_from_the_environment_is_named_by_its_variable() -> None:
    args = build_parser().parse_args(["serve"])
    with pytest.raises(SettingsError, match=r"^PILOTHOUSE_ADMIN_ADDRESS: expected HOST:PORT"):
        settings_from(args, {"PILOTHOUSE_ADMIN_ADDRESS": "localhost"})


def test_off_values_stay_off() -> None:
    args = build_parser().parse_args(["serve", "--xds-tls-address", "", "--ctrlz-address", "off"])
    settings = settings_from(args, {})
    assert settings.xds.tls_address == "" and settings.ctrlz.address == "off"

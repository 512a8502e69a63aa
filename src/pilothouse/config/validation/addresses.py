"""Network addresses in Istio config: IP addresses, CIDR blocks and Unix domain sockets."""

from __future__ import annotations

import ipaddress
import posixpath
import re

from pilothouse.config.validation.report import Report

UNIX_PREFIX = "unix://"


_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_IPV4 = re.compile(rf"{_OCTET}(?:\.{_OCTET}){{3}}")
"""Dotted-quad IPv4 as :mod:`ipaddress` accepts it (no leading zeros): a fast first test."""


def is_ip(value: str) -> bool:
    """An IPv4 or IPv6 address (no brackets, no port)."""
    if _IPV4.fullmatch(value) is not None:
        return True
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


def is_cidr(value: str) -> bool:
    """A CIDR block such as ``10.0.0.0/8`` or ``2001:db8::/32`` (host bits may be set)."""
    if value.count("/") != 1:
        return False
    try:
        ipaddress.ip_network(value, strict=False)
    except ValueError:
        return False
    return True


def check_ip(value: str, path: str, report: Report) -> None:
    if not is_ip(value):
        report.error(path, f"{value!r} is not a valid IP address")


def check_ip_or_cidr(value: str, path: str, report: Report) -> None:
    if "/" in value:
        if not is_cidr(value):
            report.error(path, f"{value!r} is not a valid CIDR block")
    elif not is_ip(value):
        report.error(path, f"{value!r} is not a valid IP address or CIDR block")


def unix_socket_problem(address: str) -> str | None:
    """What is wrong with a ``unix://`` address, or None. Abstract sockets start with ``@``."""
    socket_path = address.removeprefix(UNIX_PREFIX)
    if not socket_path:
        return "unix socket path must not be empty"
    if socket_path.startswith("@"):
        return None
    if not posixpath.isabs(socket_path) or socket_path.endswith("/"):
        return f"unix socket path {socket_path!r} is not an absolute path to a file"
    return None


def check_unix_socket(address: str, path: str, report: Report) -> None:
    problem = unix_socket_problem(address)
    if problem is not None:
        report.error(path, problem)


_LOOPBACK_OR_ANY = frozenset({"", "127.0.0.1", "0.0.0.0", "::1", "::"})


def check_default_endpoint(endpoint: str, path: str, report: Report) -> None:
    """``127.0.0.1:PORT``, ``0.0.0.0:PORT``, ``[::1]:PORT``, ``[::]:PORT``, ``:PORT`` or unix://."""
    if endpoint.startswith(UNIX_PREFIX):
        check_unix_socket(endpoint, path, report)
        return
    host, colon, port = endpoint.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not colon or host not in _LOOPBACK_OR_ANY:
        report.error(
            path,
            f"defaultEndpoint {endpoint!r} must be 127.0.0.1:<port>, 0.0.0.0:<port>, "
            "[::1]:<port>, [::]:<port> or unix://<path>",
        )
        return
    if not port.isdigit() or not 1 <= int(port) <= 65535:
        report.error(path, f"defaultEndpoint {endpoint!r}: port must be a number in 1..65535")

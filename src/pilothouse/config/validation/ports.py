"""Port numbers, port names and the application protocols Istio knows."""

from __future__ import annotations

from pilothouse.config.validation.hosts import is_dns_label
from pilothouse.config.validation.report import Report

HTTP_PROTOCOLS = frozenset({"HTTP", "HTTP2", "HTTP_PROXY", "GRPC", "GRPC-WEB"})
TLS_PROTOCOLS = frozenset({"HTTPS", "TLS"})
PROTOCOLS = HTTP_PROTOCOLS | TLS_PROTOCOLS | {"TCP", "UDP", "MONGO", "MYSQL", "REDIS"}
MAX_PORT = 65535


def parse_protocol(value: str) -> str | None:
    """The canonical (upper-case) protocol name, or None if Istio does not know it."""
    upper = value.upper()
    return upper if upper in PROTOCOLS else None


def is_http(protocol: str) -> bool:
    return protocol.upper() in HTTP_PROTOCOLS


def is_tls(protocol: str) -> bool:
    return protocol.upper() in TLS_PROTOCOLS


def port_number_ok(number: int) -> bool:
    return 1 <= number <= MAX_PORT


def port_name_ok(name: str) -> bool:
    """A present port name that is a DNS-1123 label (what ``required=True`` asks for)."""
    return bool(name) and is_dns_label(name)


def protocol_ok(protocol: str) -> bool:
    """Empty (detect it) or a protocol Istio knows, in any case."""
    return not protocol or protocol.upper() in PROTOCOLS


def check_port_number(number: int, path: str, report: Report) -> bool:
    if port_number_ok(number):
        return True
    report.error(path, f"port number {number} must be in 1..{MAX_PORT}")
    return False


def check_port_name(name: str, path: str, report: Report, *, required: bool) -> None:
    if not name:
        if required:
            report.error(path, "port name is required")
        return
    if not is_dns_label(name):
        report.error(path, f"port name {name!r} is not a DNS-1123 label")


def check_protocol(protocol: str, path: str, report: Report, *, required: bool) -> None:
    """An empty protocol means "detect it" (allowed unless ``required``); case is ignored."""
    if not protocol:
        if required:
            report.error(path, f"protocol is required (one of {', '.join(sorted(PROTOCOLS))})")
        return
    if parse_protocol(protocol) is None:
        report.error(path, f"unknown protocol {protocol!r} (known: {', '.join(sorted(PROTOCOLS))})")

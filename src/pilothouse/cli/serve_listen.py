"""Where ``serve`` listens: its address knobs parsed, and the names its pages answer to.

:func:`listen_address` parses one address knob with the one parser
(:mod:`pilothouse.addresses`); :func:`server_names` gathers what a request's ``Host``
may name on the admin port and ControlZ (:mod:`pilothouse.boundary.host_names`);
:func:`bind_problem` says why an address cannot be listened on in the system's words
(grpcio only says "Failed to bind", whatever the reason).
"""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Iterable

from pilothouse.addresses import AddressError, HostPort, parse_host_port
from pilothouse.boundary.host_names import ServerNames
from pilothouse.cli.serve_args import address_knob_name
from pilothouse.settings import Settings


def listen_address(value: str, path: str) -> HostPort:
    """The address knob at ``path`` (``admin.address``) parsed; SystemExit naming its flag
    when it is not an address (``settings_from`` has checked those given on the command
    line; this catches settings built in code)."""
    try:
        return parse_host_port(value, address_knob_name(path))
    except AddressError as problem:
        raise SystemExit(f"pilothouse: {problem}") from None


def server_names(settings: Settings, listening: Iterable[HostPort | None]) -> ServerNames:
    """The names a request's ``Host`` may carry: this host's, the hosts of the servers
    ``listening`` (None: off) and of ControlZ, and ``PILOTHOUSE_ADMIN_HOST_NAMES``."""
    hosts = [address.host for address in listening if address is not None]
    with contextlib.suppress(AddressError):  # off, or not an address: ControlZ says so
        hosts.append(parse_host_port(settings.ctrlz.address, "--ctrlz-address").host)
    return ServerNames.of_this_host(bound=hosts, extra=settings.admin.host_names)


def bind_problem(address: HostPort) -> str:
    """Why ``address`` cannot be bound now, as the system says it (``address already in
    use``, ``cannot assign requested address``), or "" when it can. A probe bind without
    ``SO_REUSEPORT``, closed at once."""
    family = socket.AF_INET6 if ":" in address.host else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.bind((address.host, address.port))
    except OSError as problem:
        text = os.strerror(problem.errno) if problem.errno else str(problem)
        return text[:1].lower() + text[1:]
    return ""

"""Which ``Host`` headers the validation webhook answers, and the check of each request.

The Kubernetes API server calls the webhook by the name in its configuration (a
Service's DNS name, ``istiod.istio-system.svc``), which is also a name of the webhook's
certificate. A request for any other host was not meant for this webhook (a
misrouted client, or a web page rebinding its own name to the webhook's address, as
the admin port guards against with :mod:`pilothouse.boundary.host_names`), so it is
answered ``421 Misdirected Request`` before its body is read; a request with no
``Host`` at all is malformed HTTP/1.1 and answered 400.

The webhook's names are the admin port's rules for this host (``localhost``, loopback,
the address the connection arrived at, the address the webhook binds, the machine's
host name), the DNS names and addresses of its certificate (wildcards left out), and
the names in ``PILOTHOUSE_WEBHOOK_HOST_NAMES`` (``*`` there turns the check off).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Final

from aiohttp import hdrs, web
from aiohttp.typedefs import Middleware
from cryptography import x509

from pilothouse.boundary.contain import ErrorRenderer
from pilothouse.boundary.host_names import Handler, ServerNames

SETTING: Final = "PILOTHOUSE_WEBHOOK_HOST_NAMES"


def certificate_names(cert_file: Path) -> tuple[str, ...]:
    """The DNS names and IP addresses of the first certificate in ``cert_file`` (PEM),
    wildcard names left out; OSError or ValueError when it cannot be read."""
    certificate = x509.load_pem_x509_certificates(cert_file.read_bytes())[0]
    try:
        names = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return ()
    dns = [name for name in names.get_values_for_type(x509.DNSName) if "*" not in name]
    addresses: list[ipaddress.IPv4Address | ipaddress.IPv6Address] = [
        address
        for address in names.get_values_for_type(x509.IPAddress)
        if isinstance(address, ipaddress.IPv4Address | ipaddress.IPv6Address)
    ]
    return (*dns, *(str(address) for address in addresses))


def webhook_names(
    bound_host: str, cert_file: Path | None, host_names: Iterable[str]
) -> ServerNames:
    """The names a request to the webhook bound at ``bound_host`` may carry."""
    from_certificate = certificate_names(cert_file) if cert_file is not None else ()
    return ServerNames.of_this_host(bound=[bound_host], extra=(*from_certificate, *host_names))


def host_check(names: Callable[[], ServerNames], render: ErrorRenderer) -> Middleware:
    """400 without a ``Host``, 421 when it is not one of ``names()``, else the handler."""

    @web.middleware
    async def check(request: web.Request, handler: Handler) -> web.StreamResponse:
        header = request.headers.get(hdrs.HOST, "")
        if not header.strip():
            return render(400, "a Host header is required")
        if names().refusal(request) is not None:
            return render(
                421,
                f"Host {header!r} is not a name of this webhook; use one of its "
                f"certificate's names, localhost or its own address (add the name to "
                f"{SETTING} to allow it)",
            )
        return await handler(request)

    return check

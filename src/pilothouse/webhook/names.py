"""Which ``Host`` names the validation webhook answers to.

The Kubernetes API server calls the webhook by the name in its configuration (a
Service's DNS name, ``istiod.istio-system.svc``), which is also a name of the webhook's
certificate. A request for any other host is answered 421, one without a ``Host`` 400
(:mod:`pilothouse.boundary.host_check`, the admin port's check too).

The webhook's names are the admin port's rules for this host (``localhost``, loopback,
the address the connection arrived at, the address the webhook binds, the machine's
host name), the DNS names and addresses of its certificate (wildcards left out), and
the names in ``PILOTHOUSE_WEBHOOK_HOST_NAMES`` (``*`` there turns the check off).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from pathlib import Path
from typing import Final

from cryptography import x509

from pilothouse.boundary.host_names import ServerNames

SETTING: Final = "PILOTHOUSE_WEBHOOK_HOST_NAMES"
ADVICE: Final = (
    "use one of its certificate's names, localhost or its own address (add the name to "
    f"{SETTING} to allow it)"
)
"""How to reach the webhook by name, said in its 421 answers."""


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

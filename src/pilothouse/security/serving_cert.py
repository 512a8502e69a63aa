"""The TLS port's own certificate: issued by the CA, kept fresh in one SSL context.

The certificate names the configured DNS names and IP addresses (by default
``istiod.istio-system.svc``, ``localhost``, ``127.0.0.1`` and ``::1``, so that local
clients verify it), has a fresh EC P-256 key (fast to make, unlike RSA), and lives
:data:`LIFETIME`; :meth:`ServingCertificate.run` renews it when half of that has passed,
and a change of the CA's trust bundle (a root rotation) renews it at once and adds the
new roots to those client certificates are verified against.

The context is a TLS server context: TLS 1.2 at least, ALPN ``h2`` (gRPC), a client
certificate asked for and verified when sent (``CERT_OPTIONAL``), never required.
"""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import logging
import ssl
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from pilothouse.security.ca import CertificateAuthority
from pilothouse.security.pem_files import write_private, write_public

log = logging.getLogger("pilothouse.ca")

LIFETIME: Final = datetime.timedelta(hours=24)


def subject_names(names: Sequence[str]) -> x509.SubjectAlternativeName:
    """DNS names, and IP addresses for the entries that parse as one."""
    general: list[x509.GeneralName] = []
    for name in names:
        try:
            general.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            general.append(x509.DNSName(name))
    return x509.SubjectAlternativeName(general)


class ServingCertificate:
    """The port's certificate and the server SSL context that presents it."""

    def __init__(self, ca: CertificateAuthority, names: Sequence[str]) -> None:
        if not names:
            raise ValueError("the TLS port's certificate needs at least one name")
        self._ca = ca
        self._names = subject_names(names)
        self._context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self._context.minimum_version = ssl.TLSVersion.TLSv1_2
        self._context.verify_mode = ssl.CERT_OPTIONAL
        self._context.set_alpn_protocols(["h2"])
        self._not_after = datetime.datetime.min.replace(tzinfo=datetime.UTC)
        ca.on_bundle_change(self._bundle_changed)

    def start(self) -> None:
        """Trust the CA's roots and issue the first certificate (before listening)."""
        self.trust()
        self.renew()

    @property
    def context(self) -> ssl.SSLContext:
        return self._context

    @property
    def not_after(self) -> datetime.datetime:
        return self._not_after

    def trust(self) -> None:
        """Verify client certificates against every root of the CA's bundle."""
        self._context.load_verify_locations(cadata="".join(self._ca.trust_bundle()))

    def renew(self) -> None:
        """A new key and certificate; handshakes from now on present them."""
        key = ec.generate_private_key(ec.SECP256R1())
        issued = self._ca.issue(key.public_key(), self._names, LIFETIME)
        presented = issued.chain[:-1] if len(issued.chain) > 1 else issued.chain
        key_pem = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        # ssl loads certificates only from files: a private directory, gone at once.
        with tempfile.TemporaryDirectory(prefix="pilothouse-tls-") as scratch:
            cert_file, key_file = Path(scratch) / "cert.pem", Path(scratch) / "key.pem"
            write_public(cert_file, "".join(presented).encode())
            write_private(key_file, key_pem)
            self._context.load_cert_chain(cert_file, key_file)
        self._not_after = issued.not_after
        log.info("TLS port certificate issued", extra={"expires": str(issued.not_after)})

    async def run(self) -> None:
        """Renew at half the lifetime, until cancelled."""
        while True:
            left = self._not_after - datetime.datetime.now(datetime.UTC)
            await asyncio.sleep(max(1.0, left.total_seconds() - LIFETIME.total_seconds() / 2))
            try:
                self.renew()
            except Exception:  # retried a minute later; the old certificate still serves
                log.exception("TLS port certificate renewal failed")
                await asyncio.sleep(60)

    def _bundle_changed(self) -> None:
        self.trust()
        self.renew()

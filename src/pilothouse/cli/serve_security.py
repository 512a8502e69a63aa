"""How ``serve`` wires the security stage: the CA, the TLS xDS port and SDS.

The CA is opened only with the TLS port on (without it no caller has an identity, so
nothing may be signed); with ``--workers`` the parent creates its root first so that
workers only load it. SDS serves the CA's certificates and roots to authenticated
proxies, and the credentials of ``--secrets DIR``.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

from pilothouse.config.mesh import MeshSettings
from pilothouse.security.authn import Authenticator
from pilothouse.security.ca import CertificateAuthority
from pilothouse.security.ca_dir import CaDirError
from pilothouse.security.jwt_authn import IssuerSetupError, JwtAuthenticator, parse_issuers
from pilothouse.security.secrets_directory import SecretsDirectory
from pilothouse.settings import Settings
from pilothouse.xds.server.discovery import DiscoveryServer
from pilothouse.xds.server.secret_delivery import SecretDelivery
from pilothouse.xds.server.tls_port import TlsPort

log = logging.getLogger("pilothouse.serve")


def secret_delivery(
    settings: Settings, discovery: DiscoveryServer, authority: CertificateAuthority | None
) -> SecretDelivery:
    """SDS: ``default`` and ``ROOTCA`` from the CA (there with the TLS port, where proxies
    authenticate), ``kubernetes://`` names from the secrets directory (when given)."""
    credentials = None
    if settings.sds.secrets_dir:
        credentials = SecretsDirectory(
            Path(settings.sds.secrets_dir),
            debounce=settings.file_debounce,
            poll=settings.file_root_poll,
        )
        log.info("serving credentials over SDS", extra={"dir": settings.sds.secrets_dir})
    if authority is None and credentials is not None:
        log.warning(
            "the TLS xDS port is off: no proxy can authenticate, so no credential of %s "
            "will be served",
            settings.sds.secrets_dir,
        )
    return SecretDelivery(
        discovery,
        settings.sds,
        authority=authority,
        credentials=credentials,
    )


async def open_ca(settings: Settings, mesh: MeshSettings) -> CertificateAuthority | None:
    """The CA of ``settings.ca.dir`` (made there on first start, in a thread: RSA key
    generation is slow), or None when the TLS port is off: without it no caller has an
    identity, so nothing may be signed."""
    if not settings.xds.tls_address:
        return None
    try:
        return await asyncio.to_thread(CertificateAuthority.open, settings.ca, mesh.trust_domain)
    except (CaDirError, OSError) as problem:
        raise SystemExit(f"pilothouse: CA: {problem}") from None


def create_ca(settings: Settings, mesh: MeshSettings) -> None:
    """Before any worker starts: create the CA directory's self-signed root if it is not
    there yet, so that workers only load it and never race to create it."""
    if not settings.xds.tls_address:
        return
    try:
        CertificateAuthority.open(settings.ca, mesh.trust_domain)
    except (CaDirError, OSError) as problem:
        raise SystemExit(f"pilothouse: CA: {problem}") from None


def open_tls_port(
    settings: Settings,
    mesh: MeshSettings,
    discovery: DiscoveryServer,
    ca: CertificateAuthority | None,
    roles: Any,
) -> TlsPort | None:
    """The TLS port with its authenticators, or None when it is off."""
    if ca is None:
        return None
    jwt: JwtAuthenticator | None = None
    if settings.auth.jwt_issuers:
        try:
            jwt = JwtAuthenticator.from_files(
                parse_issuers(settings.auth.jwt_issuers),
                settings.auth.audiences,
                mesh.trust_domain,
            )
        except IssuerSetupError as problem:
            raise SystemExit(f"pilothouse: {problem}") from None
    return TlsPort(
        settings.xds,
        discovery,
        ca,
        Authenticator(jwt),
        root_namespace=mesh.root_namespace,
        mcp=roles,
    )

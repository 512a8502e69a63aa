"""How ``serve`` wires the security stage: the CA, the TLS xDS port and SDS.

The CA is opened only with the TLS port on (without it no caller has an identity, so
nothing may be signed). Its self-signed root is shared through the first ``etcd://`` or
``k8s://`` config source when there is one (:mod:`pilothouse.security.ca_store`), else
kept in the CA directory. A store that cannot be reached at start is asked again with
backoff (:class:`RootWait`): the other ports are open meanwhile and ``/ready`` names the
reason; the TLS port opens once the root is read. With ``--workers`` and no such store
the parent creates the directory's root first so that workers only load it. SDS serves
the CA's certificates and roots to authenticated proxies, and the credentials of ``--secrets DIR``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pilothouse.addresses import HostPort
from pilothouse.backoff import Backoff
from pilothouse.cli.config_sources import rejoin_etcd_endpoints
from pilothouse.cli.serve_listeners import TlsListener
from pilothouse.config.mesh import MeshSettings
from pilothouse.security.authn import Authenticator
from pilothouse.security.ca import CertificateAuthority
from pilothouse.security.ca_dir import CaDirError
from pilothouse.security.ca_store import CaStoreError, CaStoreUnavailable, RootStore
from pilothouse.security.ca_store_etcd import EtcdRootStore
from pilothouse.security.ca_store_kube import KubeRootStore
from pilothouse.security.jwt_authn import IssuerSetupError, JwtAuthenticator, parse_issuers
from pilothouse.security.local_issuer import LocalIssuerKeys
from pilothouse.security.secrets_directory import SecretsDirectory
from pilothouse.settings import Settings
from pilothouse.sources.addresses import AddressError, Scheme, parse_address
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


class RootWait:
    """The CA, opened once its root can be read: from the shared store (asked again with
    backoff while it cannot be reached, so that ``serve`` keeps its other ports open and
    ``/ready`` says why it is not ready), or from the CA directory (made on first start;
    RSA key generation runs in a thread). None when the TLS port is off: without it no
    caller has an identity, so nothing may be signed. A root that is malformed or
    disagrees with the CA directory stops ``serve`` with the reason."""

    def __init__(
        self, settings: Settings, mesh: MeshSettings, mesh_sources: Sequence[str] = ()
    ) -> None:
        self._settings = settings
        self._mesh = mesh
        self._mesh_sources = tuple(mesh_sources)
        self._waiting = bool(settings.xds.tls_address)
        self._problem = ""
        self.backoff = Backoff(initial=0.5, maximum=10.0)

    def pending(self) -> str | None:
        """A readiness check: why the CA is not open yet, or None."""
        if not self._waiting:
            return None
        return f"CA root: {self._problem or 'not read yet'}"

    async def open(self, stop: asyncio.Event) -> CertificateAuthority | None:
        """The CA, or None (TLS port off, or ``stop`` set while waiting for the store)."""
        if not self._waiting:
            return None
        settings, mesh = self._settings, self._mesh
        store = root_store(settings, mesh, self._mesh_sources)
        try:
            if store is None:
                ca = await asyncio.to_thread(
                    CertificateAuthority.open, settings.ca, mesh.trust_domain
                )
            else:
                try:
                    found = await self._from_store(store, stop)
                finally:
                    await store.close()
                if found is None:
                    return None
                ca = found
        except (CaDirError, CaStoreError, OSError) as problem:
            raise SystemExit(f"pilothouse: CA: {problem}") from None
        self._waiting = False
        return ca

    async def _from_store(
        self, store: RootStore, stop: asyncio.Event
    ) -> CertificateAuthority | None:
        settings, mesh = self._settings, self._mesh
        rng = random.Random()
        failures = 0
        while True:
            try:
                return await CertificateAuthority.open_shared(settings.ca, store, mesh.trust_domain)
            except CaStoreUnavailable as problem:
                failures += 1
                if str(problem) != self._problem:  # once per distinct reason
                    log.warning(
                        "the CA's root cannot be read yet (%s): the TLS port opens once it "
                        "can",
                        problem,
                        extra={"failures": failures},
                    )
                self._problem = str(problem)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.backoff.delay(failures, rng))
            if stop.is_set():
                return None


def root_store(
    settings: Settings, mesh: MeshSettings, mesh_sources: Sequence[str] = ()
) -> RootStore | None:
    """Where the self-signed root is shared: the first ``etcd://`` or ``k8s://`` config
    source, from the settings then the mesh config's ``configSources`` (the root
    namespace's ``istio-ca-secret`` for ``k8s://``), or None."""
    for address in [*rejoin_etcd_endpoints(settings.config_sources), *mesh_sources]:
        try:
            parsed = parse_address(address)
        except AddressError:
            continue  # reported by the config sources
        if parsed.scheme is Scheme.ETCD:
            return EtcdRootStore(parsed.endpoints, parsed.path, settings.etcd)
        if parsed.scheme is Scheme.K8S:
            return KubeRootStore(settings.kube.kubeconfig or None, mesh.root_namespace)
    return None


def create_ca(settings: Settings, mesh: MeshSettings, mesh_sources: Sequence[str] = ()) -> None:
    """Before any worker starts: create the CA directory's self-signed root if it is not
    there yet, so that workers only load it. With a shared store the workers read it
    from there (created once, whoever is first), and the parent dials nothing: it
    forks after this."""
    if not settings.xds.tls_address or root_store(settings, mesh, mesh_sources) is not None:
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
    local = local_issuer(settings)
    if settings.auth.jwt_issuers or local is not None:
        try:
            jwt = JwtAuthenticator.from_files(
                parse_issuers(settings.auth.jwt_issuers),
                settings.auth.audiences,
                mesh.trust_domain,
                local,
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


def local_issuer(settings: Settings) -> LocalIssuerKeys | None:
    """The local token issuer the TLS port trusts (``auth.local_issuer_dir``), said in
    the log with what trusting it means; None when the setting is empty."""
    if not settings.auth.local_issuer_dir:
        return None
    keys = LocalIssuerKeys(Path(settings.auth.local_issuer_dir))
    log.info(
        "trusting the local token issuer: %s (whoever can read its key.pem can mint any "
        "identity; PILOTHOUSE_AUTH_LOCAL_ISSUER_DIR= or --local-issuer-dir '' turns this "
        "off)",
        keys.describe(),
    )
    return keys


@dataclass(frozen=True, slots=True)
class Security:
    """What ``serve`` wired of the security stage."""

    secrets: SecretDelivery
    tls: TlsPort | None
    """The TLS port (None: off)."""
    listener: TlsListener | None
    """The TLS port's listener, not started yet: ``serve`` starts it with its others."""


def wire_security(
    settings: Settings,
    mesh: MeshSettings,
    discovery: DiscoveryServer,
    roles: Any,
    authority: CertificateAuthority | None,
    tls_address: HostPort | None,
    *,
    shared: bool,
) -> Security:
    """SDS wired into ``discovery`` (before it serves a stream: gateways get the secrets
    directory's credentials at once) and the TLS port built, when it is on."""
    tls = open_tls_port(settings, mesh, discovery, authority, roles)
    secrets = secret_delivery(settings, discovery, authority)
    if secrets.credentials is not None:
        secrets.credentials.load()
    if tls is None or tls_address is None:
        return Security(secrets, None, None)
    listener = TlsListener(
        tls, tls_address, settings.xds.tls_address, settings.ca.dir, shared=shared
    )
    return Security(secrets, tls, listener)

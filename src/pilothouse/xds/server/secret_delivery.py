"""SDS wired into a discovery server: the generator, and secret changes as pushes.

:class:`SecretDelivery` registers the SDS generator
(:mod:`pilothouse.xds.generators.sds`) and turns every change of what it serves into
a push request through the server's debouncer (the push pipeline's machinery, never a
full push): a PushRequest naming the changed secrets (:mod:`pilothouse.push.secrets`)
is planned without a new PushContext, and only the connections that hold one of them
are pushed, SDS only:

- a workload certificate issued or rotated → ``default`` to the connections
  authenticated as that identity (only with ``server_keys``: keys made by the server,
  for proxies without a node agent; off by default, the agent makes keys on the node);
- the Authority's trust bundle changed → ``ROOTCA`` to every connection holding it;
- a credential's files replaced → ``kubernetes://<name>`` (or ``-cacert``) to the
  gateways holding it.

Denials and failed issues are counted in the server's stats
(``pilot_sds_certificate_errors_total``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable

from pilothouse.config.model import ConfigKey
from pilothouse.push.secrets import secret_key, secrets_request, workload_certificate_key
from pilothouse.security.authority import Authority
from pilothouse.security.identity import SpiffeId
from pilothouse.security.secrets_directory import SecretsDirectory
from pilothouse.security.workload_certificates import WorkloadCertificates
from pilothouse.security.workload_keys import KeyAlgorithm
from pilothouse.settings import SdsSettings
from pilothouse.xds.builders.upstream_tls import SDS_ROOT_SECRET
from pilothouse.xds.generators.sds import SecretGenerator, credential_sds_name
from pilothouse.xds.server.discovery import DiscoveryServer


class SecretDelivery:
    """The SDS side of one discovery server: what it serves and when it pushes it."""

    def __init__(
        self,
        discovery: DiscoveryServer,
        settings: SdsSettings,
        *,
        authority: Authority | None = None,
        credentials: SecretsDirectory | None = None,
    ) -> None:
        """``authority`` (the CA) serves ``ROOTCA``, and ``default`` (keys made here)
        only with ``settings.server_keys``; ``credentials`` (the secrets directory) the
        ``kubernetes://`` names. Without either, nothing."""
        self._discovery = discovery
        self.credentials = credentials
        self.certificates: WorkloadCertificates | None = None
        if authority is not None and settings.server_keys:
            self.certificates = WorkloadCertificates(
                authority,
                ttl=settings.workload_cert_ttl,
                algorithm=KeyAlgorithm(settings.workload_key),
                grace_ratio=settings.grace_period_ratio,
                jitter=settings.grace_period_jitter,
                in_use=self._in_use,
            )
            self.certificates.on_issued(self._certificate_issued)
            self.certificates.on_error(self._count_error)
        if authority is not None:
            authority.on_bundle_change(self._bundle_changed)
        if credentials is not None:
            credentials.on_change(self._credentials_changed)
        self.generator = SecretGenerator(
            authority=authority,
            certificates=self.certificates,
            credentials=credentials,
            credentials_namespace=settings.credentials_namespace,
            on_denied=self._count_error,
        )
        discovery.register_generator(self.generator)

    async def run(self) -> None:
        """Issue certificates and follow the secrets directory until :meth:`close`."""
        async with asyncio.TaskGroup() as tasks:
            if self.certificates is not None:
                tasks.create_task(self.certificates.run())
            if self.credentials is not None:
                tasks.create_task(self.credentials.run())

    def close(self) -> None:
        if self.certificates is not None:
            self.certificates.close()
        if self.credentials is not None:
            self.credentials.close()

    # -- changes into pushes ----------------------------------------------------------

    def _push(self, keys: Iterable[ConfigKey]) -> None:
        self._discovery.request_push(secrets_request(keys, time.monotonic()))

    def _certificate_issued(self, identity: SpiffeId) -> None:
        self._push([workload_certificate_key(identity)])

    def _bundle_changed(self) -> None:
        self.generator.bundle_changed()
        self._push([secret_key(SDS_ROOT_SECRET)])

    def _credentials_changed(self, parts: frozenset[str]) -> None:
        self._push(secret_key(credential_sds_name(part)) for part in sorted(parts))

    def _in_use(self, identity: SpiffeId) -> bool:
        """Whether a connected proxy was authenticated as ``identity``."""
        for connection in self._discovery.connections.values():
            caller = connection.proxy.caller
            if caller is not None and caller.primary == identity:
                return True
        return False

    def _count_error(self) -> None:
        self._discovery.stats.sds_certificate_errors += 1

"""The agent's workload certificates: made here, signed remotely, rotated, encoded.

:class:`WorkloadIdentity` holds one certificate per identity the agent serves (one in
sidecar mode, several in node mode). Keys and CSRs are made by
:class:`~pilothouse.security.workload_certificates.WorkloadCertificates` on this node and
signed by :class:`~pilothouse.agent.remote_authority.RemoteAuthority`; rotation follows
istio-agent's grace ratio (0.5 ± 0.01 of the lifetime), a failed CSR is tried again
from 100 ms up to every 5 s. A rotation authenticates with the certificate being
replaced while it is valid, the first issue (and one after an outage that outlasted
the certificate) with the token.

:meth:`secret` encodes the SDS ``Secret`` for ``default`` (key and chain) and ``ROOTCA``
(the CA's root) as ``Any`` bytes; listeners hear which identity changed (None: the root).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from typing import Final

from pilothouse.agent.remote_authority import ClientCertificate, RemoteAuthority
from pilothouse.backoff import Backoff
from pilothouse.security.identity import SpiffeId
from pilothouse.security.workload_certificates import WorkloadCertificate, WorkloadCertificates
from pilothouse.security.workload_keys import KeyAlgorithm
from pilothouse.xds.builders.encode import to_any_bytes
from pilothouse.xds.builders.secret import build_key_pair, build_validation_context

log = logging.getLogger("pilothouse.agent.identity")

WORKLOAD_SECRET: Final = "default"
ROOT_SECRET: Final = "ROOTCA"
EXPIRY_MARGIN: Final = timedelta(seconds=1)
"""A certificate this close to expiry no longer authenticates a call."""
AGENT_RETRY: Final = Backoff(0.1, 5.0)
"""How a failed CSR is tried again: from 100 ms up to 5 s (a local agent's certificate
must not expire while it waits for a control plane that came back)."""

Listener = Callable[[SpiffeId | None], None]


class WorkloadIdentity:
    """Certificates of the identities this agent serves, with their SDS encodings."""

    def __init__(
        self,
        authority: RemoteAuthority,
        identities: Iterable[SpiffeId],
        *,
        ttl: float = 86400.0,
        algorithm: KeyAlgorithm = KeyAlgorithm.RSA,
        grace_ratio: float = 0.5,
        jitter: float = 0.01,
    ) -> None:
        self.identities = tuple(identities)
        if not self.identities:
            raise ValueError("the agent serves at least one identity")
        self.authority = authority
        self.certificates = WorkloadCertificates(
            authority,
            ttl=ttl,
            algorithm=algorithm,
            grace_ratio=grace_ratio,
            jitter=jitter,
            retry=AGENT_RETRY,
        )
        self._listeners: list[Listener] = []
        self._issued: dict[SpiffeId, asyncio.Event] = {i: asyncio.Event() for i in self.identities}
        self.certificates.on_issued(self._certificate_issued)
        authority.on_bundle_change(self._bundle_changed)

    @property
    def primary(self) -> SpiffeId:
        return self.identities[0]

    def on_change(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener`` on every change; the answer stops it."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def client_certificate(self, identity: SpiffeId) -> ClientCertificate | None:
        """The identity's current certificate and key, to authenticate with."""
        event = self._issued.get(identity)
        if event is None or not event.is_set():  # read from the signing thread: no side effect
            return None
        held = self.certificates.current(identity)
        if held is None or held.not_after <= datetime.now(UTC) + EXPIRY_MARGIN:
            return None  # expired (an outage outlasted it): the token must prove it again
        return ClientCertificate("".join(_lines(held.chain)), held.private_key)

    def current(self, identity: SpiffeId) -> WorkloadCertificate | None:
        if identity not in self._issued:
            return None
        return self.certificates.current(identity)

    async def issued(self, identity: SpiffeId) -> WorkloadCertificate:
        """The identity's certificate, once it is first issued."""
        await self._issued[identity].wait()
        found = self.certificates.current(identity)
        assert found is not None
        return found

    def secret(self, identity: SpiffeId, name: str) -> bytes | None:
        """``name``'s Secret as Any bytes for ``identity``; None if not (yet) held."""
        if name == WORKLOAD_SECRET:
            held = self.current(identity)
            if held is None:
                return None
            return to_any_bytes(build_key_pair(name, held.chain, held.private_key))
        if name == ROOT_SECRET:
            roots = self.authority.trust_bundle()
            if not roots:
                self.current(identity)  # the root arrives with the first certificate
                return None
            return to_any_bytes(build_validation_context(name, roots))
        return None

    async def run(self) -> None:
        """Issue and rotate until :meth:`close`."""
        self.authority.bind(asyncio.get_running_loop())
        for identity in self.identities:
            self.certificates.current(identity)
        await self.certificates.run()

    def close(self) -> None:
        self.certificates.close()

    def _certificate_issued(self, identity: SpiffeId) -> None:
        held = self.certificates.current(identity)
        if held is not None:
            log.info(
                "workload certificate issued",
                extra={"identity": str(identity), "expires": str(held.not_after)},
            )
        event = self._issued.get(identity)
        if event is not None:
            event.set()
        self._tell(identity)

    def _bundle_changed(self) -> None:
        self._tell(None)

    def _tell(self, identity: SpiffeId | None) -> None:
        for listener in list(self._listeners):
            try:
                listener(identity)
            except Exception:  # a listener's fault must not stop issuing
                log.exception("a listener of certificate changes failed")


def _lines(chain: tuple[str, ...]) -> list[str]:
    return [c if c.endswith("\n") else c + "\n" for c in chain]

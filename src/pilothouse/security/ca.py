"""The built-in CA: signs workload keys for authenticated identities, rotates its root.

:class:`CertificateAuthority` implements :class:`~pilothouse.security.authority.Authority`.
It is opened from the CA directory (:mod:`pilothouse.security.ca_dir`): a plugged-in CA
is used as given; otherwise a self-signed root is created there on first start and
reused after. With a shared config store (etcd, Kubernetes) the self-signed root comes
from the store instead (:meth:`CertificateAuthority.open_shared`,
:mod:`pilothouse.security.ca_store`), so that every replica signs with one root.

Root rotation (self-signed only; a plugged-in CA is rotated by whoever plugs it in).
Every ``root_check_interval`` (istiod: 1 h) :meth:`CertificateAuthority.check_rotation`
looks at the signing root. When less than ``root_rotation_ratio`` (20 %) of its life is
left, a new root is generated, stored beside the current one and added to the trust
bundle, and the ``on_bundle_change`` callbacks run, so that SDS can push the new root to
every workload; the old root keeps signing. Once ``root_distribution_delay`` (1 h by
default) has passed, the new root signs and the old one stays in the bundle until it
expires: certificates signed by either verify throughout.

Construction and :meth:`open` do file I/O and perhaps RSA key generation: call ``open``
in a thread (``asyncio.to_thread``). :meth:`sign` is CPU work, also for a thread; it
reads the signing material once, so a rotation happening meanwhile is harmless.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
from collections.abc import Callable
from pathlib import Path

from cryptography import x509

from pilothouse.security import ca_dir
from pilothouse.security.authority import IssuedCertificate, SigningRefused
from pilothouse.security.ca_store import RootStore, fingerprint, open_shared_root
from pilothouse.security.csr import WorkloadKey, csr_public_key
from pilothouse.security.identity import SpiffeId
from pilothouse.security.root import BACKDATE, SigningMaterial, new_root, pem
from pilothouse.security.signer import FileSigner
from pilothouse.security.workload_cert import issue, spiffe_names
from pilothouse.settings import CaSettings

log = logging.getLogger("pilothouse.ca")

Clock = Callable[[], datetime.datetime]


def utc_now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


class CertificateAuthority:
    """The CA as an :class:`~pilothouse.security.authority.Authority`."""

    def __init__(
        self,
        settings: CaSettings,
        current: SigningMaterial,
        *,
        directory: Path | None = None,
        pending: SigningMaterial | None = None,
        previous: tuple[x509.Certificate, ...] = (),
        extra_roots: tuple[x509.Certificate, ...] = (),
        organisation: str = "cluster.local",
        clock: Clock = utc_now,
    ) -> None:
        """``directory`` is where a self-signed CA keeps its roots (None: a plugged-in
        CA, or one kept in memory, which never rotates)."""
        self._settings = settings
        self._current = current
        self._directory = directory
        self._pending = pending
        self._previous = previous
        self._extra_roots = extra_roots
        self._organisation = organisation
        self._clock = clock
        self._callbacks: list[Callable[[], None]] = []
        self._bundle = self._make_bundle()

    @classmethod
    def open(
        cls, settings: CaSettings, trust_domain: str, *, clock: Clock = utc_now
    ) -> CertificateAuthority:
        """The CA of ``settings.dir`` (plugged-in or self-signed, created if need be).
        Raises :class:`~pilothouse.security.ca_dir.CaDirError`. Slow: use a thread."""
        directory = Path(settings.dir)
        if ca_dir.is_plugged_in(directory):
            material, roots = ca_dir.load_plugged_in(directory)
            log.info("CA: plugged-in certificate", extra={"dir": str(directory)})
            return cls(settings, material, extra_roots=roots[1:], clock=clock)
        ttl = datetime.timedelta(seconds=settings.root_cert_ttl)
        state = ca_dir.load_or_create(directory, trust_domain, ttl, clock())
        ca = cls(
            settings,
            state.current,
            directory=directory,
            pending=state.pending,
            previous=state.previous,
            organisation=trust_domain,
            clock=clock,
        )
        ca_dir.write_bundle(directory, ca._bundle)
        log.info(
            "CA: self-signed root %s",
            "created" if state.created else "loaded",
            extra={"dir": str(directory), "expires": f"{state.current.root.not_valid_after_utc}"},
        )
        return ca

    @classmethod
    async def open_shared(
        cls,
        settings: CaSettings,
        store: RootStore,
        trust_domain: str,
        *,
        clock: Clock = utc_now,
    ) -> CertificateAuthority:
        """The CA of a root shared through ``store`` (a plugged-in CA directory still
        wins: :meth:`open`). Raises :class:`~pilothouse.security.ca_store.CaStoreError`
        or :class:`~pilothouse.security.ca_dir.CaDirError`. Runs its slow parts in
        threads. The root does not rotate (``directory`` stays None)."""
        directory = Path(settings.dir)
        if ca_dir.is_plugged_in(directory):
            log.info(
                "CA: the plugged-in CA directory is used; %s is not consulted",
                store.where,
                extra={"dir": str(directory)},
            )
            return await asyncio.to_thread(cls.open, settings, trust_domain, clock=clock)
        ttl = datetime.timedelta(seconds=settings.root_cert_ttl)
        shared = await open_shared_root(store, directory, trust_domain, ttl, clock())
        log.info(
            "CA: self-signed root %s, shared through %s",
            shared.outcome,
            store.where,
            extra={
                "root": fingerprint(shared.material.root),
                "expires": f"{shared.material.root.not_valid_after_utc}",
            },
        )
        return cls(settings, shared.material, organisation=trust_domain, clock=clock)

    # -- Authority

    def trust_bundle(self) -> tuple[str, ...]:
        return tuple(pem(cert) for cert in self._bundle)

    def sign(self, csr_pem: str, identity: SpiffeId, ttl_seconds: int) -> IssuedCertificate:
        key = csr_public_key(csr_pem)
        return self.issue(key, spiffe_names(identity), self.lifetime(ttl_seconds))

    def on_bundle_change(self, callback: Callable[[], None]) -> None:
        self._callbacks.append(callback)

    # -- for the TLS port, metrics and tests

    def lifetime(self, ttl_seconds: float) -> datetime.timedelta:
        """The lifetime a request for ``ttl_seconds`` gets; SigningRefused above the max."""
        if ttl_seconds <= 0:
            return datetime.timedelta(seconds=self._settings.workload_cert_ttl)
        if ttl_seconds > self._settings.max_workload_cert_ttl:
            raise SigningRefused(
                f"requested lifetime {ttl_seconds:g}s is above the maximum "
                f"{self._settings.max_workload_cert_ttl:g}s"
            )
        return datetime.timedelta(seconds=ttl_seconds)

    def issue(
        self, key: WorkloadKey, names: x509.SubjectAlternativeName, lifetime: datetime.timedelta
    ) -> IssuedCertificate:
        """Sign ``key`` for ``names`` with the current signing material."""
        return issue(self._current, key, names, lifetime, self._clock())

    @property
    def signing_root(self) -> x509.Certificate:
        return self._current.root

    @property
    def roots(self) -> tuple[x509.Certificate, ...]:
        return self._bundle

    def root_expiry(self) -> float:
        """When the signing root expires (Unix seconds)."""
        return self._current.root.not_valid_after_utc.timestamp()

    def chain_expiry(self) -> float:
        """When the first certificate of the signing chain expires (Unix seconds)."""
        chain = (self._current.ca_cert, *self._current.above)
        return min(cert.not_valid_after_utc.timestamp() for cert in chain)

    # -- rotation

    async def run(self) -> None:
        """Check the root every ``root_check_interval`` until cancelled."""
        while True:
            await asyncio.sleep(self._settings.root_check_interval)
            try:
                await self.check_rotation()
            except Exception:  # a failed check is retried at the next one
                log.exception("CA: root rotation check failed")

    async def check_rotation(self) -> bool:
        """Start or finish a root rotation if it is due; True if anything changed.
        Key generation and file writes run in a thread; callbacks on the loop."""
        if self._directory is None:
            return False
        now = self._clock()
        changed = False
        if self._pending is None and self._due(now):
            self._pending = await asyncio.to_thread(self._new_pending, now)
            log.info("CA: new root trusted; it signs after the distribution delay")
            changed = True
        pending = self._pending
        if pending is not None and now >= self._switch_time(pending):
            previous = tuple(
                root
                for root in (self._current.root, *self._previous)
                if root.not_valid_after_utc > now
            )
            await asyncio.to_thread(ca_dir.promote_pending, self._directory, previous)
            self._current, self._pending, self._previous = pending, None, previous
            log.info("CA: the new root signs now")
            changed = True
        if changed:
            self._bundle = self._make_bundle()
            await asyncio.to_thread(ca_dir.write_bundle, self._directory, self._bundle)
            for callback in list(self._callbacks):
                callback()
        return changed

    def _due(self, now: datetime.datetime) -> bool:
        root = self._current.root
        life = root.not_valid_after_utc - root.not_valid_before_utc
        return root.not_valid_after_utc - now < life * self._settings.root_rotation_ratio

    def _switch_time(self, pending: SigningMaterial) -> datetime.datetime:
        made = pending.ca_cert.not_valid_before_utc + BACKDATE
        return made + datetime.timedelta(seconds=self._settings.root_distribution_delay)

    def _new_pending(self, now: datetime.datetime) -> SigningMaterial:
        assert self._directory is not None
        signer = FileSigner.generate()
        ttl = datetime.timedelta(seconds=self._settings.root_cert_ttl)
        material = SigningMaterial(new_root(signer, self._organisation, ttl, now), signer, ())
        return ca_dir.store_pending(self._directory, material, signer)

    def _make_bundle(self) -> tuple[x509.Certificate, ...]:
        ordered = [self._current.root]
        if self._pending is not None:
            ordered.append(self._pending.root)
        ordered.extend(self._previous)
        ordered.extend(self._extra_roots)
        unique: list[x509.Certificate] = []
        for cert in ordered:
            if cert not in unique:
                unique.append(cert)
        return tuple(unique)

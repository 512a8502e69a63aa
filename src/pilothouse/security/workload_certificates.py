"""Workload certificates: one key and signed chain per identity, issued off the event
loop, shared by every proxy of that identity, and rotated at about half their life.

This is the part of istio-agent that pilothouse plays for proxies that fetch SDS from
it directly. :meth:`WorkloadCertificates.current` is a lookup: the certificate issued
for an identity, or None while it is being issued (the first ask starts it). Issuing
(a new key, a CSR, :meth:`Authority.sign`) runs in a thread; when it is done the
listeners are told the identity, and the SDS generator's push sends the new ``default``
secret to the connections authenticated as it.

Rotation follows istio-agent's ``SECRET_GRACE_PERIOD_RATIO``: a certificate is
replaced once the part of its life left is below ``grace_ratio`` (0.5) ± ``jitter``
(0.01, drawn per certificate), so at about half its lifetime; the old one stays served
until the new one is issued. The lifetime counted is from issue to ``not_after`` (a CA
may backdate ``not_before``). An identity no connection holds any more (``in_use``) is
not renewed but forgotten when its rotation comes.

A failed issue is logged, counted (``on_error``, for
``pilot_sds_certificate_errors_total``) and tried again with backoff.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from pilothouse.backoff import Backoff
from pilothouse.security.authority import Authority
from pilothouse.security.identity import SpiffeId
from pilothouse.security.workload_keys import KeyAlgorithm, new_workload_key

log = logging.getLogger("pilothouse.security.sds")

RETRY = Backoff(0.1, 30.0)
"""How a failed issue is tried again: from 100 ms (istio-agent's CA client) up to 30 s."""
MIN_ROTATION_DELAY = 0.1
"""Seconds: the soonest a rotation is scheduled (a very short TTL must not spin)."""


@dataclass(frozen=True, slots=True)
class WorkloadCertificate:
    """A workload's private key and its signed chain (leaf first, root last)."""

    identity: SpiffeId
    chain: tuple[str, ...]
    private_key: str
    not_after: datetime
    serial: int
    issued_at: float
    """Wall time it was issued."""

    def __repr__(self) -> str:  # never print a private key
        return f"WorkloadCertificate({self.identity}, serial {self.serial:x})"


class WorkloadCertificates:
    """Issued certificates by identity, issued and rotated in the background."""

    def __init__(
        self,
        authority: Authority,
        *,
        ttl: float = 86400.0,
        algorithm: KeyAlgorithm = KeyAlgorithm.RSA,
        grace_ratio: float = 0.5,
        jitter: float = 0.01,
        in_use: Callable[[SpiffeId], bool] = lambda identity: True,
        retry: Backoff = RETRY,
        rng: random.Random | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not 0 < grace_ratio < 1 or not 0 <= jitter < min(grace_ratio, 1 - grace_ratio):
            raise ValueError(f"grace ratio {grace_ratio} ± {jitter} must lie within (0, 1)")
        self._authority = authority
        self._ttl = ttl
        self._algorithm = algorithm
        self._grace_ratio = grace_ratio
        self._jitter = jitter
        self._in_use = in_use
        self._retry = retry
        self._rng = rng if rng is not None else random.Random()
        self._clock = clock
        self._issued: dict[SpiffeId, WorkloadCertificate] = {}
        self._wanted: set[SpiffeId] = set()
        """Identities asked for and not being issued yet."""
        self._issuing: set[SpiffeId] = set()
        self._rotations: dict[SpiffeId, asyncio.TimerHandle] = {}
        self._listeners: list[Callable[[SpiffeId], None]] = []
        self._error_listeners: list[Callable[[], None]] = []
        self._wake = asyncio.Event()
        self._stop = asyncio.Event()
        self.issued_count = 0
        """Certificates issued so far (first issues and rotations)."""

    # -- what SDS reads ---------------------------------------------------------------

    def current(self, identity: SpiffeId) -> WorkloadCertificate | None:
        """The certificate of ``identity``; None while it is first issued (started now)."""
        found = self._issued.get(identity)
        if found is None and identity not in self._issuing:
            self._wanted.add(identity)
            self._wake.set()
        return found

    def identities(self) -> frozenset[SpiffeId]:
        """The identities a certificate is held for now."""
        return frozenset(self._issued)

    def on_issued(self, listener: Callable[[SpiffeId], None]) -> None:
        """Call ``listener`` with the identity each time a certificate is issued."""
        self._listeners.append(listener)

    def on_error(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` each time issuing a certificate fails."""
        self._error_listeners.append(listener)

    def rotation_delay(self, certificate: WorkloadCertificate) -> float:
        """Seconds from now until ``certificate`` is replaced (jitter drawn now)."""
        ratio = self._grace_ratio + self._rng.uniform(-self._jitter, self._jitter)
        lifetime = certificate.not_after.timestamp() - certificate.issued_at
        rotate_at = certificate.not_after.timestamp() - lifetime * ratio
        return max(MIN_ROTATION_DELAY, rotate_at - self._clock())

    # -- lifecycle --------------------------------------------------------------------

    async def run(self) -> None:
        """Issue what is asked for until :meth:`close`."""
        async with asyncio.TaskGroup() as tasks:
            stopping = tasks.create_task(self._stop.wait())
            while not self._stop.is_set():
                waking = asyncio.ensure_future(self._wake.wait())
                await asyncio.wait((waking, stopping), return_when=asyncio.FIRST_COMPLETED)
                waking.cancel()
                self._wake.clear()
                wanted, self._wanted = self._wanted, set()
                for identity in sorted(wanted):
                    if identity not in self._issuing and not self._stop.is_set():
                        self._issuing.add(identity)
                        tasks.create_task(self._issue(identity))
        for timer in self._rotations.values():
            timer.cancel()
        self._rotations.clear()

    def close(self) -> None:
        self._stop.set()

    # -- issuing ------------------------------------------------------------------------

    async def _issue(self, identity: SpiffeId) -> None:
        failures = 0
        try:
            while not self._stop.is_set():
                try:
                    certificate = await asyncio.to_thread(self._sign, identity)
                except Exception as problem:
                    failures += 1
                    delay = self._retry.delay(failures, self._rng)
                    log.warning(
                        "issuing a certificate for %s failed (%s); trying again in %.1fs",
                        identity,
                        problem,
                        delay,
                    )
                    log.debug("issuing for %s failed", identity, exc_info=True)
                    for count in list(self._error_listeners):
                        count()
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._stop.wait(), delay)
                    continue
                self._issued[identity] = certificate
                self.issued_count += 1
                self._schedule_rotation(certificate)
                log.debug(
                    "certificate issued",
                    extra={"identity": str(identity), "not_after": str(certificate.not_after)},
                )
                for issued in list(self._listeners):
                    try:
                        issued(identity)
                    except Exception:  # a listener's fault must not stop issuing
                        log.exception("a listener of issued certificates failed")
                return
        finally:
            self._issuing.discard(identity)

    def _sign(self, identity: SpiffeId) -> WorkloadCertificate:
        """A new key, signed for ``identity`` (runs in a thread)."""
        key = new_workload_key(identity, self._algorithm)
        issued = self._authority.sign(key.csr, identity, int(self._ttl))
        return WorkloadCertificate(
            identity=identity,
            chain=issued.chain,
            private_key=key.private_key,
            not_after=issued.not_after,
            serial=issued.serial,
            issued_at=self._clock(),
        )

    # -- rotation -----------------------------------------------------------------------

    def _schedule_rotation(self, certificate: WorkloadCertificate) -> None:
        identity = certificate.identity
        previous = self._rotations.pop(identity, None)
        if previous is not None:
            previous.cancel()
        delay = self.rotation_delay(certificate)
        loop = asyncio.get_running_loop()
        self._rotations[identity] = loop.call_later(delay, self._rotate, identity)

    def _rotate(self, identity: SpiffeId) -> None:
        self._rotations.pop(identity, None)
        if self._stop.is_set():
            return
        if not self._in_use(identity):
            self._issued.pop(identity, None)
            log.debug("no proxy holds %s any more; its certificate is not renewed", identity)
            return
        log.debug("rotating the certificate of %s", identity)
        if identity not in self._issuing:
            self._wanted.add(identity)
            self._wake.set()

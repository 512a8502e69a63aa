"""What the rest of pilothouse asks of the CA: sign a workload's key, and name the roots.

The certificate service (``CreateCertificate``), the SDS generator and the TLS xDS port
all go through this interface, never through key material. ``sign`` is CPU work done in
a thread by its callers (``asyncio.to_thread``); the identity always comes from an
authenticated :class:`~pilothouse.security.identity.Caller`, never from the CSR.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from pilothouse.security.identity import SpiffeId


class SigningRefused(ValueError):
    """The request cannot be signed (bad CSR, lifetime above the maximum); says why."""


@dataclass(frozen=True, slots=True)
class IssuedCertificate:
    """A signed workload certificate."""

    chain: tuple[str, ...]
    """PEM certificates, leaf first, root last (as ``CreateCertificate`` answers)."""
    not_before: datetime
    not_after: datetime
    serial: int

    @property
    def leaf(self) -> str:
        return self.chain[0]


class Authority(Protocol):
    """The CA as its users see it."""

    def trust_bundle(self) -> tuple[str, ...]:
        """Every root a workload must trust now (PEM), the signing root first; during a
        root rotation the new root is here before it signs anything."""
        ...

    def sign(self, csr_pem: str, identity: SpiffeId, ttl_seconds: int) -> IssuedCertificate:
        """Sign the CSR's public key for ``identity`` (the CSR's own names are ignored).
        ``ttl_seconds`` ≤ 0 means the default lifetime; above the maximum is refused."""
        ...

    def on_bundle_change(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` (on the event loop) whenever :meth:`trust_bundle` changes."""
        ...

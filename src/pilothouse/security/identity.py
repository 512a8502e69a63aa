"""Workload identities: SPIFFE ids and the authenticated caller of a gRPC stream.

A SPIFFE id names a workload as ``spiffe://<trust domain>/ns/<namespace>/sa/<service
account>``. A :class:`Caller` is what authentication proved about whoever opened a
stream or called the CA: the identities it holds and how it proved them. Streams on
the plaintext port carry no caller (``None``): they are unauthenticated, and nothing
that needs an identity (certificates, secrets, ``api`` types) is given to them.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Final

SPIFFE_SCHEME: Final = "spiffe://"


class BadSpiffeId(ValueError):
    """The text is not a workload SPIFFE id; the message says why."""


@dataclass(frozen=True, slots=True, order=True)
class SpiffeId:
    """``spiffe://<trust_domain>/ns/<namespace>/sa/<service_account>``."""

    trust_domain: str
    namespace: str
    service_account: str

    @property
    def uri(self) -> str:
        return f"{SPIFFE_SCHEME}{self.trust_domain}/ns/{self.namespace}/sa/{self.service_account}"

    def __str__(self) -> str:
        return self.uri

    @classmethod
    def parse(cls, text: str) -> SpiffeId:
        """Read a workload id; anything else (other paths, empty parts) is refused."""
        if not text.startswith(SPIFFE_SCHEME):
            raise BadSpiffeId(f"{text!r} does not start with {SPIFFE_SCHEME}")
        trust_domain, _, path = text[len(SPIFFE_SCHEME) :].partition("/")
        parts = path.split("/")
        if not trust_domain:
            raise BadSpiffeId(f"{text!r} has no trust domain")
        if len(parts) != 4 or parts[0] != "ns" or parts[2] != "sa" or not all(parts):
            raise BadSpiffeId(f"{text!r}: expected spiffe://<trust domain>/ns/<ns>/sa/<sa>")
        return cls(trust_domain, parts[1], parts[3])


class ProvedBy(StrEnum):
    """How a caller proved who it is."""

    CLIENT_CERTIFICATE = "client-certificate"
    """A verified TLS client certificate; the identities are its SPIFFE URI SANs."""
    JWT = "jwt"
    """A bearer token in the ``authorization`` metadata, verified against an issuer."""


@dataclass(frozen=True, slots=True)
class Caller:
    """Who authentication proved a stream's or call's peer to be."""

    identities: tuple[SpiffeId, ...]
    proved_by: ProvedBy

    @property
    def primary(self) -> SpiffeId:
        """The identity certificates are issued for (the first)."""
        return self.identities[0]

    def namespaces(self) -> frozenset[str]:
        return frozenset(identity.namespace for identity in self.identities)

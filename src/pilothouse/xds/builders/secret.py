"""SDS ``Secret`` resources: a key pair, or the certificates a peer is checked against.

Both carry their PEM inline (``inline_bytes``), as istiod sends them:

- :func:`build_key_pair` is a ``tls_certificate`` (certificate chain, leaf first, and
  its private key): the workload secret ``default`` and credentials
  ``kubernetes://<name>``;
- :func:`build_validation_context` is a ``validation_context`` whose ``trusted_ca`` is
  one or more root certificates: ``ROOTCA`` (the trust bundle) and
  ``kubernetes://<name>-cacert``.

:func:`encode_secret` encodes either once (cached by the generator under its inputs).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from envoy.extensions.transport_sockets.tls.v3 import (  # type: ignore[import-untyped]
    secret_pb2,
)

from pilothouse.push.cache import Resource
from pilothouse.xds.builders.encode import content_hash, to_any_bytes


def _pem_bundle(certificates: Sequence[str]) -> bytes:
    """PEM blocks joined one after the other, each ending in a newline."""
    return "".join(c if c.endswith("\n") else c + "\n" for c in certificates).encode()


def build_key_pair(name: str, chain: Sequence[str], private_key: str) -> secret_pb2.Secret:
    """``Secret{name, tls_certificate{certificate_chain, private_key}}``."""
    secret = secret_pb2.Secret(name=name)
    secret.tls_certificate.certificate_chain.inline_bytes = _pem_bundle(chain)
    secret.tls_certificate.private_key.inline_bytes = private_key.encode()
    return secret


def build_validation_context(name: str, roots: Sequence[str]) -> secret_pb2.Secret:
    """``Secret{name, validation_context{trusted_ca}}``."""
    secret = secret_pb2.Secret(name=name)
    secret.validation_context.trusted_ca.inline_bytes = _pem_bundle(roots)
    return secret


@dataclass(frozen=True, slots=True)
class KeyPairInputs:
    """What a key pair secret is built from."""

    name: str
    chain: tuple[str, ...]
    private_key: str

    def __repr__(self) -> str:  # never print a private key in a log or a debug page
        return f"KeyPairInputs({self.name!r}, {len(self.chain)} certificate(s))"


@dataclass(frozen=True, slots=True)
class ValidationInputs:
    """What a validation context secret is built from."""

    name: str
    roots: tuple[str, ...]


def encode_secret(inputs: KeyPairInputs | ValidationInputs) -> Resource:
    if isinstance(inputs, KeyPairInputs):
        secret = build_key_pair(inputs.name, inputs.chain, inputs.private_key)
    else:
        secret = build_validation_context(inputs.name, inputs.roots)
    body = to_any_bytes(secret)
    return Resource(inputs.name, content_hash(body), body)

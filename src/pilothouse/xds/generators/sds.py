"""SDS: ``Secret`` resources by name, for proxies whose stream proved who they are.

Names served (istiod's, conventions §10):

- ``default``: the workload's key and certificate chain, for ``proxy.caller.primary``
  (:class:`~pilothouse.security.workload_certificates.WorkloadCertificates`: one per
  identity, shared by every proxy of it, issued off the event loop), only when
  server-made keys are on (``--sds-server-keys``; otherwise the node agent serves
  ``default`` from a key it made and this name is left out). While the first
  certificate of an identity is being signed it is left out; the push that follows
  its issue sends it.
- ``ROOTCA``: a validation context holding the Authority's trust bundle (read again
  when :meth:`SecretGenerator.bundle_changed` says it changed).
- ``kubernetes://<name>`` and ``kubernetes://<name>-cacert``: a key pair, or CA
  certificates, from the secrets directory
  (:class:`~pilothouse.security.secrets_directory.SecretsDirectory`).

Who gets what (conventions §13, "SDS through istiod"):

- A proxy without a verified identity (``caller is None``: the plaintext port) gets
  nothing at all, not even an empty response (:data:`WITHHELD`). The denial is
  logged at debug and counted once per stream and name
  (``pilot_sds_certificate_errors_total``).
- Credentials go to verified identities only. istiod also requires the proxy's own
  namespace (and a SubjectAccessReview); a flat directory has no namespace, so with
  ``credentials_namespace`` set only identities of that namespace may read it (the
  directory stands for that namespace's Secrets), and when it is empty any verified
  identity may. Denials are counted like the above.
- A name that does not exist (no such credential, no CA configured, an unknown scheme)
  is left out; a response with nothing in it is withheld, so Envoy keeps waiting (its
  SDS configs have no initial fetch timeout) until a push brings the secret.

Each secret is encoded once under its inputs in the ResourceCache
(:mod:`pilothouse.xds.builders.secret`).
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable
from typing import Final

from pilothouse.protocol.type_urls import SDS
from pilothouse.push.cache import Resource
from pilothouse.push.proxy import ProxyIdentity
from pilothouse.push.secrets import WORKLOAD_SECRET
from pilothouse.security.authority import Authority
from pilothouse.security.credential_files import CA_SUFFIX
from pilothouse.security.identity import Caller
from pilothouse.security.secrets_directory import SecretsDirectory
from pilothouse.security.workload_certificates import WorkloadCertificates
from pilothouse.xds.builders.secret import KeyPairInputs, ValidationInputs, encode_secret
from pilothouse.xds.builders.upstream_tls import CREDENTIAL_PREFIX, SDS_ROOT_SECRET
from pilothouse.xds.generators.base import GenerationInput, Resources
from pilothouse.xds.protocol.withheld import WITHHELD

log = logging.getLogger("pilothouse.xds.sds")

REMEMBERED_STREAMS: Final = 4096
"""Streams whose denials are remembered (so each is logged and counted once)."""


def credential_sds_name(part: str) -> str:
    """``kubernetes://<part>`` for a secrets directory part (``gw`` or ``gw-cacert``)."""
    return CREDENTIAL_PREFIX + part


class Denials:
    """The denied names of recent streams, so that each is logged and counted once.

    A stream is known by its proxy identity object (one per stream), held here while
    remembered so that its ``id`` cannot be reused by another.
    """

    def __init__(self, count: Callable[[], None], remembered: int = REMEMBERED_STREAMS) -> None:
        self._count = count
        self._remembered = remembered
        self._streams: OrderedDict[int, tuple[ProxyIdentity, set[str]]] = OrderedDict()

    def deny(self, proxy: ProxyIdentity, names: frozenset[str], why: str) -> None:
        key = id(proxy)
        held = self._streams.get(key)
        if held is None:
            held = self._streams[key] = (proxy, set())
            if len(self._streams) > self._remembered:
                self._streams.popitem(last=False)
        new = names - held[1]
        if not new:
            return
        held[1].update(new)
        log.debug(
            "SDS denied: %s", why, extra={"proxy": proxy.node_id, "secrets": ",".join(sorted(new))}
        )
        for _ in new:
            self._count()


class SecretGenerator:
    """Secrets for one proxy's watched names."""

    type_url = SDS

    def __init__(
        self,
        *,
        authority: Authority | None = None,
        certificates: WorkloadCertificates | None = None,
        credentials: SecretsDirectory | None = None,
        credentials_namespace: str = "",
        on_denied: Callable[[], None] = lambda: None,
    ) -> None:
        """``authority`` serves ``ROOTCA``, ``certificates`` ``default`` and
        ``credentials`` the ``kubernetes://`` names; a missing one serves nothing.
        ``on_denied`` is called once per stream and secret refused."""
        self._authority = authority
        self._certificates = certificates
        self._credentials = credentials
        self._credentials_namespace = credentials_namespace
        self._roots: ValidationInputs | None = None
        self.denials = Denials(on_denied)

    def bundle_changed(self) -> None:
        """The Authority's trust bundle changed: ``ROOTCA`` is read again."""
        self._roots = None

    def generate(self, given: GenerationInput) -> Resources:
        proxy = given.proxy
        names = given.names
        if not names:  # SDS is requested by name; a wildcard watch asks for nothing
            return WITHHELD
        caller = proxy.caller
        if caller is None:
            self.denials.deny(proxy, names, "the stream is not authenticated")
            return WITHHELD
        found: dict[str, Resource] = {}
        for name in names:
            resource = self._secret(given, caller, name)
            if resource is not None:
                found[name] = resource
        return found or WITHHELD

    def _secret(self, given: GenerationInput, caller: Caller, name: str) -> Resource | None:
        if name == WORKLOAD_SECRET:
            if self._certificates is None:
                return None
            certificate = self._certificates.current(caller.primary)
            if certificate is None:
                return None  # being issued: pushed once it is
            inputs = KeyPairInputs(name, certificate.chain, certificate.private_key)
            return given.cache.resource(inputs, encode_secret)
        if name == SDS_ROOT_SECRET:
            if self._authority is None:
                return None
            roots = self._roots
            if roots is None:  # read once per bundle, not once per proxy and push
                roots = self._roots = ValidationInputs(name, self._authority.trust_bundle())
            return given.cache.resource(roots, encode_secret)
        if name.startswith(CREDENTIAL_PREFIX):
            return self._credential(given, caller, name)
        return None

    def _credential(self, given: GenerationInput, caller: Caller, name: str) -> Resource | None:
        credentials = self._credentials
        if credentials is None:
            return None
        wanted = self._credentials_namespace
        if wanted and wanted not in caller.namespaces():
            self.denials.deny(
                given.proxy, frozenset({name}), f"credentials are for namespace {wanted} only"
            )
            return None
        part = name.removeprefix(CREDENTIAL_PREFIX)
        if part.endswith(CA_SUFFIX):
            roots = credentials.ca_certificates(part.removesuffix(CA_SUFFIX))
            if roots is not None:
                return given.cache.resource(ValidationInputs(name, roots), encode_secret)
        pair = credentials.key_pair(part)
        if pair is None:
            return None
        inputs = KeyPairInputs(name, pair.chain, pair.private_key)
        return given.cache.resource(inputs, encode_secret)

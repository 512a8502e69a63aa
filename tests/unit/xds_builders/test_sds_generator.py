"""The SDS generator on its own: which names it answers for which caller, and what the
Secrets hold. The CA and the secrets directory are real; no server runs."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from envoy.extensions.transport_sockets.tls.v3 import secret_pb2  # type: ignore[import-untyped]
from google.protobuf import any_pb2
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pilothouse.push.cache import Resource, ResourceCache
from pilothouse.push.proxy import ProxyIdentity, parse_node
from pilothouse.security.ca import CertificateAuthority
from pilothouse.security.identity import Caller, ProvedBy, SpiffeId
from pilothouse.security.secrets_directory import SecretsDirectory
from pilothouse.settings import CaSettings
from pilothouse.xds.generators.base import GenerationInput
from pilothouse.xds.generators.sds import SecretGenerator
from pilothouse.xds.protocol.withheld import withheld
from tests.unit.security.server_certs import write_ca, write_pair

GATEWAY = SpiffeId("cluster.local", "edge", "ingress")
OTHER = SpiffeId("cluster.local", "shop", "app")


@pytest.fixture(scope="module")
def ca(tmp_path_factory: pytest.TempPathFactory) -> CertificateAuthority:
    directory = tmp_path_factory.mktemp("ca") / "ca"
    return CertificateAuthority.open(CaSettings(dir=str(directory)), "cluster.local")


def proxy(identity: SpiffeId | None) -> ProxyIdentity:
    node = parse_node("router~10.0.0.1~gw-1.edge~edge.svc.cluster.local")
    if identity is None:
        return node
    return dataclasses.replace(node, caller=Caller((identity,), ProvedBy.CLIENT_CERTIFICATE))


def given_input(who: ProxyIdentity, names: frozenset[str] | None, cache: ResourceCache) -> Any:
    # the SDS generator reads the proxy, the names and the cache only
    return GenerationInput(
        proxy=who,
        scope=None,
        context=None,
        endpoints=None,
        cache=cache,
        names=names,  # type: ignore[arg-type]
    )


def secret(resource: Resource) -> Any:
    message = secret_pb2.Secret()
    assert any_pb2.Any.FromString(resource.body).Unpack(message)
    return message


@pytest.fixture
def credentials(tmp_path: Path) -> SecretsDirectory:
    write_pair(tmp_path, "gw", "gw.example")
    write_ca(tmp_path, "gw")
    directory = SecretsDirectory(tmp_path)
    directory.load()
    return directory


def test_credentials_and_roots_for_a_verified_identity(
    ca: CertificateAuthority, credentials: SecretsDirectory
) -> None:
    generator = SecretGenerator(authority=ca, credentials=credentials)
    cache = ResourceCache()
    names = frozenset({"ROOTCA", "kubernetes://gw", "kubernetes://gw-cacert", "file-cert:x~y"})
    found = generator.generate(given_input(proxy(GATEWAY), names, cache))
    assert set(found) == {"ROOTCA", "kubernetes://gw", "kubernetes://gw-cacert"}
    roots = secret(found["ROOTCA"]).validation_context.trusted_ca.inline_bytes.decode()
    assert roots == "".join(ca.trust_bundle())
    pair = secret(found["kubernetes://gw"]).tls_certificate
    held = credentials.key_pair("gw")
    assert held is not None
    assert pair.private_key.inline_bytes.decode() == held.private_key
    assert pair.certificate_chain.inline_bytes.decode() == "".join(held.chain)
    trusted = secret(found["kubernetes://gw-cacert"]).validation_context.trusted_ca
    assert trusted.inline_bytes.decode() == "".join(credentials.ca_certificates("gw") or ())
    again = generator.generate(given_input(proxy(OTHER), names, cache))
    assert again["kubernetes://gw"] is found["kubernetes://gw"]  # encoded once, shared


def test_nothing_for_an_unauthenticated_proxy_counted_once_per_stream_and_name(
    ca: CertificateAuthority, credentials: SecretsDirectory
) -> None:
    denied: list[None] = []
    generator = SecretGenerator(
        authority=ca, credentials=credentials, on_denied=lambda: denied.append(None)
    )
    anonymous, cache = proxy(None), ResourceCache()
    names = frozenset({"ROOTCA", "kubernetes://gw"})
    assert withheld(generator.generate(given_input(anonymous, names, cache)))
    assert withheld(generator.generate(given_input(anonymous, names, cache)))
    assert len(denied) == 2
    assert withheld(generator.generate(given_input(proxy(None), names, cache)))  # another stream
    assert len(denied) == 4


def test_wildcard_and_unknown_names_withhold_the_answer(ca: CertificateAuthority) -> None:
    generator = SecretGenerator(authority=ca)
    cache = ResourceCache()
    assert withheld(generator.generate(given_input(proxy(GATEWAY), None, cache)))
    assert withheld(generator.generate(given_input(proxy(GATEWAY), frozenset({"nope"}), cache)))
    # no secrets directory: credentials are simply not there
    gone = frozenset({"kubernetes://gw"})
    assert withheld(generator.generate(given_input(proxy(GATEWAY), gone, cache)))


def test_credentials_kept_to_one_namespace(
    ca: CertificateAuthority, credentials: SecretsDirectory
) -> None:
    denied: list[None] = []
    generator = SecretGenerator(
        authority=ca,
        credentials=credentials,
        credentials_namespace="edge",
        on_denied=lambda: denied.append(None),
    )
    cache = ResourceCache()
    names = frozenset({"ROOTCA", "kubernetes://gw"})
    assert set(generator.generate(given_input(proxy(GATEWAY), names, cache))) == set(names)
    assert set(generator.generate(given_input(proxy(OTHER), names, cache))) == {"ROOTCA"}
    assert len(denied) == 1


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    names=st.frozensets(
        st.one_of(
            st.sampled_from(["ROOTCA", "default", "kubernetes://gw", "kubernetes://gw-cacert"]),
            st.text(max_size=40),
            st.text(max_size=20).map(lambda t: "kubernetes://" + t),
        ),
        max_size=6,
    ),
    authenticated=st.booleans(),
)
def test_any_names_are_answered_with_known_secrets_only(
    ca: CertificateAuthority,
    credentials: SecretsDirectory,
    names: frozenset[str],
    authenticated: bool,
) -> None:
    generator = SecretGenerator(authority=ca, credentials=credentials)
    who = proxy(GATEWAY if authenticated else None)
    found = generator.generate(given_input(who, names, ResourceCache()))
    known = {"ROOTCA", "kubernetes://gw", "kubernetes://gw-cacert"}
    if not authenticated or not (names & known):
        assert withheld(found)
    else:
        assert set(found) == names & known

"""The TLS port's certificate: issued by the CA for the configured names, presented by
its SSL context, client certificates optional but verified, renewed on a root rotation."""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import os
import ssl
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from pilothouse.security.ca import CertificateAuthority
from pilothouse.security.identity import SpiffeId
from pilothouse.security.serving_cert import ServingCertificate
from pilothouse.settings import CaSettings
from tests.unit.security.certs import ca_cert, csr_pem, ec_key, key_pem, pem

NAMES = ("istiod.istio-system.svc", "localhost", "127.0.0.1", "::1")


@pytest.fixture(scope="module")
def suite_ca() -> CertificateAuthority:
    # The suite's CA (tests/conftest.py): its root exists already, so nothing slow here.
    return CertificateAuthority.open(CaSettings(dir=os.environ["PILOTHOUSE_CA_DIR"]), "td")


async def handshake(
    context: ssl.SSLContext,
    root: str,
    name: str,
    client: tuple[Path, Path] | None = None,
    *,
    verify: bool = True,
) -> tuple[x509.Certificate, bytes | None]:
    """Connect with TLS (trusting ``root``, checking ``name``); the server's certificate
    and the client certificate the server saw."""
    seen: list[bytes | None] = []

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.append(writer.get_extra_info("ssl_object").getpeercert(binary_form=True))
        writer.close()

    server = await asyncio.start_server(accept, "127.0.0.1", 0, ssl=context)
    port = server.sockets[0].getsockname()[1]
    try:
        client_context = ssl.create_default_context(cadata=root)
        client_context.set_alpn_protocols(["h2"])
        if not verify:
            client_context.check_hostname = False
            client_context.verify_mode = ssl.CERT_NONE
        if client is not None:
            client_context.load_cert_chain(*client)
        reader, writer = await asyncio.open_connection(
            "127.0.0.1", port, ssl=client_context, server_hostname=name
        )
        der = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
        assert writer.get_extra_info("ssl_object").selected_alpn_protocol() == "h2"
        async with asyncio.timeout(5):
            while not seen:
                # With TLS 1.3 the client is done before the server has checked its
                # certificate: a refusal arrives afterwards, as an alert that ends the stream.
                if reader.exception() is not None or reader.at_eof():
                    raise ConnectionError(f"the server refused the handshake: {reader.exception()}")
                await asyncio.sleep(0.01)
        writer.close()
        return x509.load_der_x509_certificate(der), seen[0]
    finally:
        server.close()
        await server.wait_closed()


async def test_the_certificate_names_every_configured_name(suite_ca: CertificateAuthority) -> None:
    serving = ServingCertificate(suite_ca, NAMES)
    serving.start()
    root = suite_ca.trust_bundle()[0]
    for name in ("localhost", "istiod.istio-system.svc", "127.0.0.1"):
        cert, client = await handshake(serving.context, root, name)
        assert client is None  # no client certificate: still accepted
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == ["istiod.istio-system.svc", "localhost"]
    assert names.get_values_for_type(x509.IPAddress) == [
        ipaddress.ip_address("127.0.0.1"),
        ipaddress.ip_address("::1"),
    ]
    assert serving.context.minimum_version is ssl.TLSVersion.TLSv1_2


async def test_a_client_certificate_is_verified_when_given(
    suite_ca: CertificateAuthority, tmp_path: Path
) -> None:
    serving = ServingCertificate(suite_ca, NAMES)
    serving.start()
    root = suite_ca.trust_bundle()[0]
    key = ec_key()
    issued = suite_ca.sign(csr_pem(key), SpiffeId("td", "ns", "sa"), 0)
    (tmp_path / "chain.pem").write_text("".join(issued.chain[:-1]))
    (tmp_path / "key.pem").write_bytes(key_pem(key))
    _, client = await handshake(
        serving.context, root, "localhost", (tmp_path / "chain.pem", tmp_path / "key.pem")
    )
    assert client is not None
    assert x509.load_der_x509_certificate(client).serial_number == issued.serial
    foreign_key = ec_key()
    (tmp_path / "foreign.pem").write_bytes(pem(ca_cert(foreign_key, "elsewhere")))
    (tmp_path / "foreign-key.pem").write_bytes(key_pem(foreign_key))
    with pytest.raises((ssl.SSLError, ConnectionError, asyncio.IncompleteReadError, TimeoutError)):
        await handshake(
            serving.context,
            root,
            "localhost",
            (tmp_path / "foreign.pem", tmp_path / "foreign-key.pem"),
        )


async def test_a_root_rotation_renews_the_certificate_and_trusts_the_new_root(
    tmp_path: Path,
) -> None:
    now = [datetime.datetime.now(datetime.UTC)]
    ca = CertificateAuthority.open(
        CaSettings(dir=str(tmp_path / "ca"), root_distribution_delay=0),
        "td",
        clock=lambda: now[0],
    )
    serving = ServingCertificate(ca, NAMES)
    serving.start()
    first = serving.not_after
    now[0] = ca.signing_root.not_valid_after_utc - datetime.timedelta(days=100)
    assert await ca.check_rotation()  # trusted and signing at once (no delay)
    assert serving.not_after != first
    new_root, _old_root = ca.trust_bundle()
    assert ca.signing_root.public_bytes(serialization.Encoding.PEM).decode() == new_root
    # The clock is years ahead of the real one, which TLS checks: read the presented
    # certificate without verifying it, and check its issuer by hand.
    cert, _ = await handshake(serving.context, new_root, "localhost", verify=False)
    cert.verify_directly_issued_by(ca.signing_root)
    # Client certificates are verified against both roots now.
    trusted = {int(ca_info["serialNumber"], 16) for ca_info in serving.context.get_ca_certs()}
    assert {root.serial_number for root in ca.roots} <= trusted

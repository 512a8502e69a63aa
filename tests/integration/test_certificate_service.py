"""CreateCertificate over the TLS port with a real grpcio client: bearer tokens, client
certificates, refusals, and the citadel_server_* metrics."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
from cryptography import x509

from pilothouse.api.istio.security.v1alpha1 import ca_pb2, ca_pb2_grpc
from tests.integration.tls_served import Served, running
from tests.unit.security.certs import ca_cert, csr_pem, ec_key, key_pem, pem, uris

PRODUCTPAGE = "spiffe://cluster.local/ns/bookinfo/sa/productpage"


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[Served]:
    async for value in running(tmp_path):
        yield value


def stub(channel: grpc.aio.Channel) -> ca_pb2_grpc.IstioCertificateServiceStub:
    return ca_pb2_grpc.IstioCertificateServiceStub(channel)  # type: ignore[no-untyped-call]


def certs(chain: list[str]) -> list[x509.Certificate]:
    return [x509.load_pem_x509_certificate(pem.encode()) for pem in chain]


async def test_a_token_gets_its_own_identity_whatever_the_csr_asks(served: Served) -> None:
    csr = csr_pem(ec_key(), uri="spiffe://cluster.local/ns/istio-system/sa/istiod")
    async with served.channel() as channel:
        answer = await stub(channel).CreateCertificate(
            ca_pb2.IstioCertificateRequest(csr=csr, validity_duration=3600),
            metadata=served.bearer("bookinfo", "productpage"),
        )
    chain = certs(list(answer.cert_chain))
    assert uris(chain[0]) == [PRODUCTPAGE]
    root = x509.load_pem_x509_certificate(served.root_pem())
    assert chain[-1] == root  # leaf first, root last: the root clients trust
    chain[0].verify_directly_issued_by(root)
    life = chain[0].not_valid_after_utc - chain[0].not_valid_before_utc
    assert life.total_seconds() == pytest.approx(3600 + 120)


async def test_a_client_certificate_authenticates_without_a_token(served: Served) -> None:
    key = ec_key()
    async with served.channel() as channel:
        first = await stub(channel).CreateCertificate(
            ca_pb2.IstioCertificateRequest(csr=csr_pem(key)),
            metadata=served.bearer("bookinfo", "reviews"),
        )
    chain = "".join(first.cert_chain).encode()
    async with served.channel(key=key_pem(key), chain=chain) as channel:
        again = await stub(channel).CreateCertificate(
            ca_pb2.IstioCertificateRequest(csr=csr_pem(ec_key()))
        )
    assert uris(certs(list(again.cert_chain))[0]) == [
        "spiffe://cluster.local/ns/bookinfo/sa/reviews"
    ]


async def test_a_client_certificate_from_another_ca_is_refused(served: Served) -> None:
    key = ec_key()
    foreign = ca_cert(key, "not pilothouse's")
    async with served.channel(key=key_pem(key), chain=pem(foreign)) as channel:
        with pytest.raises(grpc.aio.AioRpcError) as failure:
            await stub(channel).CreateCertificate(
                ca_pb2.IstioCertificateRequest(csr=csr_pem(ec_key())), timeout=5
            )
    # The handshake fails: the CA never sees the call.
    assert failure.value.code() is grpc.StatusCode.UNAVAILABLE


@pytest.mark.parametrize(
    "metadata",
    [
        [],
        [("authorization", "Bearer not-a-token")],
        [("authorization", "Basic dXNlcjpwYXNz")],
    ],
)
async def test_no_proof_is_unauthenticated(served: Served, metadata: list[tuple[str, str]]) -> None:
    async with served.channel() as channel:
        with pytest.raises(grpc.aio.AioRpcError) as failure:
            await stub(channel).CreateCertificate(
                ca_pb2.IstioCertificateRequest(csr=csr_pem(ec_key())), metadata=metadata
            )
    assert failure.value.code() is grpc.StatusCode.UNAUTHENTICATED
    assert "authentication failed" in (failure.value.details() or "")


async def test_a_token_for_another_audience_is_unauthenticated(served: Served) -> None:
    async with served.channel() as channel:
        with pytest.raises(grpc.aio.AioRpcError) as failure:
            await stub(channel).CreateCertificate(
                ca_pb2.IstioCertificateRequest(csr=csr_pem(ec_key())),
                metadata=served.bearer("bookinfo", "productpage", audience="kubernetes"),
            )
    assert failure.value.code() is grpc.StatusCode.UNAUTHENTICATED


@pytest.mark.parametrize(
    ("request_", "reason"),
    [
        (ca_pb2.IstioCertificateRequest(csr="garbage"), "CERTIFICATE REQUEST"),
        (ca_pb2.IstioCertificateRequest(), "no CSR"),
        (ca_pb2.IstioCertificateRequest(csr="x" * 70_000), "larger than"),
    ],
)
async def test_bad_requests_are_invalid_argument(
    served: Served, request_: ca_pb2.IstioCertificateRequest, reason: str
) -> None:
    async with served.channel() as channel:
        with pytest.raises(grpc.aio.AioRpcError) as failure:
            await stub(channel).CreateCertificate(
                request_, metadata=served.bearer("bookinfo", "productpage")
            )
    assert failure.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert reason in (failure.value.details() or "")


async def test_more_than_ninety_days_is_invalid_argument(served: Served) -> None:
    async with served.channel() as channel:
        with pytest.raises(grpc.aio.AioRpcError) as failure:
            await stub(channel).CreateCertificate(
                ca_pb2.IstioCertificateRequest(csr=csr_pem(ec_key()), validity_duration=91 * 86400),
                metadata=served.bearer("bookinfo", "productpage"),
            )
    assert failure.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert "maximum" in (failure.value.details() or "")


async def test_istio_agents_request_bytes_are_understood(served: Served) -> None:
    # As istio-agent encodes it: csr (1), validity_duration (3), metadata (4) with
    # ClusterID; sent as raw bytes so that only the field numbers matter.
    csr = csr_pem(ec_key()).encode()
    metadata = b"\n\x14\n\tClusterID\x12\x07\x1a\x05Kube1"
    body = (
        b"\x0a" + _varint(len(csr)) + csr + b"\x18" + _varint(7200)
        + b"\x22" + _varint(len(metadata)) + metadata
    )  # fmt: skip
    async with served.channel() as channel:
        call = channel.unary_unary(
            "/istio.v1.auth.IstioCertificateService/CreateCertificate",
            request_serializer=lambda raw: raw,
            response_deserializer=ca_pb2.IstioCertificateResponse.FromString,
        )
        answer = await call(body, metadata=served.bearer("bookinfo", "details"))
    leaf = certs(list(answer.cert_chain))[0]
    assert (leaf.not_valid_after_utc - leaf.not_valid_before_utc).total_seconds() == 7200 + 120


async def test_metrics_count_requests_successes_and_failures(served: Served) -> None:
    async with served.channel() as channel:
        await stub(channel).CreateCertificate(
            ca_pb2.IstioCertificateRequest(csr=csr_pem(ec_key())),
            metadata=served.bearer("bookinfo", "productpage"),
        )
        for metadata in ([], served.bearer("bookinfo", "productpage")):
            with pytest.raises(grpc.aio.AioRpcError):
                await stub(channel).CreateCertificate(
                    ca_pb2.IstioCertificateRequest(csr="bad"), metadata=metadata
                )
    text = await served.metrics()
    assert "citadel_server_csr_count 3.0" in text
    assert "citadel_server_success_cert_issuance_count 1.0" in text
    assert "citadel_server_authentication_failure_count 1.0" in text
    assert "citadel_server_csr_sign_err_count 1.0" in text
    root = x509.load_pem_x509_certificate(served.root_pem())
    expiry = root.not_valid_after_utc.timestamp()
    assert sample(text, "citadel_server_root_cert_expiry_timestamp") == expiry
    assert sample(text, "citadel_server_cert_chain_expiry_timestamp") == expiry


def sample(text: str, name: str) -> float:
    lines = [line for line in text.splitlines() if line.startswith(name + " ")]
    assert len(lines) == 1, lines
    return float(lines[0].split()[1])


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)

"""Fuzz: malformed CSRs, random request bytes, huge metadata and raw garbage on the TLS
port never crash pilothouse (CVE-2022-23635: istiod crashed on 15012 before auth).

A live in-process ``serve()`` with its TLS port; a real grpcio client over TLS sends
CreateCertificate calls whose body, CSR, lifetime, metadata and ``authorization`` value
are random (some with a valid token, so that the CSR is really parsed). Every call must
end with a proper status (never UNKNOWN, which is what an unhandled exception becomes,
never Python text in the details), and afterwards the server still signs a good CSR
and logged no error of its own. Raw random bytes to the TLS socket (a broken handshake)
are also sent between calls.
"""

from __future__ import annotations

import asyncio
import base64
import logging
from collections.abc import AsyncIterator, Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import grpc
import pytest
from google.protobuf import struct_pb2
from hypothesis import given
from hypothesis import strategies as st

from pilothouse.api.istio.security.v1alpha1 import ca_pb2
from tests.fuzz.budget import fuzz_settings
from tests.integration.tls_served import Served, running
from tests.unit.security.certs import csr_pem, ec_key

T = TypeVar("T")
METHOD = "/istio.v1.auth.IstioCertificateService/CreateCertificate"
PROPER = frozenset(
    {
        grpc.StatusCode.OK,
        grpc.StatusCode.INVALID_ARGUMENT,
        grpc.StatusCode.UNAUTHENTICATED,
        grpc.StatusCode.PERMISSION_DENIED,
        grpc.StatusCode.RESOURCE_EXHAUSTED,  # grpc's own metadata size limit
    }
)
LEAKS = ("Traceback", "Exception", 'File "', ".py")
PEM_HEAD = "-----BEGIN CERTIFICATE REQUEST-----\n"
PEM_TAIL = "\n-----END CERTIFICATE REQUEST-----\n"


class Live:
    def __init__(self, tmp: Path) -> None:
        self.loop = asyncio.new_event_loop()
        self._served: AsyncIterator[Served] = running(tmp)
        self.served = self.run(anext(self._served))
        self.channel = self.run(self._channel())
        self.good_csr = csr_pem(ec_key())

    async def _channel(self) -> grpc.aio.Channel:
        return self.served.channel()  # made on the loop that uses it

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return self.loop.run_until_complete(coroutine)

    def close(self) -> None:
        self.run(self.channel.close())
        self.run(self._served.aclose())  # type: ignore[attr-defined]
        self.loop.close()


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    server = Live(tmp_path_factory.mktemp("ca-fuzz"))
    try:
        yield server
    finally:
        server.close()


def csrs(good: str) -> st.SearchStrategy[str]:
    pem_body = st.binary(max_size=600).map(lambda b: base64.b64encode(b).decode())
    return st.one_of(
        st.text(max_size=300),
        pem_body.map(lambda body: PEM_HEAD + body + PEM_TAIL),
        st.integers(0, len(good) - 1).map(lambda cut: good[:cut]),
        st.tuples(st.integers(40, len(good) - 40), st.characters()).map(
            lambda edit: good[: edit[0]] + edit[1] + good[edit[0] + 1 :]
        ),
        st.just(good * 2),
        st.just(good),
    )


def bodies(good: str) -> st.SearchStrategy[bytes]:
    requests = st.builds(
        lambda csr, ttl, meta: ca_pb2.IstioCertificateRequest(
            csr=csr, validity_duration=ttl, metadata=meta
        ).SerializeToString(),
        csrs(good),
        st.integers(-(2**63), 2**63 - 1),
        st.dictionaries(st.text(max_size=20), st.text(max_size=50), max_size=4).map(_struct),
    )
    return st.one_of(requests, st.binary(max_size=300), st.just(b"\x0a\xff\xff\xff\xff\x0f"))


def _struct(values: dict[str, str]) -> Any:
    message = struct_pb2.Struct()
    message.update(values)
    return message


async def one_call(live: Live, body: bytes, metadata: list[tuple[str, str]]) -> None:
    call = live.channel.unary_unary(
        METHOD,
        request_serializer=lambda raw: raw,
        response_deserializer=ca_pb2.IstioCertificateResponse.FromString,
    )
    try:
        await call(body, metadata=tuple(metadata), timeout=10)
        code, details = grpc.StatusCode.OK, ""
    except grpc.aio.AioRpcError as failure:
        code, details = failure.code(), failure.details() or ""
    assert code in PROPER, (code, details)
    assert not any(leak in details for leak in LEAKS), details


async def garbage(port: int, data: bytes) -> None:
    _, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(data)
    await writer.drain()
    writer.close()
    await writer.wait_closed()


def test_random_certificate_requests_never_crash_the_server(
    live: Live, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="pilothouse")
    token = live.served.bearer("bookinfo", "fuzz")[0][1]
    authorization = st.one_of(
        st.just(token),
        st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=200).map(
            lambda t: f"Bearer {t}"
        ),
        st.text(alphabet="abcdefghij.", min_size=1, max_size=40_000).map(lambda t: f"Bearer {t}"),
    )
    extra = st.lists(
        st.tuples(
            st.text(alphabet="abcdefghijklmnop-", min_size=1, max_size=20),
            st.text(alphabet="xyz0123456789", max_size=9000),
        ),
        max_size=4,
    )

    @fuzz_settings(0.5)
    @given(
        body=bodies(live.good_csr),
        auth=st.none() | authorization,
        more=extra,
        noise=st.binary(max_size=200),
    )
    def case(body: bytes, auth: str | None, more: list[tuple[str, str]], noise: bytes) -> None:
        metadata = [(k, v) for k, v in more if k not in ("te", "content-type")]
        if auth is not None:
            metadata.append(("authorization", auth))
        live.run(one_call(live, body, metadata))
        live.run(garbage(live.served.bound.xds_tls_port, noise))

    case()
    ours = [r for r in caplog.records if r.name.startswith("pilothouse")]
    assert ours == [], [r.getMessage() for r in ours]
    answer = live.run(good_call(live, token))
    assert len(answer.cert_chain) == 2


async def good_call(live: Live, token: str) -> Any:
    """A well-formed call (made on the live loop: grpc.aio calls belong to a loop)."""
    call = live.channel.unary_unary(
        METHOD,
        request_serializer=lambda m: m.SerializeToString(),
        response_deserializer=ca_pb2.IstioCertificateResponse.FromString,
    )
    return await call(
        ca_pb2.IstioCertificateRequest(csr=live.good_csr),
        metadata=(("authorization", token),),
        timeout=10,
    )

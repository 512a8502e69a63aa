"""A refused Envoy is visible on the server: a real Envoy with a token from an issuer
pilothouse does not trust dials the TLS port of a real ``pilothouse serve``; its
streams are refused (UNAUTHENTICATED), and the server says so in its log (one info line
with the peer and reason, throttled), at ``/debug/refusals``, and through
``pilothouse proxy-status`` (``no proxies connected``, then the refusals by reason;
exit status 0)."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.e2e.harness.client import fetch
from tests.e2e.harness.fleet import EnvoyFleet
from tests.e2e.harness.serve_process import ServeProcess
from tests.e2e.harness.token_served import served_with_issuer
from tests.e2e.test_tls_xds_envoy import NODE, bootstrap, root_file
from tests.unit.security.tokens import Issuer

pytestmark = pytest.mark.timeout(120)

LINE = re.compile(r"info xds\.refusals xds connection refused: (.*)$", re.MULTILINE)


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[ServeProcess]:
    environment = {"PILOTHOUSE_XDS_REFUSAL_LOG_INTERVAL": "60"}
    async with served_with_issuer(tmp_path, environment) as (process, _trusted):
        yield process


async def refusals(process: ServeProcess) -> dict[str, object]:
    answer = await fetch("127.0.0.1", process.admin_port, "/debug/refusals", timeout=5.0)
    assert answer.status == 200, answer.body
    view: dict[str, object] = json.loads(answer.body)
    return view


async def test_an_envoy_with_a_bad_token_is_refused_visibly(
    served: ServeProcess, envoy_factory: EnvoyFleet, tmp_path: Path
) -> None:
    process = served
    stranger = Issuer()  # signs well-formed tokens whose keys pilothouse does not have
    token = tmp_path / "istio-token"
    token.write_text(stranger.token("bookinfo", "bookinfo-productpage"))
    document = bootstrap(
        "--xds-address", f"127.0.0.1:{process.xds_tls_port}",
        "--xds-tls-root", str(root_file()), "--xds-token-file", str(token),
    )  # fmt: skip
    envoy = await envoy_factory(document, wait_ready=False)
    await envoy.wait_stat("cluster.xds-grpc.upstream_rq_total", 2, timeout=20)

    # the log: an info line naming the reason, the peer and the node
    async with asyncio.timeout(10):
        while not LINE.search(process.log_path.read_text(errors="replace")):
            await asyncio.sleep(0.1)
    log = process.log_path.read_text(errors="replace")
    first = LINE.search(log)
    assert first is not None
    assert "reason=unauthenticated" in first.group(0)
    assert re.search(r"peer=ipv4:127\.0\.0\.1:\d+", first.group(0)), first.group(0)
    assert NODE in first.group(0)

    # the endpoint: counts by reason, and the latest refusals (Envoy counts its second
    # stream when it opens it; the server records the refusal a moment later)
    async with asyncio.timeout(10):
        while True:
            view = await refusals(process)
            reasons = view["reasons"]
            assert isinstance(reasons, dict)
            unauthenticated = reasons.get("unauthenticated", {"count": 0})
            if unauthenticated["count"] >= 2:
                break
            await asyncio.sleep(0.1)
    assert unauthenticated["lastNodeId"] == NODE
    assert unauthenticated["lastPeer"].startswith("ipv4:127.0.0.1:")
    assert "authentication failed" in unauthenticated["lastMessage"]
    recent = view["recent"]
    assert isinstance(recent, list) and recent[0]["reason"] == "unauthenticated"

    # proxy-status: nothing connected, and why
    done = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "pilothouse.cli.main", "proxy-status",
         "--admin", f"127.0.0.1:{process.admin_port}"],
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"no proxies connected to http://127.0.0.1:{process.admin_port}"
    row = next(line for line in lines if line.startswith("unauthenticated"))
    assert NODE in row and "ipv4:127.0.0.1:" in row

    # the log stays small: thirty more refused streams, no more lines for the reason
    await refuse_streams(process, stranger, 30)
    log = process.log_path.read_text(errors="replace")
    # LINES_PER_INTERVAL per reason in the 60 s window (on a loaded machine another reason,
    # such as a TLS authentication timeout, may log lines of its own)
    assert sum("reason=unauthenticated" in line for line in LINE.findall(log)) <= 5
    counted = (await refusals(process))["reasons"]["unauthenticated"]["count"]  # type: ignore[index]
    assert counted >= 32


async def refuse_streams(process: ServeProcess, issuer: Issuer, count: int) -> None:
    """``count`` ADS streams with ``issuer``'s token, each refused UNAUTHENTICATED."""
    import grpc

    from tests.integration.tls_served import ADS, node_request

    credentials = grpc.ssl_channel_credentials(root_certificates=root_file().read_bytes())
    metadata = (("authorization", f"Bearer {issuer.token('bookinfo', 'bookinfo-productpage')}"),)
    async with grpc.aio.secure_channel(f"127.0.0.1:{process.xds_tls_port}", credentials) as ch:
        for _ in range(count):
            call = ch.stream_stream(ADS, request_serializer=lambda m: m.SerializeToString())(
                metadata=metadata
            )
            await call.write(node_request(NODE, {"NAMESPACE": "bookinfo"}))
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await call.read()
            assert refused.value.code() is grpc.StatusCode.UNAUTHENTICATED

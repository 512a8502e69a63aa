"""``pilothouse agent`` as a real process (the CLI's own wiring) against an in-process
pilothouse: it waits for a root file that is not there yet, serves a certificate it made
on its SDS socket, exits 0 on SIGTERM and removes its sockets; an Envoy that exits by
itself ends the agent with status 1 (``/bin/false`` standing in for Envoy: only its exit
is under test); and a root still unusable after ``--root-cert-timeout`` ends it with
status 1 and one line naming the file."""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path

import grpc
from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]

from tests.integration.tls_served import running

SDS = "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret"
SECRETS = "/envoy.service.secret.v3.SecretDiscoveryService/StreamSecrets"
NODE = "sidecar~10.0.0.1~productpage-v1.bookinfo~bookinfo.svc.cluster.local"


async def agent_process(tmp_path: Path, target: str, *flags: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "pilothouse.cli.main", "agent", "--node", NODE,
        "--service-account", "productpage", "--xds-address", target,
        "--token", str(tmp_path / "token"), "--root-cert", str(tmp_path / "root.pem"),
        "--sds-socket", str(tmp_path / "sds"), "--xds-socket", str(tmp_path / "XDS"),
        "--key", "ecdsa", *flags,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip


async def test_the_agent_command_serves_sds_and_stops_on_sigterm(tmp_path: Path) -> None:
    async for served in running(tmp_path, server_keys=False):
        (tmp_path / "token").write_text(served.issuer.token("bookinfo", "productpage"))
        process = await agent_process(tmp_path, served.tls_target, "--no-envoy")
        try:
            # no root yet: the agent says it waits for it, and takes it when it comes
            assert process.stderr is not None
            waiting = f"waiting up to 60 s for the root certificate {tmp_path / 'root.pem'}"
            async with asyncio.timeout(20):
                while waiting.encode() not in (line := await process.stderr.readline()):
                    assert line, "the agent ended without waiting for its root"
            assert line.rstrip().endswith(b": no such file")
            (tmp_path / "root.pem").write_bytes(served.root_pem())
            async with asyncio.timeout(20):
                while not (tmp_path / "sds").exists():
                    await asyncio.sleep(0.05)
            async with grpc.aio.insecure_channel(f"unix:{tmp_path / 'sds'}") as channel:
                call = channel.stream_stream(
                    SECRETS,
                    request_serializer=lambda m: m.SerializeToString(),
                    response_deserializer=discovery_pb2.DiscoveryResponse.FromString,
                )()
                await call.write(
                    discovery_pb2.DiscoveryRequest(type_url=SDS, resource_names=["default"])
                )
                async with asyncio.timeout(15):
                    response = await call.read()
                call.cancel()
            assert len(response.resources) == 1
            assert (tmp_path / "sds").stat().st_mode & 0o777 == 0o600
            process.send_signal(signal.SIGTERM)
            async with asyncio.timeout(15):
                assert await process.wait() == 0
            assert not (tmp_path / "sds").exists() and not (tmp_path / "XDS").exists()
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()


async def test_envoy_exiting_ends_the_agent(tmp_path: Path) -> None:
    async for served in running(tmp_path, server_keys=False):
        (tmp_path / "token").write_text(served.issuer.token("bookinfo", "productpage"))
        (tmp_path / "root.pem").write_bytes(served.root_pem())
        process = await agent_process(
            tmp_path, served.tls_target, "--envoy-binary", "/bin/false",
            "--bootstrap", str(tmp_path / "envoy.json"), "--admin-port", "1",
            "--status-port", "0",
        )  # fmt: skip
        async with asyncio.timeout(20):
            assert await process.wait() == 1
        assert process.stderr is not None
        assert b"Envoy exited with status 1" in await process.stderr.read()
        assert b'"pipe"' in (tmp_path / "envoy.json").read_bytes()


async def test_a_root_unusable_past_the_timeout_ends_the_agent(tmp_path: Path) -> None:
    """No pilothouse is needed: the agent waits for its root before it dials anything
    (a missing root is waited for in the first test; each reason is in the unit tests)."""
    root = tmp_path / "root.pem"
    root.write_text("not a certificate\n")
    process = await agent_process(
        tmp_path, "127.0.0.1:1", "--no-envoy", "--root-cert-timeout", "0.5"
    )
    async with asyncio.timeout(20):
        assert await process.wait() == 1
    assert process.stderr is not None
    assert (await process.stderr.read()).decode().splitlines() == [
        f"waiting up to 0.5 s for the root certificate {root}: holds no PEM certificate",
        f"pilothouse agent: root certificate {root}: holds no PEM certificate (waited 0.5 s, "
        "--root-cert-timeout)",
    ]
    assert not (tmp_path / "sds").exists() and not (tmp_path / "XDS").exists()

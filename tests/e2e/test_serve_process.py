"""`pilothouse serve` as a real process: real Envoy converges on the example mesh, an edit
to a config file reaches Envoy, and SIGTERM drains and exits 0."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from pilothouse.bootstrap.envoy import EnvoyBootstrapOptions, XdsTransport, envoy_bootstrap
from tests.e2e.harness.fleet import EnvoyFleet
from tests.e2e.harness.ports import free_port, wait_for_port
from tests.e2e.harness.tls import ThrowawayCa

ROOT = Path(__file__).resolve().parents[2]
NODE = "sidecar~127.0.0.1~productpage-v1.bookinfo~bookinfo.svc.cluster.local"


async def test_serve_examples_envoy_converges_then_sigterm(
    tmp_path: Path, envoy_factory: EnvoyFleet
) -> None:
    mesh = tmp_path / "mesh"
    shutil.copytree(ROOT / "examples", mesh)
    port, admin, webhook = free_port(), free_port(), free_port()
    certificates = ThrowawayCa(tmp_path / "ca").issue("webhook", ("localhost",))
    process = subprocess.Popen(
        [sys.executable, "-m", "pilothouse.cli.main", "serve", "--config", str(mesh),
         "--xds-address", f"127.0.0.1:{port}", "--admin-address", f"127.0.0.1:{admin}",
         "--webhook-address", f"127.0.0.1:{webhook}",
         "--webhook-cert", str(certificates.cert), "--webhook-key", str(certificates.key),
         "--log-level", "info"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, "PILOTHOUSE_DEBOUNCE_AFTER": "0.05"},
        start_new_session=True,
    )  # fmt: skip
    try:
        await wait_for_port(port, timeout=20)
        await wait_for_port(admin, timeout=20)
        status, _ = await fetch_ready(admin)
        deadline = time.monotonic() + 10
        while status != 200:
            assert time.monotonic() < deadline, "/ready never turned 200"
            await asyncio.sleep(0.05)
            status, _ = await fetch_ready(admin)
        await wait_for_port(webhook, timeout=20)
        reply = await admission_review(webhook, certificates.ca)
        assert reply["response"]["allowed"] is False
        assert "needs http, tcp or tls routes" in reply["response"]["status"]["message"]

        options = EnvoyBootstrapOptions(
            node_id=NODE, xds_port=port, admin_port=0, transport=XdsTransport.DELTA
        )
        envoy = await envoy_factory(envoy_bootstrap(options))
        reviews = "outbound|9080|v3|reviews.bookinfo.svc.cluster.local"
        assert await hosts(envoy, reviews) == [19084]

        workloads = mesh / "bookinfo" / "workloads.yaml"
        workloads.write_text(workloads.read_text().replace("http: 19084", "http: 19094"))
        deadline = time.monotonic() + 5
        while await hosts(envoy, reviews) != [19094]:
            assert time.monotonic() < deadline, "the file edit did not reach Envoy"
            await asyncio.sleep(0.05)

        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=15) == 0
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    output = process.stdout.read() if process.stdout else ""
    assert "xDS listening on 127.0.0.1" in output
    assert "draining" in output


async def admission_review(port: int, ca: Path) -> dict[str, Any]:
    review = {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "u-1",
            "operation": "CREATE",
            "namespace": "shop",
            "object": {
                "apiVersion": "networking.istio.io/v1",
                "kind": "VirtualService",
                "metadata": {"name": "bad"},
                "spec": {"hosts": []},
            },
        },
    }
    body = json.dumps(review).encode()
    context = ssl.create_default_context(cafile=str(ca))
    reader, writer = await asyncio.open_connection(
        "127.0.0.1", port, ssl=context, server_hostname="localhost"
    )
    writer.write(
        b"POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
        + body
    )
    data = await reader.read()
    writer.close()
    _head, _, payload = data.partition(b"\r\n\r\n")
    result: dict[str, Any] = json.loads(payload)
    return result


async def fetch_ready(port: int) -> tuple[int, str]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(
        f"GET /ready HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode()
    )
    data = await reader.read()
    writer.close()
    head, _, body = data.decode().partition("\r\n\r\n")
    return int(head.split()[1]), body


async def hosts(envoy: object, cluster: str) -> list[int]:
    statuses = (await envoy.clusters_json()).get("cluster_statuses", [])  # type: ignore[attr-defined]
    for status in statuses:
        if status["name"] == cluster:
            return sorted(
                h["address"]["socket_address"]["port_value"]
                for h in status.get("host_statuses", [])
            )
    return []

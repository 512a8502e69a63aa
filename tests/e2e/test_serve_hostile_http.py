"""`pilothouse serve` as a real process, fed hostile HTTP on its admin port (REST
discovery) and its webhook port: every request gets a 4xx in our words, the process keeps
serving good requests, logs no fault, and still exits 0 on SIGTERM."""

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

import aiohttp

from pilothouse.boundary.json_body import MAX_JSON_DEPTH, MAX_NUMBER_DIGITS
from tests.e2e.harness.ports import free_port, wait_for_port
from tests.e2e.harness.tls import ThrowawayCa
from tests.fuzz.answers import internals_in

ROOT = Path(__file__).resolve().parents[2]
NODE = "sidecar~127.0.0.1~productpage-v1.bookinfo~bookinfo.svc.cluster.local"
POLL = {"node": {"id": NODE, "metadata": {"NAMESPACE": "bookinfo"}}}
SERVICE_ENTRY = {
    "apiVersion": "networking.istio.io/v1",
    "kind": "ServiceEntry",
    "metadata": {"name": "ratings", "namespace": "bookinfo"},
    "spec": {
        "hosts": ["ratings.bookinfo.svc.cluster.local"],
        "ports": [{"number": 9080, "name": "http", "protocol": "HTTP"}],
        "resolution": "DNS",
    },
}


def review(obj: object) -> bytes:
    request = {"uid": "h-1", "operation": "CREATE", "namespace": "bookinfo", "object": obj}
    return json.dumps(
        {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
    ).encode()


DEEP = b"[" * 100_000 + b"]" * 100_000
REST_ATTACKS: list[tuple[str, bytes, int, str]] = [
    ("POST", DEEP, 400, f"request body: JSON nested deeper than {MAX_JSON_DEPTH} levels"),
    ("POST", b'{"n": ' + b"9" * 5000 + b"}", 400, f"more than {MAX_NUMBER_DIGITS} digits"),
    ("POST", b"\xff\xfe\x00\x00garbage", 400, "request body: not UTF-8 text"),
    ("POST", json.dumps({**POLL, "version_info": 7}).encode(), 400, "field version_info"),
    ("GET", b"", 405, "method GET is not allowed on /v3/discovery:clusters; use POST"),
]
WEBHOOK_ATTACKS: list[tuple[bytes, int, str]] = [
    (DEEP, 400, f"could not decode body: JSON nested deeper than {MAX_JSON_DEPTH} levels"),
    (
        review(SERVICE_ENTRY).replace(b'"number": 9080', b'"number": ' + b"9" * 5000),
        400,
        f"could not decode body: a number with more than {MAX_NUMBER_DIGITS} digits",
    ),
    (b"\xc3\x28{}", 400, "could not decode body: not UTF-8 text"),
]


async def test_hostile_http_is_refused_and_the_process_serves_on(tmp_path: Path) -> None:
    mesh = tmp_path / "mesh"
    shutil.copytree(ROOT / "examples", mesh)
    port, admin, webhook = free_port(), free_port(), free_port()
    certificates = ThrowawayCa(tmp_path / "ca").issue("webhook", ("localhost",))
    process = subprocess.Popen(
        [sys.executable, "-m", "pilothouse.cli.main", "serve", "--config", str(mesh),
         "--xds-address", f"127.0.0.1:{port}", "--admin-address", f"127.0.0.1:{admin}",
         "--webhook-address", f"127.0.0.1:{webhook}",
         "--webhook-cert", str(certificates.cert), "--webhook-key", str(certificates.key)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )  # fmt: skip
    trusting = ssl.create_default_context(cafile=str(certificates.ca))
    rest = f"http://127.0.0.1:{admin}/v3/discovery:clusters"
    validate = f"https://localhost:{webhook}/validate"
    json_type = {"Content-Type": "application/json"}
    try:
        await wait_for_port(admin, timeout=20)
        await wait_for_port(webhook, timeout=20)
        connector = aiohttp.TCPConnector(ssl=trusting)
        async with aiohttp.ClientSession(connector=connector) as session:
            deadline = time.monotonic() + 20
            while True:
                async with session.get(f"http://127.0.0.1:{admin}/ready") as response:
                    if response.status == 200:
                        break
                assert time.monotonic() < deadline, "/ready never turned 200"
                await asyncio.sleep(0.05)

            for method, body, status, message in REST_ATTACKS:
                async with session.request(method, rest, data=body, headers=json_type) as answer:
                    text = await answer.text()
                    assert answer.status == status, text[:200]
                    assert message in json.loads(text)["error"]
                    assert internals_in(text) == []
            for body, status, message in WEBHOOK_ATTACKS:
                async with session.post(validate, data=body, headers=json_type) as answer:
                    text = await answer.text()
                    assert answer.status == status, text[:200]
                    assert text.startswith(message) and internals_in(text) == []

            async with session.post(rest, json=POLL) as answer:
                assert answer.status == 200
                names = {r["name"] for r in (await answer.json())["resources"]}
                assert "outbound|9080|v1|reviews.bookinfo.svc.cluster.local" in names
            async with session.post(validate, data=review(SERVICE_ENTRY), headers=json_type) as a:
                assert a.status == 200
                assert (await a.json())["response"] == {"uid": "h-1", "allowed": True}
        assert process.poll() is None
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=15) == 0
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    output = process.stdout.read() if process.stdout else ""
    assert "Traceback" not in output, output[-2000:]

"""Every route of a real ``serve``'s admin port (``/ready``, ``/metrics``, ``/debug/*``,
REST xDS, ``/admin/*``) and ControlZ answer 421 to a ``Host`` that is not a name of
this server, the shape of a DNS-rebinding request from a browser on the same machine,
400 to a request without ``Host`` (as the webhook does), and answer the server's real
names. Plain HTTP over loopback against ``serve()`` in the
test's event loop; the foreign names are sent as a rebinding page's browser would
send them, in the ``Host`` header of a connection to 127.0.0.1."""

from __future__ import annotations

import asyncio
import re
import socket
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from pilothouse.cli import serve_admin
from tests.integration.serve_in_process import serve_in_process, service_entry

FOREIGN = [
    "evil.example",
    "attacker.com:15014",
    "localhost.attacker.com",
    "[2001:db8::66]:15014",
    "[fe80::1]",
    "0.0.0.0:15014",
]


async def _raw_status(port: int, head: str) -> tuple[int, str]:
    """The status and body of ``head`` sent as is (aiohttp's client always adds a Host)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(head.encode())
        answer = (await asyncio.wait_for(reader.read(), 5)).decode()
    finally:
        writer.close()
    status_line, _, rest = answer.partition("\r\n")
    return int(status_line.split()[1]), rest.partition("\r\n\r\n")[2]


def _concrete(path: str) -> str:
    return re.sub(r"\{[^}]*\}", "x", path)


def _routes(app: web.Application) -> list[tuple[str, str]]:
    found = []
    for route in app.router.routes():
        info = route.resource.get_info() if route.resource is not None else {}
        path = info.get("path") or info.get("formatter")
        if route.method in ("HEAD", "*") or not path:
            continue
        found.append((route.method, _concrete(str(path))))
    return sorted(set(found))


async def _status(method: str, url: str, host: str) -> tuple[int, Any]:
    async with (
        aiohttp.ClientSession() as session,
        session.request(method, url, headers={"Host": host}, data=b"{}") as answer,
    ):
        return answer.status, await answer.text()


async def test_every_admin_route_refuses_a_foreign_host(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "mesh.yaml").write_text(service_entry("db"))
    apps: list[web.Application] = []
    real = serve_admin.build_admin_app

    def record(*args: Any, **kwargs: Any) -> web.Application:
        apps.append(real(*args, **kwargs))
        return apps[-1]

    monkeypatch.setattr(serve_admin, "build_admin_app", record)
    async with serve_in_process(monkeypatch, tmp_path) as served:
        (app,) = apps
        routes = _routes(app)
        paths = {path for _, path in routes}
        assert {"/ready", "/healthz", "/metrics", "/debug/syncz", "/admin/knobs"} <= paths
        assert any(path.startswith("/v3/discovery") for path in paths)
        port = served.bound.admin_port
        for method, path in [*routes, ("GET", "/no/such/path")]:
            for host in FOREIGN:
                status, body = await _status(method, f"http://127.0.0.1:{port}{path}", host)
                assert status == 421, (method, path, host, status, body)
                assert "is not a name of this server" in body, (method, path, host)
                assert "DNS rebinding" in body, (method, path, host)
            for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}",
                         f"{socket.gethostname()}:{port}"):  # fmt: skip
                status, body = await _status(method, f"http://127.0.0.1:{port}{path}", host)
                assert status not in (403, 421), (method, path, host, body)
                assert "Host" not in body, (method, path, host, body)
        for path in ("/ready", "/healthz", "/metrics", "/debug/syncz", "/debug/configz"):
            status, _ = await _status("GET", f"http://127.0.0.1:{port}{path}", "localhost")
            assert status == 200, path
        # Envoy's REST polls name the admin port by its cluster, xds-rest, which the
        # port's Host check admits; the admin API still refuses that name (its
        # AccessPolicy checks Host against this server's names alone)
        status, body = await _status("GET", f"http://127.0.0.1:{port}/admin/knobs", "xds-rest")
        assert status == 403 and "DNS rebinding" in body, body
        assert (await _status("GET", f"http://127.0.0.1:{port}/debug/syncz", "xds-rest"))[0] == 200
        # ControlZ answers the same way
        ctrlz = f"http://127.0.0.1:{served.bound.ctrlz_port}/"
        assert (await _status("GET", ctrlz, "attacker.com:9876"))[0] == 421
        assert (await _status("GET", ctrlz, f"localhost:{served.bound.ctrlz_port}"))[0] == 200
        # no Host (HTTP/1.0) or an empty one: 400 on both ports, whatever the path
        for port in (served.bound.admin_port, served.bound.ctrlz_port):
            for path in ("/ready", "/healthz", "/"):
                old = f"GET {path} HTTP/1.0\r\n\r\n"
                status, body = await _raw_status(port, old)
                assert status == 400 and "a Host header is required" in body, (port, path)
                empty = f"GET {path} HTTP/1.1\r\nHost: \r\nConnection: close\r\n\r\n"
                status, body = await _raw_status(port, empty)
                assert status == 400 and "a Host header is required" in body, (port, path)


async def test_a_configured_name_is_answered(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "mesh.yaml").write_text(service_entry("db"))
    overrides = {"admin.host_names": ("istiod.istio-system.svc",), "admin.allow_remote": True}
    async with serve_in_process(monkeypatch, tmp_path, overrides) as served:
        url = f"http://127.0.0.1:{served.bound.admin_port}/debug/syncz"
        assert (await _status("GET", url, "istiod.istio-system.svc:15014"))[0] == 200
        # allowing remote clients does not allow other names
        assert (await _status("GET", url, "evil.example"))[0] == 421

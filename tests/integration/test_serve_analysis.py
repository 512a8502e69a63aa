"""``serve`` analyzes the config it serves: ``/debug/analyzez`` answers the findings of
the latest change, each new finding is logged once (not again when an unrelated change
comes), ``pilothouse_analysis_messages`` counts them, and ``pilothouse analyze --admin``
prints them with analyze's exit status. A real ``serve()`` over a copy of the example
mesh, in the test's event loop."""

from __future__ import annotations

import asyncio
import json
import logging
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pilothouse.cli.main import main
from tests.integration.serve_in_process import (
    ServeInProcess,
    serve_in_process,
    service_entry,
    write_atomically,
)

ROOT = Path(__file__).resolve().parents[2]
BROKEN = """\
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: broken, namespace: bookinfo}
spec:
  hosts: [reviews.bookinfo.svc.cluster.local]
  gateways: [no-such-gateway]
  http:
  - match: [{uri: {prefix: /v9}}]
    route: [{destination: {host: reviews.bookinfo.svc.cluster.local, subset: v9}}]
  - route: [{destination: {host: detials}}]
"""


@pytest.fixture(autouse=True)
def propagate() -> Iterator[None]:
    root = logging.getLogger("pilothouse")
    before = root.propagate
    root.propagate = True  # to caplog, whatever an earlier test configured
    yield
    root.propagate = before


async def analyzez(plane: ServeInProcess, runs_after: int, timeout: float = 8.0) -> Any:
    """``/debug/analyzez`` once an analysis later than run ``runs_after`` is in."""
    deadline = time.monotonic() + timeout
    while True:
        answer = await plane.request("GET", "/debug/analyzez")
        assert answer.status == 200
        if answer.body["runs"] > runs_after:
            return answer.body
        assert time.monotonic() < deadline, answer.body
        await asyncio.sleep(0.05)


def valid_objects(mesh: Path, capsys: pytest.CaptureFixture[str]) -> int:
    """The objects ``validate`` counts in ``mesh`` (those analysis judges)."""
    capsys.readouterr()
    assert main(["validate", "-o", "json", str(mesh)]) == 0
    count = json.loads(capsys.readouterr().out)["validObjects"]
    assert isinstance(count, int)
    return count


async def test_serve_reports_analysis_once_per_change(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    caplog.set_level(logging.INFO, logger="pilothouse.analysis")
    mesh = tmp_path / "mesh"
    shutil.copytree(ROOT / "examples", mesh)
    async with serve_in_process(monkeypatch, mesh) as plane:
        clean = await analyzez(plane, 0)
        examples = valid_objects(mesh, capsys)
        assert clean["messages"] == [] and clean["objects"] == examples > 20

        write_atomically(mesh / "broken.yaml", BROKEN)
        found = await analyzez(plane, clean["runs"])
        broken = str(mesh / "broken.yaml")
        assert [(m["code"], m["origin"], m["reference"]) for m in found["messages"]] == [
            ("IST0101", "VirtualService bookinfo/broken", f"{broken}:{line}") for line in (6, 10, 9)
        ]
        assert [m["message"] for m in found["messages"]] == [
            'Referenced gateway not found: "bookinfo/no-such-gateway"',
            'Referenced host not found: "detials.bookinfo.svc.cluster.local" (did you mean'
            ' "details.bookinfo.svc.cluster.local"?)',
            "Referenced host+subset in destinationrule not found:"
            ' "reviews.bookinfo.svc.cluster.local+v9"',
        ]

        write_atomically(mesh / "unrelated.yaml", service_entry("alpha"))
        again = await analyzez(plane, found["runs"])
        assert again["objects"] == examples + 2 and len(again["messages"]) == 3
        logged = [r.getMessage() for r in caplog.records if r.name == "pilothouse.analysis"]
        assert logged == [
            f"analysis: Error [IST0101] (VirtualService bookinfo/broken {m['reference']})"
            f" {m['message']}"
            for m in found["messages"]
        ]

        metrics = await plane.request("GET", "/metrics")
        assert 'pilothouse_analysis_messages{code="IST0101",level="Error"} 3.0' in metrics.body

        admin = f"127.0.0.1:{plane.bound.admin_port}"
        assert await asyncio.to_thread(main, ["analyze", "--admin", admin]) == 79
        suppressed = ["-S", "IST0101=VirtualService bookinfo/broken"]
        assert await asyncio.to_thread(main, ["analyze", "--admin", admin, *suppressed]) == 0

"""`pilothouse analyze` over files: the example mesh is clean, the newcomer's broken
VirtualService is caught at the line of each broken field, schema errors are IST0106,
thresholds and suppressions change the exit status, and usage errors exit 2."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest

from pilothouse.cli.main import main

ROOT = Path(__file__).resolve().parents[3]

BROKEN = """\
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata:
  name: broken
  namespace: bookinfo
spec:
  hosts: [reviews.bookinfo.svc.cluster.local]
  gateways: [no-such-gateway]
  http:
  - match: [{uri: {prefix: /v9}}]
    route:
    - destination: {host: reviews.bookinfo.svc.cluster.local, subset: v9}
  - route:
    - destination: {host: detials}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: bad, namespace: bookinfo}
spec:
  host: details
  trafficPolicy: {loadBalancer: {simple: NOT_A_BALANCER}}
"""


def test_the_example_mesh_has_no_issues(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", str(ROOT / "examples")]) == 0
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "No validation issues found when analyzing" in captured.err


def test_the_broken_virtual_service_is_caught(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mesh = tmp_path / "mesh"
    shutil.copytree(ROOT / "examples", mesh)
    broken = mesh / "broken.yaml"
    broken.write_text(BROKEN)
    assert main(["analyze", str(mesh)]) == 79
    lines = capsys.readouterr().out.splitlines()
    vs = f"(VirtualService bookinfo/broken {broken}"
    assert lines == [
        f"Error [IST0106] (DestinationRule bookinfo/bad {broken}:21) Schema validation error:"
        " spec.trafficPolicy.loadBalancer.simple: unknown value 'NOT_A_BALANCER'; expected one"
        " of UNSPECIFIED, LEAST_CONN, RANDOM, PASSTHROUGH, ROUND_ROBIN, LEAST_REQUEST",
        f'Error [IST0101] {vs}:8) Referenced gateway not found: "bookinfo/no-such-gateway"',
        f'Error [IST0101] {vs}:14) Referenced host not found: "detials.bookinfo.svc.cluster.local"'
        ' (did you mean "details.bookinfo.svc.cluster.local"?)',
        f"Error [IST0101] {vs}:12) Referenced host+subset in destinationrule not found:"
        ' "reviews.bookinfo.svc.cluster.local+v9"',
    ]

    assert main(["analyze", str(mesh), "-o", "json", "--output-threshold", "error"]) == 79
    listed = json.loads(capsys.readouterr().out)
    assert [m["code"] for m in listed] == ["IST0106", "IST0101", "IST0101", "IST0101"]
    assert [m["reference"] for m in listed] == [f"{broken}:{n}" for n in (21, 8, 14, 12)]

    suppress = ["-S", "IST0101=VirtualService bookinfo/*", "-S", "IST0106=DestinationRule *"]
    assert main(["analyze", str(mesh), *suppress]) == 0
    capsys.readouterr()


def test_the_failure_threshold(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "dr.yaml"
    config.write_text(
        "apiVersion: networking.istio.io/v1\nkind: DestinationRule\n"
        "metadata: {name: x, namespace: shop}\nspec: {host: nowhere.example.com}\n"
    )
    assert main(["analyze", str(config)]) == 0  # IST0174 is a warning
    assert "Warning [IST0174]" in capsys.readouterr().out
    assert main(["analyze", str(config), "--failure-threshold", "Warning"]) == 79
    assert main(["analyze", str(config), "--output-threshold", "Error"]) == 0
    assert "No validation issues" in capsys.readouterr().err


def test_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze"]) == 2
    assert "give files or directories" in capsys.readouterr().err
    assert main(["analyze", str(tmp_path / "nope")]) == 2
    assert "no such file or directory" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exited:
        main(["analyze", str(tmp_path), "--failure-threshold", "fatal"])
    assert exited.value.code == 2
    assert main(["analyze", "--admin", "127.0.0.1:1", "--request-timeout", "2"]) == 2
    assert "cannot read http://127.0.0.1:1/debug/analyzez" in capsys.readouterr().err
    assert main(["analyze", "-L"]) == 0
    assert "virtualservice.GatewayAnalyzer" in capsys.readouterr().out


def test_standard_input(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(BROKEN.split("---")[0]))
    assert main(["analyze", "-"]) == 79
    assert 'Referenced gateway not found: "bookinfo/no-such-gateway"' in capsys.readouterr().out

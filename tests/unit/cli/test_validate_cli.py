"""`pilothouse validate` as a user runs it: exit codes, file:line output, JSON output."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pilothouse.cli.main import main

ROOT = Path(__file__).resolve().parents[3]
BAD = """\
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: reviews, namespace: shop}
spec:
  hosts: [reviews]
  http:
  - route:
    - destination: {host: reviews, subset: v1}
      weight: 60
    - destination: {host: reviews, subset: v2}
      weight: 60
"""
WARN = """\
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: mirror}
spec:
  hosts: [m]
  http:
  - route:
    - destination: {host: m}
    mirror: {host: shadow}
    mirrorPercent: 5
"""


def test_examples_are_valid(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(ROOT / "examples")]) == 0
    captured = capsys.readouterr()
    assert "error" not in captured.out
    assert "valid:" in captured.err


def test_invalid_file_exit_1_with_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(BAD)
    assert main(["validate", str(bad)]) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"{bad}:")
    assert "VirtualService shop/reviews: spec.http[0]" in out
    assert "100" in out


def test_warnings_keep_exit_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "warn.yaml"
    path.write_text(WARN)
    assert main(["validate", str(path)]) == 0
    assert "warning: " in capsys.readouterr().out


def test_json_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "bad.yaml").write_text(BAD)
    (tmp_path / "warn.yaml").write_text(WARN)
    assert main(["validate", "-o", "json", str(tmp_path)]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["valid"] is False and report["validObjects"] == 1
    errors = [p for p in report["problems"] if p["severity"] == "error"]
    assert errors[0]["kind"] == "VirtualService" and errors[0]["namespace"] == "shop"
    assert errors[0]["file"].endswith("bad.yaml") and errors[0]["line"] >= 1


def test_duplicates_across_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a.yaml").write_text(WARN)
    (tmp_path / "b.yaml").write_text(WARN)
    assert main(["validate", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert f"{tmp_path / 'b.yaml'}:1:" in out and f"also defined at {tmp_path / 'a.yaml'}:1" in out


def test_missing_path_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "/no/such/place"]) == 2
    assert "no such file or directory" in capsys.readouterr().err


def test_console_script_and_version() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pilothouse.cli.main", "version"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.startswith("pilothouse ")
    usage = subprocess.run(
        [sys.executable, "-m", "pilothouse.cli.main", "validate"], capture_output=True, text=True
    )
    assert usage.returncode == 2


GRPC = """\
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: greeter}
spec:
  hosts: [greeter.default.svc.cluster.local]
  resolution: STATIC
  ports: [{number: 50051, name: grpc, protocol: GRPC}]
  endpoints: [{address: 127.0.0.1}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: greeter}
spec:
  hosts: [greeter.default.svc.cluster.local]
  http:
  - match: [{authority: {exact: x}}]
    route: [{destination: {host: greeter.default.svc.cluster.local}}]
"""


def test_proxyless_grpc_limits_are_warnings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "grpc.yaml"
    path.write_text(GRPC)
    assert main(["validate", str(path)]) == 0
    out = capsys.readouterr().out
    assert f"{path}:10: VirtualService default/greeter: warning: " in out
    assert "spec.http[0].match[0].authority" in out and "proxyless gRPC" in out

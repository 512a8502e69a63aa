"""`pilothouse validate` as a user runs it: exit codes, file:line output, JSON output."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pilothouse.cli.main import main
from pilothouse.config.load import Loader, LoadResult

ROOT = Path(__file__).resolve().parents[2]
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


def test_a_field_name_with_line_breaks_still_prints_one_line_per_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Python splits lines at \\x1e, \\x85 and \\u2028 as well as \\n: an unknown field
    named with them is escaped, so each problem stays one ``file:line:`` line."""
    bad = tmp_path / "bad.json"
    bad.write_text(
        '{"apiVersion": "networking.istio.io/v1", "kind": "VirtualService",'
        ' "metadata": {"name": "r", "namespace": "shop"},'
        ' "spec": {"hosts": ["r"], "http": [{"match": [{"\\u001e\\n\\u2028": 0}],'
        ' "route": [{"destination": {"host": "r"}}]}]}}'
    )
    assert main(["validate", str(bad)]) == 1
    lines = capsys.readouterr().out.splitlines()
    problems = [line for line in lines if line.startswith(f"{bad}:1: ")]
    assert len(problems) == 1, lines
    assert "\\x1e\\x0a\\u2028: unknown field" in problems[0]


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


def bookinfo_copy(tmp_path: Path) -> Path:
    mesh = tmp_path / "m"
    shutil.copytree(ROOT / "examples", mesh)
    return mesh / "bookinfo"


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def test_the_three_one_line_edits_are_clean_problems(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The edits of issue 6: each is one problem line with file:line, no traceback."""
    bookinfo = bookinfo_copy(tmp_path)
    edit(bookinfo / "sidecar.yaml", "\nkind: Sidecar", "\nkind: !!bool Sidecar")
    edit(bookinfo / "services.yaml", "  name: details\n", "  name: !!timestamp x\n")
    edit(bookinfo / "gateway.yaml", "number: 8080", "number: '" + "9" * 5000 + "'")
    assert main(["validate", str(bookinfo.parent)]) == 1
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert len(lines) == 3, captured.out
    assert lines[0].startswith(f"{bookinfo / 'gateway.yaml'}:11: Gateway bookinfo/")
    assert "spec.servers[0].port.number: number too long" in lines[0]
    assert lines[1].startswith(f"{bookinfo / 'services.yaml'}:20: ServiceEntry bookinfo/x: ")
    assert "metadata.name: 'x' is not a valid !!timestamp value" in lines[1]
    assert lines[2].startswith(f"{bookinfo / 'sidecar.yaml'}:4: Sidecar bookinfo/")
    assert "kind: 'Sidecar' is not a valid !!bool value" in lines[2]
    assert "invalid:" in captured.err and "3 error(s)" in captured.err
    assert "Traceback" not in captured.out + captured.err
    assert "set_int_max_str_digits" not in captured.out


def test_a_failure_inside_the_loader_is_a_problem_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    bookinfo = bookinfo_copy(tmp_path)
    real = Loader.load_bytes

    def load_bytes(self: Loader, data: bytes, file: str) -> LoadResult:
        if file.endswith("routing.yaml"):
            raise RuntimeError("a bug")
        return real(self, data, file)

    monkeypatch.setattr(Loader, "load_bytes", load_bytes)
    assert main(["validate", "-o", "json", str(bookinfo)]) == 1
    report = json.loads(capsys.readouterr().out)
    (problem,) = report["problems"]
    assert problem["file"] == str(bookinfo / "routing.yaml")
    assert "internal error" in problem["message"] and "RuntimeError" in problem["message"]
    assert report["validObjects"] > 10


def test_undecodable_file_names_and_bytes_are_reported_not_raised(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "names"
    folder.mkdir()
    raw = os.fsencode(folder) + b"/bad\xff.yaml"
    with open(raw, "wb") as handle:
        handle.write(b"apiVersion: networking.istio.io/v1\nkind: Gateway\nmetadata: {name: \xfe}\n")
    assert main(["validate", str(folder)]) == 1
    out = capsys.readouterr().out
    reason = "not valid UTF-8 text: byte(s) 0xfe at line 3, column 18"
    assert out == f"{folder}/bad\\xff.yaml:3: {reason}\n"
    assert main(["validate", "-o", "json", str(folder)]) == 1
    (problem,) = json.loads(capsys.readouterr().out)["problems"]
    assert problem["file"] == f"{folder}/bad\\xff.yaml" and problem["line"] == 3

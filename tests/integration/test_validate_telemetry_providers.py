"""`pilothouse validate --mesh FILE`: the providers Telemetry objects name, checked
against that mesh config's extensionProviders (an unknown one, or one of another purpose,
is an error naming the field; one accepted and not applied is a warning); without
``--mesh`` only the object's own rules apply."""

from __future__ import annotations

from pathlib import Path

import pytest

from pilothouse.cli.main import main

MESH = """\
extensionProviders:
- name: file-log
  envoyFileAccessLog: {path: /dev/stdout}
- name: zipkin
  zipkin: {service: zipkin.obs.svc.cluster.local, port: 9411}
- name: dd
  datadog: {service: dd.obs.svc.cluster.local, port: 8126}
"""
TELEMETRY = """\
apiVersion: telemetry.istio.io/v1
kind: Telemetry
metadata: {name: logs, namespace: shop}
spec:
  accessLogging:
  - providers: [{name: file-log}, {name: envoy}, {name: missing}, {name: zipkin}]
  tracing:
  - providers: [{name: dd}]
  metrics:
  - providers: [{name: prometheus}]
"""


def test_unknown_and_misused_providers_are_errors_naming_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "mesh.yaml").write_text(MESH)
    (tmp_path / "t.yaml").write_text(TELEMETRY)
    code = main(["validate", "--mesh", str(tmp_path / "mesh.yaml"), str(tmp_path / "t.yaml")])
    out = capsys.readouterr().out
    assert code == 1
    lines = [line.split("Telemetry shop/logs: ", 1)[1] for line in out.splitlines()]
    assert lines == [
        "spec.accessLogging[0].providers[2].name: provider 'missing' is not defined in the"
        " mesh config's extensionProviders",
        "spec.accessLogging[0].providers[3].name: provider 'zipkin' cannot be used for"
        " accessLogging",
        "warning: spec.tracing[0].providers[0].name: provider 'dd' (datadog): accepted; not"
        " applied by pilothouse",
    ]


def test_without_a_mesh_config_provider_names_are_not_looked_up(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "t.yaml").write_text(TELEMETRY)
    assert main(["validate", str(tmp_path / "t.yaml")]) == 0
    assert capsys.readouterr().out == ""


def test_an_unreadable_mesh_config_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "t.yaml").write_text(TELEMETRY)
    (tmp_path / "mesh.yaml").write_text("connectTimeout: soon\n")
    assert main(["validate", "--mesh", str(tmp_path / "mesh.yaml"), str(tmp_path / "t.yaml")]) == 2
    assert "--mesh: " in capsys.readouterr().err

"""Plain Kubernetes kinds beside Istio config: ``validate`` skips them with a note.

A mesh's directory often holds the Deployments and Services of the application too.
``validate`` recognises the plain kinds of the table (by kind and apiVersion) and skips
each with a warning naming it, so the directory is valid when its Istio config is; the
loader everything else uses (the sources, ``apply``, the webhook's schema lookups) still
knows them as kinds it does not serve.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pilothouse.cli.main import main
from pilothouse.config.load import Loader
from pilothouse.config.validation.report import Severity
from pilothouse.kinds.table import KINDS, SCHEMAS

MANIFESTS = """\
apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: reviews, namespace: shop}
spec: {replicas: 2}
---
apiVersion: v1
kind: Service
metadata: {name: reviews, namespace: shop}
spec: {ports: [{port: 9080}]}
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: reviews, namespace: shop}
spec:
  hosts: [reviews]
  http: [{route: [{destination: {host: reviews}}]}]
"""


def test_validate_skips_plain_kinds_with_a_note(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "app.yaml").write_text(MANIFESTS)
    assert main(["validate", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert lines == [
        f"{tmp_path / 'app.yaml'}:2: warning: Namespace (v1) is a Kubernetes kind,"
        " not Istio config: skipped",
        f"{tmp_path / 'app.yaml'}:6: warning: Deployment (apps/v1) is a Kubernetes kind,"
        " not Istio config: skipped",
        f"{tmp_path / 'app.yaml'}:11: warning: Service (v1) is a Kubernetes kind,"
        " not Istio config: skipped",
    ]
    assert "valid: 1 valid object(s), 0 error(s), 3 warning(s)" in captured.err


def test_validate_still_fails_on_unknown_kinds_and_wrong_versions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "odd.yaml").write_text(
        "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n---\n"
        "apiVersion: networking.istio.io/v1\nkind: Deployment\nmetadata: {name: d}\n"
    )
    assert main(["validate", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "unknown kind 'Widget'" in out and "unknown kind 'Deployment'" in out


def test_only_a_loader_asked_to_skips_plain_kinds() -> None:
    strict = Loader(SCHEMAS).load_text(MANIFESTS, "app.yaml")
    assert [c.kind for c in strict.configs] == ["VirtualService"]
    assert {p.severity for p in strict.problems} == {Severity.ERROR}
    assert all("unknown kind" in p.message for p in strict.problems)
    lenient = Loader(SCHEMAS, skip_plain=True).load_text(MANIFESTS, "app.yaml")
    assert [c.kind for c in lenient.configs] == ["VirtualService"]
    assert {p.severity for p in lenient.problems} == {Severity.WARNING}
    assert lenient.ok


def test_plain_kinds_are_known_and_never_served() -> None:
    plain = [k for k in KINDS if k.plain is not None]
    names = {k.name for k in plain}
    assert {"Service", "Deployment", "Namespace", "ConfigMap", "Secret", "ServiceAccount"} <= names
    assert {"Pod", "StatefulSet", "Job"} <= names
    for kind in plain:
        assert not kind.served and kind.schema is None
        assert SCHEMAS.by_kind(kind.name) is None
        assert SCHEMAS.plain_kind(kind.name) is kind.plain
        assert kind.plain.api_versions

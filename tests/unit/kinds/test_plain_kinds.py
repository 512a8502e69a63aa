"""Plain Kubernetes kinds beside Istio config: ``validate`` skips and counts them.

A mesh's directory often holds the Deployments and Services of the application too.
``validate`` recognises the plain kinds of the table (by kind and apiVersion), and any
object outside Istio's API groups, and counts each as skipped (``--strict-kinds`` makes
them errors), so the directory is valid when its Istio config is; the
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


def test_validate_skips_plain_kinds_and_counts_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "app.yaml").write_text(MANIFESTS)
    assert main(["validate", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    # the Service's one port has no name: istioctl's naming check, as a warning
    # (the Deployment has no pod template, so its problems point at its spec)
    assert captured.out.splitlines() == [
        f"{tmp_path / 'app.yaml'}:8: Deployment shop/reviews: warning: the pod template has no"
        " 'app' label (app or app.kubernetes.io/name): Istio's telemetry cannot name the"
        " workload's service",
        f"{tmp_path / 'app.yaml'}:8: Deployment shop/reviews: warning: the pod template has no"
        " 'version' label (version or app.kubernetes.io/version): Istio's telemetry cannot"
        " name the workload's version",
        f"{tmp_path / 'app.yaml'}:13: Service shop/reviews: warning: port 9080: no name does"
        " not follow Istio's <protocol>[-<suffix>] convention and there is no appProtocol;"
        " Istio will detect the protocol (name the port like http-web or set appProtocol: http)",
    ]
    assert (
        "valid: 1 valid object(s), 3 skipped as not Istio config"
        " (Deployment 1, Namespace 1, Service 1), 0 error(s), 3 warning(s)" in captured.err
    )


def test_validate_skips_other_groups_but_not_unknown_istio_kinds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "odd.yaml").write_text(
        "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n---\n"
        "apiVersion: networking.istio.io/v1\nkind: Deployment\nmetadata: {name: d}\n---\n"
        "apiVersion: telemetry.istio.io/v1\nkind: Mystery\nmetadata: {name: t}\n"
    )
    assert main(["validate", str(tmp_path)]) == 1
    captured = capsys.readouterr()
    assert "Widget" not in captured.out
    assert "unknown kind 'Deployment'" in captured.out and "unknown kind 'Mystery'" in captured.out
    assert "1 skipped as not Istio config (Widget 1)" in captured.err


def test_strict_kinds_makes_them_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "app.yaml").write_text(MANIFESTS)
    assert main(["validate", "--strict-kinds", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    for kind in ("Namespace", "Deployment", "Service"):
        assert f"unknown kind {kind!r}" in out


def test_only_a_loader_asked_to_skips_plain_kinds() -> None:
    strict = Loader(SCHEMAS).load_text(MANIFESTS, "app.yaml")
    assert [c.kind for c in strict.configs] == ["VirtualService"]
    assert {p.severity for p in strict.problems} == {Severity.ERROR}
    assert all("unknown kind" in p.message for p in strict.problems)
    lenient = Loader(SCHEMAS, skip_plain=True).load_text(MANIFESTS, "app.yaml")
    assert [c.kind for c in lenient.configs] == ["VirtualService"]
    assert lenient.api_versions == ("networking.istio.io/v1",)
    assert [(r.data["kind"], r.line) for r in lenient.skipped] == [
        ("Namespace", 1),
        ("Deployment", 5),
        ("Service", 10),
    ]
    assert not lenient.problems and lenient.ok


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

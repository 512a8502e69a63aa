"""`pilothouse validate` over real manifests: Istio config mixed with Kubernetes objects.

The Istio objects are validated; Service, Deployment, Namespace, ConfigMap and objects of
other API groups are counted as skipped; Services and Deployments get istioctl's checks
as warnings; one object written in several API versions is one error naming each place.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pilothouse.cli.main import main

APP = """\
apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: shop}
data: {a: b}
---
apiVersion: v1
kind: Service
metadata: {name: reviews, namespace: shop}
spec:
  selector: {app: reviews}
  ports:
  - {name: http-web, port: 9080}
  - {name: grpc, port: 9090}
  - {name: web, port: 8080}
  - {name: metrics, port: 9091, appProtocol: prometheus}
  - {name: h2, port: 9092, appProtocol: kubernetes.io/h2c}
  - {name: db, port: 3306}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: reviews-v1, namespace: shop}
spec:
  selector: {matchLabels: {app: reviews}}
  template:
    metadata:
      labels: {app: reviews}
    spec: {containers: [{name: r, image: reviews}]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: ratings, namespace: shop}
spec:
  template:
    metadata:
      labels: {app.kubernetes.io/name: ratings, app.kubernetes.io/version: v2}
---
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata: {name: reviews, namespace: shop}
---
apiVersion: networking.istio.io/v1alpha3
kind: VirtualService
metadata: {name: reviews, namespace: shop}
spec:
  hosts: [reviews]
  http: [{route: [{destination: {host: reviews}}]}]
"""
AGAIN = """\
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: reviews, namespace: shop}
spec:
  hosts: [reviews]
  http: [{route: [{destination: {host: reviews}}]}]
"""


def test_mixed_manifest_is_valid_with_skips_counted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "app.yaml").write_text(APP)
    assert main(["validate", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert (
        "valid: 1 valid object(s), 6 skipped as not Istio config (ConfigMap 1, Deployment 2,"
        " Namespace 1, Service 1, ServiceMonitor 1), 0 error(s), 3 warning(s)" in captured.err
    )
    lines = captured.out.splitlines()
    app = tmp_path / "app.yaml"
    # port names and appProtocol: only 'web' (8080) and appProtocol 'prometheus' (9091)
    # leave Istio guessing; http-web, grpc, kubernetes.io/h2c and port 3306 are known
    assert lines[0].startswith(f"{app}:18: Service shop/reviews: warning: port 8080: name 'web'")
    assert lines[1].startswith(f"{app}:19: Service shop/reviews: warning: port 9091:")
    assert "appProtocol 'prometheus' is not a protocol Istio knows" in lines[1]
    # the labelled pod template lacks only 'version'; the app.kubernetes.io forms count
    assert lines[2].startswith(f"{app}:30: Deployment shop/reviews-v1: warning:")
    assert "no 'version' label" in lines[2]
    assert len(lines) == 3


def test_json_counts_skipped_kinds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "app.yaml").write_text(APP)
    assert main(["validate", "-o", "json", str(tmp_path)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["validObjects"] == 1 and report["skippedObjects"] == 6
    assert report["skippedKinds"]["Deployment"] == 2
    assert report["warnings"] == 3 and report["errors"] == 0


def test_strict_kinds_restores_the_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "app.yaml").write_text(APP)
    assert main(["validate", "--strict-kinds", str(tmp_path)]) == 1
    captured = capsys.readouterr()
    assert captured.out.count("unknown kind") == 6
    assert "skipped" not in captured.err


def test_one_object_in_two_api_versions_is_reported_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "a.yaml").write_text(APP)
    (tmp_path / "b.yaml").write_text(AGAIN)
    (tmp_path / "c.yaml").write_text(AGAIN)
    assert main(["validate", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    errors = [line for line in out.splitlines() if "several API versions" in line]
    assert errors == [
        f"{tmp_path / 'b.yaml'}:1: VirtualService shop/reviews: the same object in several API"
        f" versions (networking.istio.io/v1alpha3 at {tmp_path / 'a.yaml'}:45,"
        f" networking.istio.io/v1 at {tmp_path / 'b.yaml'}:1,"
        f" networking.istio.io/v1 at {tmp_path / 'c.yaml'}:1): they are one object, the last"
        " one applied replaces the others; keep one"
    ]
    assert "duplicate object" not in out


def test_istio_examples_with_kubernetes_flow_sequences(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Istio's own valid ServiceEntry example: an IPv6 address in a flow sequence and a
    partial-wildcard host (a warning, as istiod)."""
    (tmp_path / "se.yaml").write_text(
        "apiVersion: networking.istio.io/v1\nkind: ServiceEntry\nmetadata: {name: full}\n"
        "spec:\n  hosts: [example.com]\n  addresses: [1.2.3.4, 001:db8::]\n"
        "  ports: [{name: foo, protocol: HTTP, number: 1234}]\n  resolution: DNS\n---\n"
        "apiVersion: networking.istio.io/v1alpha3\nkind: ServiceEntry\n"
        "metadata: {name: partial-wildcard}\nspec:\n  hosts: ['*x']\n"
    )
    assert main(["validate", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert "valid: 2 valid object(s), 0 error(s), 1 warning(s)" in captured.err
    assert "partial wildcard host '*x'" in captured.out


PROXY_CONFIGS = """\
apiVersion: networking.istio.io/v1beta1
kind: ProxyConfig
metadata: {name: threads, namespace: shop}
spec: {concurrency: 2}
---
apiVersion: networking.istio.io/v1beta1
kind: ProxyConfig
metadata: {name: env, namespace: shop}
spec: {environmentVariables: {ISTIO_META_A: b}}
---
apiVersion: networking.istio.io/v1beta1
kind: ProxyConfig
metadata: {name: ratings, namespace: shop}
spec: {selector: {matchLabels: {app: ratings}}, concurrency: 1}
"""


def test_a_second_namespace_wide_proxy_config_is_warned_where_it_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without creation times, the first by name applies (istiod's order after age)."""
    (tmp_path / "pc.yaml").write_text(PROXY_CONFIGS)
    assert main(["validate", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    warnings = [line for line in out.splitlines() if "ProxyConfig" in line]
    assert warnings == [
        f"{tmp_path / 'pc.yaml'}:1: ProxyConfig shop/threads: warning: ignored: namespace shop"
        " has more than one ProxyConfig without a selector and env applies"
    ]

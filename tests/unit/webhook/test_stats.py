"""``ValidationStats``: every review result lands in the counter istiod would bump."""

from __future__ import annotations

import json

from pilothouse.webhook.review import review
from pilothouse.webhook.stats import ValidationStats


def body(obj: object, operation: str = "CREATE") -> bytes:
    request = {"uid": "u", "operation": operation, "namespace": "ns", "object": obj}
    review_ = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
    return json.dumps(review_).encode()


GOOD = {
    "apiVersion": "networking.istio.io/v1",
    "kind": "Gateway",
    "metadata": {"name": "gw"},
    "spec": {
        "selector": {"istio": "ingressgateway"},
        "servers": [{"port": {"number": 80, "name": "http", "protocol": "HTTP"}, "hosts": ["*"]}],
    },
}


def test_counts_by_outcome_kind_reason_and_status() -> None:
    stats = ValidationStats()
    for request, content_type in [
        (body(GOOD), "application/json"),
        (body(GOOD), "application/json"),
        (body({**GOOD, "spec": {"servers": "no"}}), "application/json"),
        (body({**GOOD, "kind": "NoSuchKind"}), "application/json"),
        (body(GOOD, operation="DELETE"), "application/json"),
        (b"", "application/json"),
        (b"{}", "text/plain"),
        (b"{", "application/json"),
    ]:
        stats.record(review(request, content_type))
    counts = stats.snapshot()
    assert dict(counts.passed) == {"Gateway": 2}
    assert dict(counts.failed) == {
        ("Gateway", "invalid_config"): 1,
        ("NoSuchKind", "unknown_type"): 1,
        ("", "unsupported_operation"): 1,
    }
    assert dict(counts.http_error) == {400: 2, 415: 1}
    assert (counts.total_passed, counts.total_failed, counts.total_http_errors) == (2, 3, 3)


def test_a_snapshot_does_not_move() -> None:
    stats = ValidationStats()
    before = stats.snapshot()
    stats.record(review(b"", "application/json"))
    assert before.total_http_errors == 0
    assert stats.snapshot().total_http_errors == 1

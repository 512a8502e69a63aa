"""The Kubernetes service registry given objects whose fields have the wrong JSON type.

The feeds are the in-memory ones of :mod:`tests.memory_kube` (no API server can run
here), delivering events straight to the registry's handlers: a Service whose ports are
not objects or an EndpointSlice whose endpoints are not objects is skipped and logged
once per distinct problem, and the registry keeps its last good state for it.
"""

from __future__ import annotations

import copy
import logging

import pytest

from pilothouse.sources.kubernetes.events import KubeEvent, WatchEventType
from tests.unit.registry.test_kube_registry import NS, REVIEWS, Harness, reviews_mesh


def test_wrong_types_in_a_service_or_slice_keep_the_last_good_state(
    caplog: pytest.LogCaptureFixture,
) -> None:
    h = Harness()
    reviews_mesh(h)
    before = (h.registry.service(REVIEWS), h.registry.endpoints(REVIEWS))
    assert before[0] is not None and len(before[1]) == 2
    service = copy.deepcopy(h.cluster.services.get(NS, "reviews"))
    service["spec"]["ports"] = [1, "http"]
    piece = copy.deepcopy(h.cluster.endpointslices.get(NS, "reviews-abc"))
    piece["endpoints"] = ["10.0.0.9"]
    with caplog.at_level(logging.WARNING, "pilothouse.registry.kubernetes"):
        for _ in range(5):
            for handler in h.cluster.services._handlers:
                handler(KubeEvent(WatchEventType.MODIFIED, service))
            for handler in h.cluster.endpointslices._handlers:
                handler(KubeEvent(WatchEventType.MODIFIED, piece))
    assert (h.registry.service(REVIEWS), h.registry.endpoints(REVIEWS)) == before
    logged = [r.getMessage() for r in caplog.records]
    assert len(logged) == 2, logged
    assert any(f"services: malformed object {NS}/reviews skipped" in m for m in logged)
    assert any(
        f"endpointslices.discovery.k8s.io: malformed object {NS}/reviews-abc" in m for m in logged
    )

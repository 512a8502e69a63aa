"""``serve --write-status`` writes the analysis of the served config into each Istio
object's ``status.validationMessages``, as istiod does, against the fake API server the
kube tests use (a fake: no real API server can run here).

The source and the analysis follower are wired as ``serve`` wires them
(:func:`~pilothouse.analysis.status.status_writer`); a finding that goes away after a
fix leaves the status, and an object with nothing to say (the ServiceEntry) gets no
status at all.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pilothouse.analysis.follower import AnalysisFollower
from pilothouse.analysis.status import status_writer
from pilothouse.config.model import ConfigKey
from tests.kube.fake_apiserver import FakeApiServer
from tests.kube.test_config_source import VS, Running, api, obj, source, until

__all__ = ["api"]  # the fake API server fixture


def service_entry() -> dict[str, Any]:
    spec = {
        "hosts": ["reviews.default.svc.cluster.local"],
        "location": "MESH_INTERNAL",
        "resolution": "DNS",
        "ports": [{"number": 9080, "name": "http", "protocol": "HTTP"}],
    }
    return obj("ServiceEntry", "reviews", "default", spec)


def routed(name: str, *gateways: str) -> dict[str, Any]:
    host = "reviews.default.svc.cluster.local"
    spec: dict[str, Any] = {"hosts": [host], "http": [{"route": [{"destination": {"host": host}}]}]}
    if gateways:
        spec["gateways"] = list(gateways)
    return obj("VirtualService", name, "default", spec)


async def test_write_status_adds_the_analysis_findings(api: FakeApiServer, tmp_path: Path) -> None:
    api.create(service_entry())
    api.create(routed("lost", "no-such-gateway"))
    async with Running(source(api, tmp_path, write_status=True)) as found:
        follower = AnalysisFollower(found.store, logs=False, on_result=status_writer([found]))

        def status(name: str, resource: str = VS) -> dict[str, Any]:
            got = api.get(resource, "default", name)
            assert got is not None
            return dict(got.get("status") or {})

        await follower.analyze_now()
        await until(lambda: bool(status("lost").get("validationMessages")))
        assert status("lost")["validationMessages"] == [
            {
                "type": {"name": "ReferencedResourceNotFound", "code": "IST0101"},
                "level": "ERROR",
                "documentationUrl": "https://istio.io/latest/docs/reference/config/analysis/ist0101/",
                "message": 'Referenced gateway not found: "default/no-such-gateway"',
            }
        ]
        assert status("reviews", "serviceentries.networking.istio.io") == {}
        # A status write brings the object back through the watch: it is not written again.
        writes = [r for r in api.requests if r.method != "GET"]
        await follower.analyze_now()
        assert [r for r in api.requests if r.method != "GET"] == writes

        # Fixed, the finding leaves the status with the next analysis.
        api.apply(routed("lost"))
        key = ConfigKey("VirtualService", "default", "lost")
        await until(lambda: not found.store.get(key).spec.gateways)
        await follower.analyze_now()
        await until(lambda: "validationMessages" not in status("lost"))
        assert all(r.path.endswith("/status") for r in api.requests if r.method != "GET")


async def test_without_write_status_the_analysis_writes_nothing(
    api: FakeApiServer, tmp_path: Path
) -> None:
    api.create(routed("lost", "no-such-gateway"))
    async with Running(source(api, tmp_path)) as found:
        assert status_writer([found]) is None
        found.set_analysis({ConfigKey("VirtualService", "default", "lost"): [{"level": "ERROR"}]})
        assert [r for r in api.requests if r.method != "GET"] == []

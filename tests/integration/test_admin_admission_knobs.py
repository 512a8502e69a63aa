"""The admission controller's knobs over the admin API: changed over HTTP, in force for
the next stream (``serve`` registers them next to the others with
``register_admission_knobs``)."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest

from pilothouse.protocol.type_urls import CDS
from pilothouse.settings import knobs as settings_knobs
from tests.integration.ads_stream import open_ads, sotw_request
from tests.integration.serve_in_process import serve_in_process


async def test_admission_rate_burst_and_connections_change_over_http(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    async with serve_in_process(monkeypatch, tmp_path) as plane:
        admission = plane.discovery.admission
        listed = await plane.request("GET", "/admin/knobs")
        knobs = {k["name"]: k for k in listed.body["knobs"]}
        assert knobs["admission.rate"]["value"] == admission.rate
        (variable,) = [k.env for k in settings_knobs() if k.path == "xds.admission.rate"]
        assert knobs["admission.rate"]["setting"] == variable
        for name, value in (
            ("admission.rate", 5.5),
            ("admission.burst", 3),
            ("admission.max_connections", 40),
        ):
            answer = await plane.request("PUT", f"/admin/knobs/{name}", value)
            assert answer.status == 200 and answer.body["new"] == value, answer.body
        assert (admission.rate, admission.burst, admission.max_connections) == (5.5, 3, 40)
        refused = await plane.request("PUT", "/admin/knobs/admission.burst", 0)
        assert refused.status == 400 and refused.body["error"].startswith("admission.burst: ")
        assert admission.burst == 3

        # In force for the next stream: one open, the limit lowered to 1, the next refused.
        first = await open_ads(plane.bound.xds_port)
        try:
            await first.send(
                sotw_request(CDS, "sidecar~10.0.0.1~a-1.default~default.svc.cluster.local")
            )
            await first.read()
            await plane.request("PUT", "/admin/knobs/admission.max_connections", 1)
            second = await open_ads(plane.bound.xds_port)
            try:
                await second.send(
                    sotw_request(CDS, "sidecar~10.0.0.2~a-2.default~default.svc.cluster.local")
                )
                code, _ = await second.status()
            finally:
                await second.close()
            assert code == grpc.StatusCode.UNAVAILABLE
        finally:
            await first.close()

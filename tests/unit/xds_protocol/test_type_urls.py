"""Type URLs, short names, the wildcard rule and push order."""

from __future__ import annotations

import pytest

from pilothouse.protocol import type_urls as t


def test_type_urls_are_envoy_v3_names() -> None:
    assert t.CDS == "type.googleapis.com/envoy.config.cluster.v3.Cluster"
    assert t.EDS == "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"
    assert t.LDS == "type.googleapis.com/envoy.config.listener.v3.Listener"
    assert t.RDS == "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"
    assert t.SDS == "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret"
    assert t.ECDS == "type.googleapis.com/envoy.config.core.v3.TypedExtensionConfig"


@pytest.mark.parametrize(
    ("type_url", "wildcard"),
    [
        pytest.param(t.CDS, True, id="cds"),
        pytest.param(t.LDS, True, id="lds"),
        pytest.param(t.EDS, False, id="eds"),
        pytest.param(t.RDS, False, id="rds"),
        pytest.param(t.SDS, False, id="sds"),
        pytest.param(t.ECDS, False, id="ecds"),
        pytest.param("networking.istio.io/v1/ServiceEntry", True, id="mcp-gvk"),
        pytest.param("core/v1alpha1/MeshConfig", True, id="mesh-config"),
        pytest.param("istio.io/debug/syncz", True, id="syncz"),
        pytest.param(t.WDS, True, id="istio-wds"),
    ],
)
def test_is_wildcard_type(type_url: str, wildcard: bool) -> None:
    assert t.is_wildcard_type(type_url) is wildcard
    assert t.is_full_state_type(type_url) is wildcard


def test_short_names_round_trip() -> None:
    for url, short in t.SHORT_NAMES.items():
        assert t.short_name(url) == short
        assert t.type_url_for(short.lower()) == url
    assert t.short_name("networking.istio.io/v1/ServiceEntry") == (
        "networking.istio.io/v1/ServiceEntry"
    )
    assert t.short_name(t.TYPE_PREFIX + "foo.Bar") == "foo.Bar"
    assert t.type_url_for("networking.istio.io/v1/Gateway") == "networking.istio.io/v1/Gateway"


def test_push_order_is_make_before_break() -> None:
    shuffled = [
        "networking.istio.io/v1/ServiceEntry",
        t.SDS,
        t.RDS,
        t.ECDS,
        t.LDS,
        t.EDS,
        t.CDS,
    ]
    ordered = sorted(shuffled, key=t.push_order_key)
    assert ordered[:5] == [t.CDS, t.EDS, t.LDS, t.RDS, t.SDS]
    assert set(ordered[5:]) == {t.ECDS, "networking.istio.io/v1/ServiceEntry"}


def test_cds_warms_eds() -> None:
    assert t.WARMING_DEPENDENCIES[t.CDS] == (t.EDS,)
    assert t.EDS not in t.WARMING_DEPENDENCIES

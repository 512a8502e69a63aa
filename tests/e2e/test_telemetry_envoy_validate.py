"""Real Envoy accepts every access log and tracer the telemetry builder writes:
``envoy --mode validate`` over a static bootstrap whose listeners carry them.

One inbound HTTP listener per variant (file logs in text and JSON with a CEL filter,
OTel access logs, zipkin, OpenTelemetry over gRPC and over HTTP, tracing without a
provider with environment and header tags) and one TCP listener with a file log; the
collectors' clusters are static clusters on 127.0.0.1:1 (validate mode connects to
nothing). A bootstrap whose CEL filter does not parse is refused, so the check can fail.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from google.protobuf import json_format

from pilothouse.config.telemetry_providers import (
    DEFAULT_JSON_LABELS,
    FileLog,
    LogFormat,
    OtelLog,
    OtelTracer,
    ZipkinTracer,
)
from pilothouse.push.telemetry import AccessLog, ModeTelemetry, TracingSettings, Upstream
from pilothouse.push.telemetry_merge import SpanTag
from pilothouse.xds.builders.filter_chain import WeightedCluster
from pilothouse.xds.builders.listener_sidecar import build_inbound_listener, build_outbound_listener
from pilothouse.xds.builders.telemetry import apply_telemetry
from tests.e2e.harness.envoy import validate_bootstrap

HTTP_OPTIONS = "envoy.extensions.upstreams.http.v3.HttpProtocolOptions"
LOOPBACK_ONE = {
    "endpoint": {"address": {"socket_address": {"address": "127.0.0.1", "port_value": 1}}}
}
COLLECTOR = Upstream("collector.obs.svc.cluster.local", 4317)
CLUSTERS = ("outbound|4317||collector.obs.svc.cluster.local", "inbound|8080||", "outbound|5432||pg")


def variants(tmp: Path, cel: str) -> list[ModeTelemetry]:
    text = FileLog("text", str(tmp / "a.log"), LogFormat("%REQ(:PATH)% %RESPONSE_CODE%\n"))
    labels = FileLog(
        "json", str(tmp / "b.log"), LogFormat(labels=DEFAULT_JSON_LABELS, omit_empty_values=True)
    )
    otel_log = OtelLog(
        "otel-log",
        COLLECTOR.host,
        COLLECTOR.port,
        "logs",
        LogFormat(labels=json.dumps({"a": "%PROTOCOL%"})),
    )
    tags = (
        SpanTag("lit", "literal", "v"),
        SpanTag("env", "environment", "HOME", "none"),
        SpanTag("hdr", "header", "x-team", "unknown"),
        SpanTag("fmt", "formatter", "%PROTOCOL%"),
    )
    zipkin = ZipkinTracer("zipkin", COLLECTOR.host, COLLECTOR.port)
    grpc = OtelTracer("otel", COLLECTOR.host, COLLECTOR.port)
    http = OtelTracer(
        "otel-http", COLLECTOR.host, COLLECTOR.port, http_path="v1/traces", timeout_seconds=2
    )
    return [
        ModeTelemetry((AccessLog(text, cel), AccessLog(labels))),
        ModeTelemetry((AccessLog(otel_log, "", COLLECTOR),)),
        ModeTelemetry(tracing=TracingSettings(zipkin, COLLECTOR, 12.5, tags, use_request_id=False)),
        ModeTelemetry(tracing=TracingSettings(grpc, COLLECTOR, 100.0, service_name="app.ns")),
        ModeTelemetry(tracing=TracingSettings(http, COLLECTOR, 1.0, max_path_tag_length=64)),
        ModeTelemetry(tracing=TracingSettings(None, None, 1.0, tags)),
    ]  # fmt: skip


def bootstrap(tmp: Path, cel: str) -> Path:
    listeners: list[Any] = []
    for index, telemetry in enumerate(variants(tmp, cel)):
        listener = build_inbound_listener("127.0.0.1", 20000 + index, "HTTP")
        listener.name = f"variant-{index}"
        apply_telemetry(listener, telemetry, gateway=index % 2 == 0)
        listeners.append(json_format.MessageToDict(listener, preserving_proto_field_name=True))
    tcp = build_outbound_listener(
        "127.0.0.1", 20100, "TCP", destinations=(WeightedCluster("outbound|5432||pg", 1),)
    )
    apply_telemetry(tcp, variants(tmp, cel)[0], gateway=False)
    listeners.append(json_format.MessageToDict(tcp, preserving_proto_field_name=True))
    clusters = [
        {
            "name": name,
            "type": "STATIC",
            "connect_timeout": "1s",
            "typed_extension_protocol_options": {
                HTTP_OPTIONS: {
                    "@type": f"type.googleapis.com/{HTTP_OPTIONS}",
                    "explicit_http_config": {"http2_protocol_options": {}},
                }
            },
            "load_assignment": {
                "cluster_name": name,
                "endpoints": [{"lb_endpoints": [LOOPBACK_ONE]}],
            },
        }
        for name in CLUSTERS
    ]  # fmt: skip
    path = tmp / "bootstrap.json"
    config = {
        "node": {"id": "sidecar~127.0.0.1~app-1.ns~ns.svc.cluster.local", "cluster": "app.ns"},
        "static_resources": {"listeners": listeners, "clusters": clusters},
    }
    path.write_text(json.dumps(config))
    return path


async def test_envoy_accepts_every_access_log_and_tracer(tmp_path: Path) -> None:
    passed, output = await validate_bootstrap(bootstrap(tmp_path, "response.code >= 400"))
    assert passed, output


async def test_a_cel_filter_envoy_cannot_parse_is_refused(tmp_path: Path) -> None:
    passed, output = await validate_bootstrap(bootstrap(tmp_path, "response.code >="))
    assert not passed
    assert "CEL" in output or "expression" in output, output

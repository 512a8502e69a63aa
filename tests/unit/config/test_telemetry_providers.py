"""The mesh config's telemetry fields: extensionProviders of every applied type, the
built-in providers, defaultProviders, the legacy access-log and tracing fields, the
providers accepted and not applied (warned about), and all of it served over MCP."""

from __future__ import annotations

import json

from google.protobuf.any_pb2 import Any as AnyMessage
from google.protobuf.json_format import MessageToDict

from pilothouse.api.istio.mesh.v1alpha1.config_pb2 import MeshConfig
from pilothouse.config.meshconfig import load_mesh_config
from pilothouse.config.telemetry_providers import (
    DEFAULT_JSON_FIELDS,
    DEFAULT_TEXT_FORMAT,
    NO_MESH_TELEMETRY,
    FileLog,
    LogFormat,
    OtelLog,
    OtelTracer,
    UnappliedProvider,
    ZipkinTracer,
)
from pilothouse.xds.generators.api_resource import wrap_mesh_config

MESH = """\
extensionProviders:
- name: text-log
  envoyFileAccessLog:
    path: /tmp/access.log
    logFormat: {text: "%REQ(:METHOD)% %RESPONSE_CODE%"}
- name: json-log
  envoyFileAccessLog:
    logFormat: {labels: {code: "%RESPONSE_CODE%", path: "%REQ(:PATH)%"}}
    omitEmptyValues: true
- name: otel-log
  envoyOtelAls: {service: otel.telemetry.svc.cluster.local, port: 4317}
- name: zipkin
  zipkin: {service: zipkin.telemetry.svc.cluster.local, port: 9411, enable64bitTraceId: true}
- name: otel
  opentelemetry:
    service: telemetry/otel.telemetry.svc.cluster.local
    port: 4318
    http: {path: /v1/traces, timeout: 2s}
- name: dd
  datadog: {service: dd.telemetry.svc.cluster.local, port: 8126}
defaultProviders:
  accessLogging: [text-log]
  tracing: [zipkin]
accessLogFile: /dev/stdout
accessLogEncoding: JSON
enableTracing: true
defaultConfig:
  tracing:
    sampling: 12.5
    maxPathTagLength: 99
    customTags:
      team: {literal: {value: shop}}
"""


def test_every_applied_provider_type_becomes_its_value() -> None:
    loaded = load_mesh_config(MESH, "mesh.yaml")
    telemetry = loaded.mesh.telemetry
    assert telemetry.provider("text-log") == FileLog(
        "text-log", "/tmp/access.log", LogFormat(text="%REQ(:METHOD)% %RESPONSE_CODE%\n")
    )
    json_log = telemetry.provider("json-log")
    assert isinstance(json_log, FileLog) and json_log.path == "/dev/stdout"
    assert json_log.format.labels is not None and json_log.format.omit_empty_values
    assert json.loads(json_log.format.labels) == {"code": "%RESPONSE_CODE%", "path": "%REQ(:PATH)%"}
    otel_log = telemetry.provider("otel-log")
    assert isinstance(otel_log, OtelLog) and otel_log.port == 4317
    assert telemetry.provider("zipkin") == ZipkinTracer(
        "zipkin", "zipkin.telemetry.svc.cluster.local", 9411, trace_id_128bit=False
    )
    assert telemetry.provider("otel") == OtelTracer(
        "otel", "telemetry/otel.telemetry.svc.cluster.local", 4318, 0, "/v1/traces", 2.0
    )
    assert telemetry.provider("dd") == UnappliedProvider("dd", "datadog")
    assert telemetry.default_logging == ("text-log",) and telemetry.default_tracing == ("zipkin",)
    assert telemetry.access_log_file == "/dev/stdout" and telemetry.enable_tracing
    assert telemetry.sampling == 12.5 and telemetry.max_path_tag_length == 99
    assert [(t.name, t.kind, t.value) for t in telemetry.custom_tags] == [
        ("team", "literal", "shop")
    ]


def test_the_built_in_providers_are_there_and_envoy_follows_the_mesh_format() -> None:
    assert NO_MESH_TELEMETRY.provider("envoy") == FileLog(
        "envoy", "/dev/stdout", LogFormat(DEFAULT_TEXT_FORMAT)
    )
    assert NO_MESH_TELEMETRY.provider("prometheus") == UnappliedProvider("prometheus", "prometheus")
    envoy = load_mesh_config(MESH, "mesh.yaml").mesh.telemetry.provider("envoy")
    assert isinstance(envoy, FileLog) and envoy.format.labels is not None
    assert json.loads(envoy.format.labels) == dict(DEFAULT_JSON_FIELDS)  # accessLogEncoding: JSON
    text = load_mesh_config('accessLogFormat: "%PROTOCOL%"\n', "m.yaml").mesh.telemetry
    assert text.provider("envoy") == FileLog("envoy", "/dev/stdout", LogFormat("%PROTOCOL%\n"))


def test_providers_not_applied_or_malformed_are_warned_with_their_line() -> None:
    loaded = load_mesh_config(MESH, "mesh.yaml")
    assert loaded.warnings == (
        "mesh.yaml:19: extensionProviders[5]: datadog: accepted; not applied by pilothouse",
    )  # defaultConfig.tracing is read (not warned about as the other defaultConfig fields)
    bad = load_mesh_config(
        "extensionProviders:\n- name: z\n  zipkin: {port: 9411}\n- name: z\n  prometheus: {}\n",
        "m.yaml",
    )
    assert bad.warnings == (
        "m.yaml:2: extensionProviders[0]: zipkin: service and port are required",
        "m.yaml:4: extensionProviders[1]: provider 'z' is defined twice; the last wins",
        "m.yaml:4: extensionProviders[1]: prometheus: accepted; not applied by pilothouse",
    )


def test_the_telemetry_fields_are_served_over_mcp_as_written() -> None:
    loaded = load_mesh_config(MESH, "mesh.yaml")
    served = AnyMessage.FromString(wrap_mesh_config(loaded.mesh))
    sent = MessageToDict(MeshConfig.FromString(served.value))
    written = MessageToDict(loaded.message)
    for key in (
        "extensionProviders", "defaultProviders", "accessLogFile", "accessLogEncoding",
        "enableTracing", "defaultConfig",
    ):  # fmt: skip
        assert sent[key] == written[key], key
    assert sent["defaultConfig"]["tracing"]["sampling"] == 12.5

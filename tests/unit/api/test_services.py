"""gRPC method paths and Any type URLs of the generated API are Istio's."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from google.protobuf import any_pb2
from google.protobuf.message import Message
from google.rpc import status_pb2  # type: ignore[import-untyped]

from pilothouse.api.istio.mcp.v1alpha1 import mcp_pb2, mcp_pb2_grpc, resource_pb2
from pilothouse.api.istio.mesh.v1alpha1 import config_pb2
from pilothouse.api.istio.networking.v1alpha3 import (
    destination_rule_pb2,
    gateway_pb2,
    service_entry_pb2,
    sidecar_pb2,
    virtual_service_pb2,
    workload_entry_pb2,
    workload_group_pb2,
)
from pilothouse.api.istio.security.v1alpha1 import ca_pb2, ca_pb2_grpc
from pilothouse.api.istio.security.v1beta1 import peer_authentication_pb2

from .generated_modules import file_descriptors

# path -> (request type, response type, client streams, server streams)
METHODS = {
    "/istio.mcp.v1alpha1.ResourceSource/EstablishResourceStream": (
        "istio.mcp.v1alpha1.RequestResources",
        "istio.mcp.v1alpha1.Resources",
        True,
        True,
    ),
    "/istio.mcp.v1alpha1.ResourceSink/EstablishResourceStream": (
        "istio.mcp.v1alpha1.Resources",
        "istio.mcp.v1alpha1.RequestResources",
        True,
        True,
    ),
    "/istio.mcp.v1alpha1.AggregatedMeshConfigService/StreamAggregatedResources": (
        "istio.mcp.v1alpha1.MeshConfigRequest",
        "istio.mcp.v1alpha1.MeshConfigResponse",
        True,
        True,
    ),
    "/istio.mcp.v1alpha1.AggregatedMeshConfigService/IncrementalAggregatedResources": (
        "istio.mcp.v1alpha1.IncrementalMeshConfigRequest",
        "istio.mcp.v1alpha1.IncrementalMeshConfigResponse",
        True,
        True,
    ),
    "/istio.v1.auth.IstioCertificateService/CreateCertificate": (
        "istio.v1.auth.IstioCertificateRequest",
        "istio.v1.auth.IstioCertificateResponse",
        False,
        False,
    ),
}


def test_service_descriptors_declare_exactly_the_reference_methods() -> None:
    declared = {
        f"/{service.full_name}/{method.name}": (
            method.input_type.full_name,
            method.output_type.full_name,
            method.client_streaming,
            method.server_streaming,
        )
        for file in file_descriptors()
        for service in file.services_by_name.values()
        for method in service.methods
    }
    assert declared == METHODS


class RecordingChannel:
    """Stands in for a grpc.Channel and records which paths a stub asks for."""

    def __init__(self) -> None:
        self.paths: dict[str, str] = {}

    def _record(self, kind: str) -> Callable[..., object]:
        def make(path: str, *args: Any, **kwargs: Any) -> object:
            self.paths[path] = kind
            return object()

        return make

    def __getattr__(self, kind: str) -> Callable[..., object]:
        if kind in ("unary_unary", "unary_stream", "stream_unary", "stream_stream"):
            return self._record(kind)
        raise AttributeError(kind)


def test_generated_stubs_call_the_reference_paths() -> None:
    channel = RecordingChannel()
    # The *_pb2_grpc modules are untyped (grpc_tools writes no stubs for them).
    mcp_pb2_grpc.ResourceSourceStub(channel)  # type: ignore[no-untyped-call]
    mcp_pb2_grpc.ResourceSinkStub(channel)  # type: ignore[no-untyped-call]
    mcp_pb2_grpc.AggregatedMeshConfigServiceStub(channel)  # type: ignore[no-untyped-call]
    ca_pb2_grpc.IstioCertificateServiceStub(channel)  # type: ignore[no-untyped-call]
    expected = {
        path: "stream_stream" if client and server else "unary_unary"
        for path, (_, _, client, server) in METHODS.items()
    }
    assert channel.paths == expected


KIND_URLS: list[tuple[type[Message], str]] = [
    (service_entry_pb2.ServiceEntry, "istio.networking.v1alpha3.ServiceEntry"),
    (workload_entry_pb2.WorkloadEntry, "istio.networking.v1alpha3.WorkloadEntry"),
    (workload_group_pb2.WorkloadGroup, "istio.networking.v1alpha3.WorkloadGroup"),
    (virtual_service_pb2.VirtualService, "istio.networking.v1alpha3.VirtualService"),
    (destination_rule_pb2.DestinationRule, "istio.networking.v1alpha3.DestinationRule"),
    (gateway_pb2.Gateway, "istio.networking.v1alpha3.Gateway"),
    (sidecar_pb2.Sidecar, "istio.networking.v1alpha3.Sidecar"),
    (peer_authentication_pb2.PeerAuthentication, "istio.security.v1beta1.PeerAuthentication"),
    (config_pb2.MeshConfig, "istio.mesh.v1alpha1.MeshConfig"),
    (resource_pb2.Resource, "istio.mcp.v1alpha1.Resource"),
]


@pytest.mark.parametrize(("cls", "full_name"), KIND_URLS)
def test_any_type_url_is_the_istio_one(cls: type[Message], full_name: str) -> None:
    packed = any_pb2.Any()
    packed.Pack(cls())
    assert packed.type_url == f"type.googleapis.com/{full_name}"
    assert packed.TypeName() == full_name


def test_mcp_error_detail_is_google_rpc_status() -> None:
    request = mcp_pb2.RequestResources(error_detail=status_pb2.Status(code=3, message="bad"))
    parsed = mcp_pb2.RequestResources.FromString(request.SerializeToString())
    assert parsed.error_detail.message == "bad"
    field = mcp_pb2.RequestResources.DESCRIPTOR.fields_by_name["error_detail"]
    assert field.message_type is not None
    assert field.message_type.full_name == "google.rpc.Status"


def test_ca_request_round_trips() -> None:
    request = ca_pb2.IstioCertificateRequest(csr="PEM", validity_duration=3600)
    request.metadata.update({"ClusterID": "Kubernetes"})
    parsed = ca_pb2.IstioCertificateRequest.FromString(request.SerializeToString())
    assert parsed.metadata["ClusterID"] == "Kubernetes"
    assert parsed.validity_duration == 3600

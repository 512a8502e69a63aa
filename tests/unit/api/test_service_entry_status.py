"""ServiceEntryStatus carries Istio's conditions and validation messages.

A status as istiod writes it (``status.conditions`` and ``status.validationMessages`` in
the proto3 JSON mapping) decodes into the typed fields, keeps Istio's wire numbers
(1 and 2) and comes back unchanged: nothing survives only as unknown bytes.
"""

from __future__ import annotations

from google.protobuf.json_format import MessageToDict, ParseDict

from pilothouse.api.istio.analysis.v1alpha1.message_pb2 import AnalysisMessageBase
from pilothouse.api.istio.networking.v1alpha3.service_entry_pb2 import ServiceEntryStatus

from .wire_tags import read_tags

WRITTEN_BY_ISTIOD = {
    "conditions": [
        {
            "type": "Reconciled",
            "status": "True",
            "lastProbeTime": "2026-01-02T03:04:05Z",
            "lastTransitionTime": "2026-01-02T03:04:05Z",
            "reason": "Allocated",
            "message": "addresses allocated",
            "observedGeneration": "4",
        }
    ],
    "validationMessages": [
        {
            "type": {"name": "ConflictingMeshGatewayVirtualServiceHosts", "code": "IST0109"},
            "level": "WARNING",
            "documentationUrl": "https://istio.io/latest/docs/reference/config/analysis/ist0109/",
        }
    ],
    "observedGeneration": "4",
    "addresses": [{"value": "240.240.0.1", "host": "api.example.com"}],
}


def test_istiod_status_round_trips() -> None:
    status = ParseDict(WRITTEN_BY_ISTIOD, ServiceEntryStatus())
    assert status.conditions[0].type == "Reconciled"
    assert status.conditions[0].last_transition_time.seconds > 0
    assert status.validation_messages[0].type.code == "IST0109"
    assert status.validation_messages[0].level == AnalysisMessageBase.WARNING
    data = status.SerializeToString()
    assert [number for number, _ in read_tags(data)] == [1, 2, 3, 10]
    again = ServiceEntryStatus.FromString(data)
    assert again.SerializeToString() == data
    assert MessageToDict(again) == WRITTEN_BY_ISTIOD

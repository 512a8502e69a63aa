"""``review()``: AdmissionReview bodies in, HTTP status and AdmissionReview answers out."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
import yaml

from pilothouse.config.load import Loader
from pilothouse.config.validation.report import Severity
from pilothouse.kinds.table import SCHEMAS
from pilothouse.webhook.review import (
    DENIAL_CODE,
    MAX_BODY_BYTES,
    REASON_DECODE_ERROR,
    REASON_INVALID_CONFIG,
    REASON_UNKNOWN_TYPE,
    REASON_UNSUPPORTED_OPERATION,
    AdmissionReviewer,
    Outcome,
    ReviewResult,
    is_json_content_type,
    review,
)

JSON = "application/json"
V1 = "admission.k8s.io/v1"
V1BETA1 = "admission.k8s.io/v1beta1"

VIRTUAL_SERVICE: dict[str, Any] = {
    "apiVersion": "networking.istio.io/v1",
    "kind": "VirtualService",
    "metadata": {"name": "reviews", "namespace": "bookinfo"},
    "spec": {
        "hosts": ["reviews"],
        "http": [{"route": [{"destination": {"host": "reviews", "subset": "v1"}}]}],
    },
}


def virtual_service(**changes: Any) -> dict[str, Any]:
    obj = copy.deepcopy(VIRTUAL_SERVICE)
    obj.update(changes)
    return obj


def admission_review(
    obj: Any,
    *,
    operation: str = "CREATE",
    api_version: str = V1,
    uid: str = "0df28fbd-5f5f-11e8-bc74-36e6bb280816",
    **request: Any,
) -> bytes:
    body = {
        "apiVersion": api_version,
        "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": {"group": "networking.istio.io", "version": "v1", "kind": "VirtualService"},
            "resource": {
                "group": "networking.istio.io",
                "version": "v1",
                "resource": "virtualservices",
            },
            "namespace": "bookinfo",
            "operation": operation,
            "userInfo": {"username": "admin"},
            "object": obj,
            **request,
        },
    }
    return json.dumps(body).encode()


def response_of(result: ReviewResult) -> dict[str, Any]:
    assert result.status == 200, result.payload
    assert isinstance(result.payload, dict)
    assert result.payload["kind"] == "AdmissionReview"
    response: dict[str, Any] = result.payload["response"]
    return response


@pytest.mark.parametrize("api_version", [V1, V1BETA1])
def test_valid_virtual_service_is_allowed_in_the_request_api_version(api_version: str) -> None:
    result = review(admission_review(VIRTUAL_SERVICE, api_version=api_version, uid="u-7"), JSON)
    response = response_of(result)
    assert result.payload["apiVersion"] == api_version  # type: ignore[index]
    assert response["uid"] == "u-7"
    assert response["allowed"] is True
    assert "status" not in response
    assert "warnings" not in response
    assert result.outcome is Outcome.PASSED
    assert result.kind == "VirtualService"
    assert result.allowed is True


def test_update_is_validated_too() -> None:
    bad = virtual_service(spec={"hosts": ["reviews"], "http": [{"timeout": "soon"}]})
    result = review(admission_review(bad, operation="UPDATE", oldObject=VIRTUAL_SERVICE), JSON)
    assert response_of(result)["allowed"] is False


def test_invalid_virtual_service_is_denied_with_the_validator_message() -> None:
    spec = {
        "hosts": ["reviews"],
        "http": [{"route": [{"destination": {"host": "reviews"}, "weight": -1}]}],
    }
    result = review(admission_review(virtual_service(spec=spec)), JSON)
    response = response_of(result)
    assert response["allowed"] is False
    assert response["uid"] == "0df28fbd-5f5f-11e8-bc74-36e6bb280816"
    status = response["status"]
    assert status["code"] == DENIAL_CODE == 400
    assert status["status"] == "Failure"
    assert status["message"] == "spec.http[0].route[0].weight: weight -1 must not be negative"
    assert result.outcome is Outcome.FAILED
    assert result.reason == REASON_INVALID_CONFIG


def test_every_error_is_in_the_message() -> None:
    spec = {
        "hosts": ["reviews"],
        "http": [
            {"route": [{"destination": {"host": "reviews"}, "weight": -1}]},
            {"route": [{"destination": {"host": "ratings"}, "weight": -2}]},
        ],
    }
    message = response_of(review(admission_review(virtual_service(spec=spec)), JSON))["status"][
        "message"
    ]
    assert "spec.http[0].route[0].weight: weight -1" in message
    assert "spec.http[1].route[0].weight: weight -2" in message
    assert message.count("; ") >= 1


def test_unknown_spec_field_is_denied_by_strict_decoding() -> None:
    result = review(admission_review(virtual_service(spec={"hostz": ["reviews"]})), JSON)
    response = response_of(result)
    assert response["allowed"] is False
    assert response["status"]["message"].startswith("spec.hostz: unknown field")


def test_deprecated_field_gives_a_warning_and_is_allowed() -> None:
    spec = {
        "hosts": ["reviews"],
        "http": [
            {
                "route": [{"destination": {"host": "reviews"}}],
                "mirror": {"host": "reviews-shadow"},
                "mirrorPercent": 5,
            }
        ],
    }
    response = response_of(review(admission_review(virtual_service(spec=spec)), JSON))
    assert response["allowed"] is True
    assert response["warnings"] == [
        "spec.http[0].mirrorPercent: mirrorPercent is deprecated; use mirrorPercentage"
    ]


def test_warnings_come_with_a_denial_too() -> None:
    spec = {
        "hosts": ["reviews"],
        "http": [
            {
                "route": [{"destination": {"host": "reviews"}}],
                "mirror": {"host": "reviews-shadow"},
                "mirrorPercent": 500,
            }
        ],
    }
    response = response_of(review(admission_review(virtual_service(spec=spec)), JSON))
    assert response["allowed"] is False
    assert "mirror percentage 500 must be in 0..100" in response["status"]["message"]
    assert any("deprecated" in w for w in response["warnings"])


@pytest.mark.parametrize("operation", ["DELETE", "CONNECT"])
def test_other_operations_are_allowed_without_validation(operation: str) -> None:
    # DELETE requests carry no object; an invalid one here proves nothing was validated.
    garbage = {"kind": "NoSuchKind", "spec": {"anything": True}}
    result = review(admission_review(garbage, operation=operation, uid="d-1"), JSON)
    response = response_of(result)
    assert response == {"uid": "d-1", "allowed": True}
    assert result.reason == REASON_UNSUPPORTED_OPERATION


def test_delete_without_object_is_allowed() -> None:
    body = json.loads(admission_review(None, operation="DELETE"))
    del body["request"]["object"]
    response = response_of(review(json.dumps(body).encode(), JSON))
    assert response["allowed"] is True


def test_dry_run_denial_message_says_so() -> None:
    bad = virtual_service(spec={"hostz": ["reviews"]})
    result = review(admission_review(bad, dryRun=True), JSON)
    message = response_of(result)["status"]["message"]
    assert message.endswith(" (dry run)")
    assert message.startswith("spec.hostz: unknown field")
    assert result.dry_run is True
    not_dry = response_of(review(admission_review(bad, dryRun=False), JSON))
    assert not not_dry["status"]["message"].endswith("(dry run)")


def test_unknown_istio_kind_is_denied_with_the_supported_kinds() -> None:
    unknown = {
        "apiVersion": "telemetry.istio.io/v1",
        "kind": "NoSuchKind",
        "metadata": {"name": "mesh-default"},
        "spec": {"tracing": []},
    }
    result = review(admission_review(unknown), JSON)
    response = response_of(result)
    assert response["allowed"] is False
    message = response["status"]["message"]
    assert "NoSuchKind" in message and "Telemetry" in message
    for kind in ("VirtualService", "DestinationRule", "Gateway", "PeerAuthentication"):
        assert kind in message
    assert result.reason == REASON_UNKNOWN_TYPE


def test_wrong_api_version_for_a_known_kind_is_denied() -> None:
    result = review(admission_review(virtual_service(apiVersion="security.istio.io/v1")), JSON)
    response = response_of(result)
    assert response["allowed"] is False
    assert "networking.istio.io/v1" in response["status"]["message"]


def test_extra_top_level_field_is_denied() -> None:
    response = response_of(review(admission_review(virtual_service(extra={"a": 1})), JSON))
    assert response["allowed"] is False
    assert response["status"]["message"] == "extra: unknown top-level field"


def test_status_is_an_allowed_top_level_field() -> None:
    response = response_of(review(admission_review(virtual_service(status={})), JSON))
    assert response["allowed"] is True


def test_namespace_comes_from_the_request_when_the_object_has_none() -> None:
    # A Sidecar's egress "./*" host and workload rules depend on the namespace; the
    # metadata rule only checks it. An invalid request namespace proves it is used.
    obj = virtual_service(metadata={"name": "reviews"})
    allowed = response_of(review(admission_review(obj, namespace="shop"), JSON))
    assert allowed["allowed"] is True
    denied = response_of(review(admission_review(obj, namespace="Not_A_Label"), JSON))
    assert denied["allowed"] is False
    assert "'Not_A_Label'" in denied["status"]["message"]
    own = virtual_service(metadata={"name": "reviews", "namespace": "shop"})
    assert response_of(review(admission_review(own, namespace="Not_A_Label"), JSON))["allowed"]


def test_name_comes_from_the_request_when_the_object_has_none() -> None:
    obj = virtual_service(metadata={"namespace": "bookinfo"})
    assert response_of(review(admission_review(obj), JSON))["allowed"] is False
    assert response_of(review(admission_review(obj, name="reviews"), JSON))["allowed"] is True


def test_missing_object_on_create_is_denied() -> None:
    result = review(admission_review(None), JSON)
    assert response_of(result)["allowed"] is False
    assert result.reason == REASON_DECODE_ERROR


def test_deep_nesting_is_denied_without_crashing() -> None:
    nested: Any = "leaf"
    for _ in range(200):
        nested = {"x": nested}
    result = review(admission_review(virtual_service(spec={"hosts": ["a"], "deep": nested})), JSON)
    response = response_of(result)
    assert response["allowed"] is False
    assert "nesting deeper than" in response["status"]["message"]


def test_empty_body_is_400() -> None:
    result = review(b"", JSON)
    assert result.status == 400
    assert result.outcome is Outcome.HTTP_ERROR
    assert result.allowed is None


@pytest.mark.parametrize(
    "body",
    [
        b"not json at all",
        b"\xff\xfe\x00garbage",
        b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": ',
        b"[1, 2, 3]",
        b'{"apiVersion": "admission.k8s.io/v1", "kind": "Pod"}',
        b'{"apiVersion": "admission.k8s.io/v2", "kind": "AdmissionReview",'
        b' "request": {"uid": "a"}}',
        b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}',
        b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {}}',
        b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": NaN}',
        b"[" * 100_000 + b"]" * 100_000,
    ],
)
def test_garbage_is_400(body: bytes) -> None:
    result = review(body, JSON)
    assert result.status == 400
    assert isinstance(result.payload, str)
    assert result.payload.startswith("could not decode body")
    assert result.outcome is Outcome.HTTP_ERROR


@pytest.mark.parametrize("content_type", [None, "", "text/plain", "application/yaml", "json"])
def test_other_content_types_are_415(content_type: str | None) -> None:
    result = review(admission_review(VIRTUAL_SERVICE), content_type)
    assert result.status == 415
    assert result.outcome is Outcome.HTTP_ERROR


@pytest.mark.parametrize(
    "content_type", ["application/json", "application/json; charset=utf-8", "Application/JSON"]
)
def test_json_content_types_are_accepted(content_type: str) -> None:
    assert is_json_content_type(content_type)
    assert review(admission_review(VIRTUAL_SERVICE), content_type).status == 200


def test_body_just_over_6_mib_is_413_before_parsing() -> None:
    body = b"x" * (MAX_BODY_BYTES + 1)  # not JSON: a 413 proves the size came first
    result = review(body, "text/plain")
    assert result.status == 413
    assert result.outcome is Outcome.HTTP_ERROR


def test_body_of_exactly_6_mib_is_read() -> None:
    padding = MAX_BODY_BYTES - len(admission_review(VIRTUAL_SERVICE, padding=""))
    body = admission_review(VIRTUAL_SERVICE, padding="p" * padding)
    assert len(body) == MAX_BODY_BYTES
    assert response_of(review(body, JSON))["allowed"] is True


def test_the_limit_is_settable() -> None:
    reviewer = AdmissionReviewer(max_body_bytes=100)
    assert reviewer.review(b"x" * 101, JSON).status == 413


def test_body_bytes_are_the_json_answer() -> None:
    result = review(admission_review(VIRTUAL_SERVICE, uid="b"), JSON)
    assert json.loads(result.body_bytes()) == result.payload
    assert result.content_type == JSON
    error = review(b"", JSON)
    assert error.content_type == "text/plain"
    assert error.body_bytes() == b"no body found\n"


# The webhook says exactly what `pilothouse validate` says about the same object.
SAME_AS_VALIDATE = [
    virtual_service(),
    virtual_service(spec={"hostz": ["a"]}),
    virtual_service(spec={"hosts": ["reviews"], "http": [{"timeout": "-1s"}]}),
    virtual_service(metadata={"name": "Bad_Name", "namespace": "bookinfo"}),
    virtual_service(metadata={"name": "r", "namespace": "bookinfo", "labels": {"a": 1}}),
    virtual_service(kind="Service", apiVersion="v1"),
    virtual_service(apiVersion="networking.istio.io/v2"),
    virtual_service(bogus=1, spec={"hosts": ["*"]}),
    {
        "apiVersion": "networking.istio.io/v1",
        "kind": "DestinationRule",
        "metadata": {"name": "reviews", "namespace": "bookinfo"},
        "spec": {
            "host": "reviews",
            "trafficPolicy": {"outlierDetection": {"consecutiveErrors": 5}},
            "subsets": [{"name": "v1", "labels": {"version": "v1"}}, {"name": "v1"}],
        },
    },
    {
        "apiVersion": "security.istio.io/v1",
        "kind": "PeerAuthentication",
        "metadata": {"name": "default", "namespace": "bookinfo"},
        "spec": {"mtls": {"mode": "SOMETIMES"}},
    },
]


@pytest.mark.parametrize("obj", SAME_AS_VALIDATE)
def test_verdict_matches_the_file_loader(obj: dict[str, Any]) -> None:
    loaded = Loader(SCHEMAS).load_text(yaml.safe_dump(obj), "object.yaml")
    errors = [p.message for p in loaded.problems if p.severity is Severity.ERROR]
    warnings = [p.message for p in loaded.problems if p.severity is Severity.WARNING]
    response = response_of(review(admission_review(obj), JSON))
    assert response["allowed"] is (not errors)
    if errors:
        assert response["status"]["message"] == "; ".join(errors)
    assert response.get("warnings", []) == warnings


@pytest.mark.parametrize("operation", [["CREATE"], {"op": "CREATE"}, 3])
def test_an_operation_that_is_not_a_string_is_400(operation: Any) -> None:
    body = json.loads(admission_review(VIRTUAL_SERVICE))
    body["request"]["operation"] = operation
    result = review(json.dumps(body).encode(), JSON)
    assert result.status == 400
    assert result.payload == (
        "could not decode body: AdmissionReview request.operation is not a string"
    )


def test_telemetry_is_admitted_and_a_bad_sampling_percentage_denied() -> None:
    good = {
        "apiVersion": "telemetry.istio.io/v1",
        "kind": "Telemetry",
        "metadata": {"name": "mesh-default", "namespace": "istio-system"},
        "spec": {"tracing": [{"randomSamplingPercentage": 10}]},
    }
    assert response_of(review(admission_review(good), JSON))["allowed"] is True
    bad = {**good, "spec": {"tracing": [{"randomSamplingPercentage": 150}]}}
    response = response_of(review(admission_review(bad), JSON))
    assert response["allowed"] is False
    assert response["status"]["message"].startswith(
        "spec.tracing[0].randomSamplingPercentage: 150 is not a percentage between 0 and 100"
    )

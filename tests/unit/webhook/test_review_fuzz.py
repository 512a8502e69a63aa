"""``review()`` never raises, whatever JSON arrives as the object or the review."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pilothouse.webhook.review import review

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=30,
)
KINDS = st.sampled_from(["VirtualService", "DestinationRule", "Gateway", "Sidecar", "Nope", 3])
OBJECTS = st.fixed_dictionaries(
    {
        "apiVersion": st.sampled_from(["networking.istio.io/v1", "security.istio.io/v1", None]),
        "kind": KINDS,
        "metadata": st.one_of(
            JSON_VALUES, st.fixed_dictionaries({"name": st.sampled_from(["a", "B", ""])})
        ),
        "spec": JSON_VALUES,
    }
)


@settings(max_examples=200, deadline=None)
@given(obj=OBJECTS | JSON_VALUES, operation=st.sampled_from(["CREATE", "UPDATE", "DELETE"]))
def test_any_object_gets_an_answer(obj: Any, operation: str) -> None:
    body = {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {"uid": "f", "operation": operation, "object": obj},
    }
    result = review(json.dumps(body).encode(), "application/json")
    assert result.status == 200
    assert isinstance(result.payload, dict)
    response = result.payload["response"]
    assert response["uid"] == "f"
    assert isinstance(response["allowed"], bool)
    if not response["allowed"]:
        assert response["status"]["message"]


@settings(max_examples=200, deadline=None)
@given(document=JSON_VALUES)
def test_any_document_gets_an_http_answer(document: Any) -> None:
    result = review(json.dumps(document).encode(), "application/json")
    assert result.status in (200, 400)

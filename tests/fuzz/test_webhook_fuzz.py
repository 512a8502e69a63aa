"""The admission webhook under random reviews: a live webhook server (HTTPS with a
throwaway CA, in-process on its own loop) and Hypothesis posting AdmissionReviews made
from the example mesh's objects, mutated (fields replaced by random JSON, keys dropped,
review fields of the wrong type, deep nesting, numbers of thousands of digits), and
random bytes.

Every answer must be below 500; a 4xx must carry a message; a 200 must be an
AdmissionReview answering the request's uid, with a message on every denial; no body
may hold Python-internal text. After the run a valid object is still allowed.
"""

from __future__ import annotations

import copy
import json
import ssl
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from pilothouse.webhook.server import WebhookServer
from tests.e2e.harness.tls import ThrowawayCa
from tests.fuzz.answers import internals_in
from tests.fuzz.budget import fuzz_settings
from tests.fuzz.live_server import HttpPeer, LoopThread

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
MARK = "\u2063@"  # replaced in the encoded body by a raw fragment


def example_objects() -> list[dict[str, Any]]:
    objects = []
    for path in sorted(EXAMPLES.rglob("*.yaml")):
        objects.extend(doc for doc in yaml.safe_load_all(path.read_text()) if doc)
    return objects


OBJECTS = example_objects()


@dataclass
class LiveWebhook:
    loop: LoopThread
    server: WebhookServer
    peer: HttpPeer

    def post(
        self, body: bytes, content_type: str, path: str = "/validate"
    ) -> tuple[int, str, bytes]:
        return self.peer.request("POST", path, body, {"Content-Type": content_type})


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveWebhook]:
    certificates = ThrowawayCa(tmp_path_factory.mktemp("webhook-ca")).issue(
        "webhook", ("127.0.0.1",)
    )
    loop = LoopThread()
    server = WebhookServer(certificates.cert, certificates.key, lingering_time=0.3)
    loop.call(server.start("127.0.0.1", 0))
    trusting = ssl.create_default_context(cafile=str(certificates.ca))
    running = LiveWebhook(loop, server, HttpPeer(server.port, trusting))
    try:
        yield running
    finally:
        running.peer.close()
        loop.call(server.stop())
        loop.close()


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
# Whole numbers written as strings, as long as Kubernetes would pass them on, past
# Python's own 4,300-digit conversion limit.
DIGIT_STRINGS = (st.sampled_from([20, 40, 400, 4301, 5000]) | st.integers(20, 6000)).map(
    lambda digits: "9" * digits
)
FRAGMENTS = st.one_of(
    st.integers(1, 3000).map(lambda depth: "[" * depth + "]" * depth),
    st.integers(1, 3000).map(lambda depth: '{"a":' * depth + "1" + "}" * depth),
    st.integers(300, 6000).map(lambda digits: "9" * digits),
    st.sampled_from(["1e999", "-1e999", "NaN", "Infinity", "1" + "0" * 380, "-0.0", "1e-999"]),
)


def paths_in(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside ``value`` (dict keys and list indexes)."""
    found = [prefix]
    if isinstance(value, dict):
        for key, child in value.items():
            found.extend(paths_in(child, (*prefix, key)))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found.extend(paths_in(child, (*prefix, index)))
    return found


def leaf(root: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        root = root[step]
    return root


def put(root: Any, path: tuple[Any, ...], value: Any, delete: bool = False) -> Any:
    if not path:
        return value
    parent = root
    for step in path[:-1]:
        parent = parent[step]
    if delete:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return root


@st.composite
def reviews(draw: st.DrawFn) -> tuple[bytes, Any]:
    """A review body and the uid it carries."""
    if draw(st.integers(0, 9)) == 0:
        return draw(st.binary(max_size=200)), None
    obj = copy.deepcopy(draw(st.sampled_from(OBJECTS)))
    for _ in range(draw(st.integers(0, 3))):
        path = draw(st.sampled_from(paths_in(obj)))
        action = draw(st.sampled_from(["replace", "delete", "mark", "number"]))
        numbers = [where for where in paths_in(obj) if type(leaf(obj, where)) is int]
        if action == "number" and numbers:
            # Where the object holds a number, a number written out long: as text, or raw.
            where = draw(st.sampled_from(numbers))
            obj = put(obj, where, draw(DIGIT_STRINGS) if draw(st.booleans()) else MARK)
        elif action == "delete" and path:
            obj = put(obj, path, None, delete=True)
        elif action == "mark":
            obj = put(obj, path, MARK)
        else:
            obj = put(
                obj,
                path,
                draw(JSON_VALUES | DIGIT_STRINGS),
            )
    # Most reviews are well formed around the object, so that the object is reviewed;
    # the rest break the envelope too.
    broken = draw(st.integers(0, 3)) == 0

    def field(good: st.SearchStrategy[Any]) -> Any:
        return draw(good | JSON_VALUES) if broken else draw(good)

    kind = obj.get("kind") if isinstance(obj, dict) else "VirtualService"
    uid: Any = field(st.sampled_from(["uid-1", "7c0e"]))
    request: dict[str, Any] = {
        "uid": uid,
        "kind": {"group": "networking.istio.io", "version": "v1", "kind": str(kind)},
        "operation": field(st.sampled_from(["CREATE", "UPDATE", "CREATE", "DELETE"])),
        "namespace": field(st.sampled_from(["bookinfo", ""])),
        "object": obj,
        "dryRun": field(st.booleans()),
    }
    review: dict[str, Any] = {
        "apiVersion": field(st.sampled_from(["admission.k8s.io/v1", "admission.k8s.io/v1beta1"])),
        "kind": field(st.just("AdmissionReview")),
        "request": request,
    }
    if broken and draw(st.booleans()):
        key = draw(st.sampled_from(["uid", "operation", "object", "namespace"]))
        request[key] = draw(JSON_VALUES) if draw(st.booleans()) else MARK
    text = json.dumps(review)
    while json.dumps(MARK) in text:
        text = text.replace(json.dumps(MARK), draw(FRAGMENTS), 1)
    return text.encode(), uid


def check_answer(status: int, content_type: str, body: bytes, uid: Any) -> None:
    text = body.decode("utf-8", "replace")
    assert status < 500, f"{status}: {text[:300]}"
    assert internals_in(text) == [], text[:300]
    if status >= 400:
        assert text.strip(), f"{status} without a message"
        return
    assert status == 200 and content_type.startswith("application/json")
    answer = json.loads(body)
    assert answer["kind"] == "AdmissionReview"
    response = answer["response"]
    assert response["uid"] == uid
    assert isinstance(response["allowed"], bool)
    if not response["allowed"]:
        assert response["status"]["message"].strip()
        assert response["status"]["code"] == 400


@fuzz_settings()
@given(review=reviews(), content_type=st.sampled_from(["application/json"] * 8 + ["text/plain"]))
def test_any_review_gets_a_clean_answer(
    live: LiveWebhook, review: tuple[bytes, Any], content_type: str
) -> None:
    body, uid = review
    status, got_type, answer = live.post(body, content_type)
    check_answer(status, got_type, answer, uid)


def test_a_valid_object_is_allowed_after_the_fuzzing(live: LiveWebhook) -> None:
    for obj in OBJECTS:
        request = {"uid": "after", "operation": "CREATE", "namespace": "bookinfo", "object": obj}
        body = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
        status, _, answer = live.post(json.dumps(body).encode(), "application/json")
        assert status == 200
        assert json.loads(answer)["response"]["allowed"] is True, obj["metadata"]
    assert live.peer.request("GET", "/ready")[0] == 200
    assert live.loop.alive

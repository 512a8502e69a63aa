"""REST discovery under random requests: a live admin server (in-process, its own loop)
serving the example mesh, and Hypothesis posting DiscoveryRequest bodies at it: plausible
ones with random fields, type URLs, node ids, versions and resource names, wrong JSON
types, deep nesting, numbers of thousands of digits, and random bytes.

Every answer must be below 500; every 4xx must carry an ``error`` message; no body may
hold Python-internal text. After the run, a good request still gets the mesh's clusters.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pilothouse.admin.app import build_admin_app
from pilothouse.admin.server import AdminServer
from pilothouse.protocol.type_urls import CDS, EDS, LDS, RDS
from pilothouse.sources.fs import FileSource
from pilothouse.xds.server.discovery import DiscoveryServer
from pilothouse.xds.server.discovery_debug import DiscoveryDebugView
from pilothouse.xds.server.rest import RestDiscovery
from tests.fuzz.answers import internals_in
from tests.fuzz.budget import fuzz_settings
from tests.fuzz.live_server import HttpPeer, LoopThread

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SIDECAR = "sidecar~127.0.0.1~productpage-v1.bookinfo~bookinfo.svc.cluster.local"
ROUTER = "router~127.0.0.1~ingressgateway-1.bookinfo~bookinfo.svc.cluster.local"
REVIEWS = "outbound|9080|v1|reviews.bookinfo.svc.cluster.local"
KINDS = {"clusters": CDS, "endpoints": EDS, "listeners": LDS, "routes": RDS}
MARK = "\u2063@"  # replaced in the encoded body by a raw fragment (deep nesting, long numbers)


@dataclass
class LiveAdmin:
    loop: LoopThread
    admin: AdminServer
    discovery: DiscoveryServer
    task: asyncio.Task[None]
    peer: HttpPeer

    def post(self, kind: str, body: bytes, content_type: str) -> tuple[int, str, bytes]:
        headers = {"Content-Type": content_type}
        return self.peer.request("POST", f"/v3/discovery:{kind}", body, headers)


@pytest.fixture(scope="module")
def live() -> Iterator[LiveAdmin]:
    loop = LoopThread()

    async def start() -> tuple[AdminServer, DiscoveryServer, asyncio.Task[None]]:
        source = FileSource(EXAMPLES)
        source.load_all()
        discovery = DiscoveryServer(source.store)
        task = asyncio.create_task(discovery.run())
        await asyncio.wait_for(discovery.wait_ready(), 20)
        admin = AdminServer(
            build_admin_app(DiscoveryDebugView(discovery), rest=RestDiscovery(discovery)),
            shutdown_timeout=0.5,
        )
        await admin.start("127.0.0.1", 0)
        return admin, discovery, task

    async def stop(running: LiveAdmin) -> None:
        await running.admin.stop()
        running.discovery.close()
        await asyncio.wait_for(running.task, 10)

    admin, discovery, task = loop.call(start())
    running = LiveAdmin(loop, admin, discovery, task, HttpPeer(admin.port))
    try:
        yield running
    finally:
        running.peer.close()
        loop.call(stop(running))
        loop.close()


# -- what gets posted ---------------------------------------------------------------------

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
NODE_IDS = st.sampled_from(
    [SIDECAR, ROUTER, "sidecar~127.0.0.1~a.b~b.svc.cluster.local"]
) | st.text(max_size=40)
TEXT_OR_ANY = st.text(max_size=30) | JSON_VALUES
NAMES = st.lists(
    st.sampled_from([REVIEWS, "8080", "http.8080", "9080", "BlackHoleCluster"])
    | st.text(max_size=20),
    max_size=5,
)
# Istio's LABELS may be JSON text; pilothouse reads it, so it gets hostile JSON too.
LABELS_TEXT = st.one_of(
    JSON_VALUES.map(json.dumps),
    (st.sampled_from([257, 1000, 5000]) | st.integers(1, 5000)).map(lambda depth: "[" * depth),
    (st.sampled_from([401, 5000]) | st.integers(300, 6000)).map(
        lambda digits: '{"a": ' + "9" * digits + "}"
    ),
)
NODES = st.fixed_dictionaries(
    {"id": NODE_IDS},
    optional={
        "cluster": TEXT_OR_ANY,
        "metadata": st.dictionaries(
            st.sampled_from(["NAMESPACE", "LABELS", "INTERCEPTION_MODE", "ISTIO_VERSION", "x"]),
            JSON_VALUES | LABELS_TEXT,
            max_size=4,
        ),
        "locality": st.dictionaries(st.sampled_from(["region", "zone", "sub_zone"]), TEXT_OR_ANY),
        "user_agent_name": TEXT_OR_ANY,
        "user_agent_build_version": JSON_VALUES,
        "extensions": st.lists(JSON_VALUES, max_size=3),
        "client_features": TEXT_OR_ANY,
    },
)
REQUESTS = st.fixed_dictionaries(
    {},
    optional={
        "node": NODES | JSON_VALUES,
        "version_info": st.text(max_size=20) | JSON_VALUES,
        "resource_names": NAMES | JSON_VALUES,
        "type_url": st.sampled_from([CDS, EDS, LDS, RDS, ""]) | st.text(max_size=30),
        "response_nonce": TEXT_OR_ANY,
        "error_detail": st.fixed_dictionaries(
            {},
            optional={
                "code": JSON_VALUES | st.text(alphabet="0123456789", max_size=60),
                "message": TEXT_OR_ANY,
            },
        )
        | JSON_VALUES,
        "versionInfo": TEXT_OR_ANY,
        "resourceNames": NAMES | JSON_VALUES,
        "extra": JSON_VALUES,
    },
)
# Raw fragments put where MARK is: deep nesting and numbers with thousands of digits,
# which Python's own json.dumps cannot write.
FRAGMENTS = st.one_of(
    st.integers(1, 3000).map(lambda depth: "[" * depth + "]" * depth),
    st.integers(1, 3000).map(lambda depth: '{"a":' * depth + "1" + "}" * depth),
    st.integers(300, 6000).map(lambda digits: "9" * digits),
    st.integers(300, 6000).map(lambda digits: '"' + "9" * digits + '"'),
    st.sampled_from(["1e999", "-1e999", "NaN", "Infinity", "1" + "0" * 380]),
)


@st.composite
def bodies(draw: st.DrawFn) -> bytes:
    shape = draw(st.integers(0, 9))
    if shape == 0:
        return draw(st.binary(max_size=200))
    if shape in (2, 3):
        # A plausible poll from a real node whose metadata carries something hostile.
        node = {"id": draw(st.sampled_from([SIDECAR, ROUTER])), "metadata": {}}
        key = draw(st.sampled_from(["LABELS", "LABELS", "NAMESPACE", "GENERATOR"]))
        node["metadata"][key] = draw(LABELS_TEXT)
        poll = {"node": node, "resource_names": draw(NAMES), "version_info": draw(st.text())}
        return json.dumps(poll).encode()
    request: Any = draw(REQUESTS) if shape > 1 else draw(JSON_VALUES)
    if shape >= 7 and isinstance(request, dict):
        where = draw(st.sampled_from(["node", "version_info", "error_detail", "extra", "metadata"]))
        if where == "metadata" and isinstance(request.get("node"), dict):
            request["node"]["metadata"] = {"m": MARK}
        else:
            request[where] = MARK
        text = json.dumps(request).replace(json.dumps(MARK), draw(FRAGMENTS))
        return text.encode()
    return json.dumps(request).encode()


# -- the properties -----------------------------------------------------------------------


def check_answer(kind: str, status: int, content_type: str, body: bytes) -> None:
    text = body.decode("utf-8", "replace")
    assert status < 500, f"{status}: {text[:300]}"
    assert internals_in(text) == [], text[:300]
    if 400 <= status < 500:
        assert content_type.startswith("application/json"), content_type
        error = json.loads(body)["error"]
        assert isinstance(error, str) and error.strip()
    elif status == 200:
        answer = json.loads(body)
        assert answer["type_url"] == KINDS[kind] and answer["version_info"]
        assert isinstance(answer["resources"], list)
    else:
        assert status == 304 and body == b""


@fuzz_settings()
@given(
    kind=st.sampled_from(sorted(KINDS)) | st.sampled_from(["secrets", "runtime", ""]),
    body=bodies(),
    content_type=st.sampled_from(
        ["application/json"] * 6 + ["application/grpc+json", "text/plain"]
    ),
)
def test_any_request_gets_a_clean_answer(
    live: LiveAdmin, kind: str, body: bytes, content_type: str
) -> None:
    status, got_type, answer = live.post(kind, body, content_type)
    check_answer(kind if kind in KINDS else "", status, got_type, answer)


def test_a_good_request_succeeds_after_the_fuzzing(live: LiveAdmin) -> None:
    request = {"node": {"id": SIDECAR, "metadata": {"NAMESPACE": "bookinfo"}}}
    status, _, answer = live.post("clusters", json.dumps(request).encode(), "application/json")
    assert status == 200
    names = {resource["name"] for resource in json.loads(answer)["resources"]}
    assert REVIEWS in names
    assert live.peer.request("GET", "/ready")[0] == 200
    assert live.loop.alive and not live.task.done()

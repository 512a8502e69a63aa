"""Plain REST polls are read from their JSON dict; anything unusual is left to ParseDict."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pilothouse.protocol.type_urls import EDS
from pilothouse.xds.server.rest_request import PlainPoll, node_key, plain_poll

NODE: dict[str, Any] = {
    "id": "sidecar~10.0.0.1~app-1.shop~shop.svc.cluster.local",
    "cluster": "app.shop",
    "metadata": {"NAMESPACE": "shop", "LABELS": {"app": "client"}},
    "user_agent_build_version": {"version": {"major_number": 1, "minor_number": 40}},
}


def test_an_envoy_poll_is_plain() -> None:
    data = {
        "node": {**NODE, "extensions": [{"name": "envoy.filters.http.router"}]},
        "version_info": "abc",
        "resource_names": ["outbound|80||a", "outbound|80||b"],
        "type_url": EDS,
        "response_nonce": "",
    }
    assert plain_poll(data) == PlainPoll(
        "abc", EDS, ("outbound|80||a", "outbound|80||b"), node_key(NODE)
    )
    assert plain_poll({"node": NODE}) == PlainPoll("", "", (), node_key(NODE))


@pytest.mark.parametrize(
    "extra",
    [
        {"versionInfo": "abc"},  # camelCase: ParseDict's business
        {"resourceNames": ["a"]},
        {"error_detail": {"message": "bad"}},  # a NACK is logged and counted
        {"unknown_field": 1},
        {"version_info": 7},
        {"version_info": None},
        {"type_url": ["x"]},
        {"response_nonce": 1},
        {"resource_names": "a"},
        {"resource_names": None},
        {"resource_names": ["a", 1]},
        {"version_info": "\ud800"},  # an unpaired surrogate: not a protobuf string
        {"resource_names": ["\udc80"]},
    ],
)
def test_anything_unusual_is_not_plain(extra: dict[str, Any]) -> None:
    assert plain_poll({"node": NODE, **extra}) is None


@pytest.mark.parametrize("node", [None, "sidecar~1", ["x"], 5])
def test_a_node_that_is_not_an_object_is_not_plain(node: object) -> None:
    assert plain_poll({"node": node}) is None
    assert plain_poll({}) is None


def test_non_ascii_text_that_is_valid_utf8_is_plain() -> None:
    poll = plain_poll({"node": NODE, "version_info": "vé", "resource_names": ["ü"]})
    assert poll is not None and poll.version_info == "vé" and poll.resource_names == ("ü",)


def test_node_key_leaves_out_extensions_and_the_node_alone() -> None:
    with_extensions = {**NODE, "extensions": [{"name": "x"}]}
    assert node_key(with_extensions) == node_key(NODE)
    assert "extensions" in with_extensions
    assert json.loads(node_key(NODE)) == NODE
    assert node_key({**NODE, "id": "sidecar~10.0.0.2~b.shop~shop.svc.cluster.local"}) != (
        node_key(NODE)
    )
    # The text is exact: values of different JSON types are different nodes.
    assert node_key({"id": "x", "cluster": 1}) != node_key({"id": "x", "cluster": 1.0})
    assert node_key({"id": "x", "cluster": True}) != node_key({"id": "x", "cluster": 1})

"""Hypothesis: no input makes the loader raise anything but ConfigError, or hang."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pilothouse.config.load import ConfigError, Loader
from pilothouse.kinds.table import SCHEMAS

LOADER = Loader(SCHEMAS)
KINDS = [
    "ServiceEntry",
    "VirtualService",
    "DestinationRule",
    "Gateway",
    "Sidecar",
    "WorkloadEntry",
    "WorkloadGroup",
    "PeerAuthentication",
    "List",
    "Nope",
]
KEYS = [
    "hosts",
    "http",
    "route",
    "destination",
    "host",
    "weight",
    "match",
    "uri",
    "exact",
    "ports",
    "number",
    "name",
    "protocol",
    "servers",
    "port",
    "tls",
    "mode",
    "subsets",
    "labels",
    "trafficPolicy",
    "egress",
    "timeout",
    "endpoints",
    "address",
    "items",
    "spec",
    "metadata",
    "kind",
    "apiVersion",
    "resolution",
    "gateways",
    "x",
]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True),
    st.text(max_size=20),
    st.sampled_from(KINDS),
    st.sampled_from(["5s", "1m", "-1s", "*", "a/b"]),
)
structures: st.SearchStrategy[Any] = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(
            st.one_of(st.sampled_from(KEYS), st.text(max_size=8)), children, max_size=5
        ),
    ),
    max_leaves=30,
)
objects = st.fixed_dictionaries(
    {
        "apiVersion": st.sampled_from(
            [
                "networking.istio.io/v1",
                "networking.istio.io/v1alpha3",
                "security.istio.io/v1",
                "v1",
                "x",
            ]
        ),
        "kind": st.sampled_from(KINDS),
        "metadata": st.one_of(st.fixed_dictionaries({"name": st.text(max_size=10)}), structures),
        "spec": structures,
    }
)


def _check(text: str) -> None:
    result = LOADER.load_text(text, "fuzz.yaml")
    for problem in result.problems:
        assert problem.file == "fuzz.yaml"
        assert problem.line is None or problem.line >= 1
    with contextlib.suppress(ConfigError):
        LOADER.load_strict(text, "fuzz.yaml")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=300))
def test_random_text(text: str) -> None:
    _check(text)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(objects, min_size=1, max_size=3), st.booleans())
def test_random_structures(documents: list[dict[str, Any]], as_json: bool) -> None:
    if as_json:
        text = "\n".join(json.dumps(d, default=str) for d in documents)
    else:
        text = yaml.safe_dump_all(documents)
    _check(text)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200))
def test_random_bytes_as_text(data: bytes) -> None:
    _check(data.decode("utf-8", errors="replace"))

"""EnvoyFilter BOOTSTRAP patches merged into the bootstrap a proxy starts with.

istiod's rules when it served bootstraps: the filters that select the proxy (root
namespace, the proxy's namespace, workloadSelector, ``match.proxy``), in their order, MERGE
only; the result must still be an Envoy Bootstrap with the builder's own parts kept.
"""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from google.protobuf.json_format import ParseDict

from pilothouse.api.istio.networking.v1alpha3.envoy_filter_pb2 import EnvoyFilter
from pilothouse.bootstrap.envoy import EnvoyBootstrapOptions, envoy_bootstrap
from pilothouse.config.mesh import MeshSettings
from pilothouse.config.model import Config
from pilothouse.push.envoy_filters import NO_PATCHES
from pilothouse.push.proxy import parse_node
from pilothouse.xds.builders.envoy_patch_bootstrap import (
    BootstrapPatchError,
    bootstrap_patches,
    patch_bootstrap,
    patched_envoy_bootstrap,
)

NODE = "sidecar~10.0.0.1~ratings-v1.shop~shop.svc.cluster.local"


def envoy_filter(
    name: str, namespace: str, *patches: dict[str, Any], created: int = 1, **spec: Any
) -> Config:
    return Config(
        "EnvoyFilter",
        name,
        namespace,
        ParseDict({"configPatches": list(patches), **spec}, EnvoyFilter()),
        resource_version="1",
        creation_time=datetime.datetime(2026, 1, created, tzinfo=datetime.UTC),
    )


def merge(value: dict[str, Any], **match: Any) -> dict[str, Any]:
    patch: dict[str, Any] = {
        "applyTo": "BOOTSTRAP",
        "patch": {"operation": "MERGE", "value": value},
    }
    if match:
        patch["match"] = match
    return patch


def options(**metadata: Any) -> EnvoyBootstrapOptions:
    return EnvoyBootstrapOptions(
        node_id=NODE, node_metadata={"NAMESPACE": "shop", "LABELS": {"app": "ratings"}, **metadata}
    )


def test_without_a_bootstrap_patch_the_document_is_the_builder_s() -> None:
    other = envoy_filter("cluster-only", "shop", {"applyTo": "CLUSTER", "patch": {
        "operation": "MERGE", "value": {"connect_timeout": "2s"}}})  # fmt: skip
    done = patched_envoy_bootstrap(options(), [other])
    assert done.document == envoy_bootstrap(options())
    assert done.applied == () and done.skipped == ()


def test_merges_set_fields_append_clusters_and_keep_the_builder_s_parts() -> None:
    extra = {"name": "telemetry", "type": "STATIC", "connect_timeout": "1s"}
    filters = [
        envoy_filter("flush", "istio-system", merge({"stats_flush_interval": "7s"})),
        envoy_filter("extra", "shop", merge({"static_resources": {"clusters": [extra]}})),
    ]
    done = patched_envoy_bootstrap(options(), filters)
    document = done.document
    assert document["stats_flush_interval"] == "7s"
    names = [c["name"] for c in document["static_resources"]["clusters"]]
    assert names == ["xds-grpc", "telemetry"]  # a list merge appends
    assert document["node"]["id"] == NODE
    assert document["dynamic_resources"]["ads_config"]["api_type"] == "GRPC"
    assert done.applied == ("istio-system/flush patch 0", "shop/extra patch 0")


def test_later_merges_win_in_istiod_s_order_and_durations_are_replaced_whole() -> None:
    filters = [
        # priority first; then root namespace before the proxy's; then creation time
        envoy_filter("late", "shop", merge({"stats_flush_interval": "3s"}), priority=5),
        envoy_filter("ns", "shop", merge({"stats_flush_interval": "2.5s"})),
        envoy_filter("root", "istio-system", merge({"stats_flush_interval": "1.25s"})),
    ]
    done = patched_envoy_bootstrap(options(), filters)
    assert done.applied == ("istio-system/root patch 0", "shop/ns patch 0", "shop/late patch 0")
    assert done.document["stats_flush_interval"] == "3s"  # not 3.5 s: replaced whole


def test_only_filters_that_select_the_proxy_apply() -> None:
    filters = [
        envoy_filter("other-ns", "books", merge({"stats_flush_interval": "9s"})),
        envoy_filter("other-app", "shop", merge({"stats_flush_interval": "8s"}),
                     workloadSelector={"labels": {"app": "reviews"}}),
        envoy_filter("this-app", "shop", merge({"stats_flush_interval": "6s"}),
                     workloadSelector={"labels": {"app": "ratings"}}),
        envoy_filter("old-proxy", "shop", merge({"stats_flush_interval": "5s"},
                     proxy={"proxyVersion": r"^1\.2[0-3]"})),
        envoy_filter("new-proxy", "shop", merge({"stats_config": {"use_all_default_tags": True}},
                     proxy={"proxyVersion": r"^1\.28", "metadata": {"TEAM": "ratings"}})),
    ]  # fmt: skip
    done = patched_envoy_bootstrap(options(ISTIO_VERSION="1.28.1", TEAM="ratings"), filters)
    # equal priority, namespace and creation time: by name
    assert done.applied == ("shop/new-proxy patch 0", "shop/this-app patch 0")
    assert done.document["stats_flush_interval"] == "6s"
    assert done.document["stats_config"] == {"use_all_default_tags": True}
    without_version = patched_envoy_bootstrap(options(TEAM="ratings"), filters)
    assert without_version.applied == ("shop/this-app patch 0",)  # no version: no match


@pytest.mark.parametrize("operation", ["ADD", "REPLACE", "MERGE_AND_REPLACE_LIST", "REMOVE"])
def test_operations_other_than_merge_are_named_and_not_applied(operation: str) -> None:
    patch: dict[str, Any] = {"applyTo": "BOOTSTRAP", "patch": {"operation": operation}}
    if operation != "REMOVE":
        patch["patch"]["value"] = {"stats_flush_interval": "4s"}
    done = patched_envoy_bootstrap(options(), [envoy_filter("f", "shop", patch)])
    assert done.document == envoy_bootstrap(options())
    assert done.applied == ()
    note = f"shop/f patch 0: {operation} not applied (BOOTSTRAP takes MERGE only)"
    assert done.skipped == (note,)


def test_the_selection_is_a_library_call_for_any_bootstrap() -> None:
    filters = [envoy_filter("flush", "shop", merge({"stats_flush_interval": "7s"}))]
    proxy = parse_node(NODE, {"NAMESPACE": "shop"})
    patches = bootstrap_patches(filters, proxy, MeshSettings(root_namespace="mesh-admin"))
    [rule] = patches.rules
    assert rule.filter_name == "shop/flush"
    document = {"node": {"id": "x", "cluster": "c"}, "admin": {}}
    assert patch_bootstrap(document, patches).document["stats_flush_interval"] == "7s"
    assert patch_bootstrap(document, NO_PATCHES).document == document


def test_a_document_that_is_no_bootstrap_is_refused_by_name() -> None:
    patches = bootstrap_patches(
        [envoy_filter("flush", "shop", merge({"stats_flush_interval": "7s"}))],
        parse_node(NODE, {}),
    )
    with pytest.raises(BootstrapPatchError, match="not_a_field"):
        patch_bootstrap({"not_a_field": 1}, patches)

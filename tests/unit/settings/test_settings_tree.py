"""The settings tree: one leaf per knob, one variable per leaf, defaults stated once."""

from __future__ import annotations

import asyncio
import dataclasses
import typing
from pathlib import Path

import pytest

import pilothouse.settings
from pilothouse.bootstrap.envoy import EnvoyBootstrapOptions
from pilothouse.mcp.publisher import McpSourceOptions
from pilothouse.push.cache import ResourceCache
from pilothouse.settings import Settings, XdsSettings, knobs
from pilothouse.sources.fs import FileSource
from pilothouse.sources.memory import MemoryStore
from pilothouse.webhook.server import WebhookServer
from pilothouse.xds.server.discovery import DiscoveryServer
from pilothouse.xds.server.rest import RestDiscovery


def test_every_knob_has_its_own_pilothouse_variable() -> None:
    found = knobs()
    names = [knob.env for knob in found]
    assert len(names) == len(set(names))
    assert all(name.startswith("PILOTHOUSE_") and name == name.upper() for name in names)
    assert len({knob.path for knob in found}) == len(found)


def test_variable_names_follow_the_part_prefix_unless_renamed() -> None:
    by_path = {knob.path: knob.env for knob in knobs()}
    assert by_path["xds.cache_size"] == "PILOTHOUSE_XDS_CACHE_SIZE"
    assert by_path["xds.keepalive_time"] == "PILOTHOUSE_XDS_KEEPALIVE_TIME"
    assert by_path["rest.refresh_delay"] == "PILOTHOUSE_REST_REFRESH_DELAY"
    assert by_path["webhook.cert"] == "PILOTHOUSE_WEBHOOK_CERT"
    assert by_path["xds.debounce.debounce_after"] == "PILOTHOUSE_DEBOUNCE_AFTER"
    # names that predate the tree, or mirror istiod's, are kept
    assert by_path["xds.push_throttle"] == "PILOTHOUSE_PUSH_THROTTLE"
    assert by_path["xds.max_receive_bytes"] == "PILOTHOUSE_MAX_RECEIVE_BYTES"
    assert by_path["mcp.accept_sources"] == "PILOTHOUSE_ACCEPT_MCP_SOURCES"
    assert by_path["mcp.sink_meta"] == "PILOTHOUSE_SINK_META"


def test_defaults_equal_istiods() -> None:
    xds = Settings().xds
    assert xds.debounce.debounce_after == 0.1  # PILOT_DEBOUNCE_AFTER 100ms
    assert xds.debounce.debounce_max == 10.0  # PILOT_DEBOUNCE_MAX 10s
    assert xds.debounce.eds_debounce is True  # PILOT_ENABLE_EDS_DEBOUNCE
    assert xds.push_throttle == 0  # computed: min(15 + 5 x cores, 100)
    assert xds.cache_size == 60_000  # PILOT_XDS_CACHE_SIZE
    assert xds.max_receive_bytes == 4 * 1024 * 1024  # ISTIO_GPRC_MAXRECVMSGSIZE
    assert xds.max_concurrent_streams == 100_000  # ISTIO_GPRC_MAXSTREAMS
    assert (xds.keepalive_time, xds.keepalive_timeout) == (30.0, 10.0)  # GRPC_KEEPALIVE_*
    assert xds.min_ping_interval == xds.keepalive_time / 2
    assert xds.max_connection_age == 30 * 60  # istiod's Helm chart (its code: never)
    assert xds.max_connection_age_grace == 10.0
    assert xds.address.endswith(":15010")
    assert Settings().admin.address.endswith(":15014")
    assert Settings().webhook.address.endswith(":15017")
    assert (Settings().mcp.quiesce, Settings().mcp.max_wait) == (0.5, 1.0)  # Galley's


def test_the_admission_wait_is_not_istiods() -> None:
    # istiod waits 1 s (rate.Limiter.Wait under a one-second deadline) and refuses the
    # rest; pilothouse holds a storm in line instead (AdmissionSettings says why)
    assert Settings().xds.admission.wait == 10.0


def test_overrides_replace_leaves_by_path_and_keep_the_rest() -> None:
    base = Settings()
    changed = base.with_overrides(
        {"xds.cache_size": 7, "xds.debounce.debounce_max": 2.5, "role": "config-server"}
    )
    assert changed.xds.cache_size == 7
    assert changed.xds.debounce.debounce_max == 2.5
    assert changed.xds.debounce.debounce_after == base.xds.debounce.debounce_after
    assert changed.role == "config-server"
    assert changed.rest == base.rest and base.xds.cache_size == 60_000


def test_overrides_refuse_unknown_paths() -> None:
    with pytest.raises(ValueError, match=r"xds\.cache_sise"):
        Settings().with_overrides({"xds.cache_sise": 1})
    with pytest.raises(ValueError, match="unknown settings: xds"):
        Settings().with_overrides({"xds": XdsSettings()})


async def test_components_built_without_settings_use_the_trees_defaults(
    tmp_path: Path,
) -> None:
    tree = Settings()
    store = MemoryStore("test")
    discovery = DiscoveryServer(store)
    assert discovery.settings == tree.xds
    assert ResourceCache()._max == tree.xds.cache_size
    assert RestDiscovery(discovery).settings == tree.rest
    options = McpSourceOptions()
    assert (options.max_wait, options.quiesce) == (tree.mcp.max_wait, tree.mcp.quiesce)
    assert WebhookServer("c.pem", "k.pem")._read_timeout == tree.webhook.read_timeout
    assert FileSource(tmp_path)._debounce == tree.file_debounce
    bootstrap = EnvoyBootstrapOptions(node_id="sidecar~10.0.0.1~a.b~b.svc.cluster.local")
    assert bootstrap.rest_refresh_delay == tree.rest.refresh_delay
    assert bootstrap.rest_request_timeout == tree.rest.request_timeout
    discovery.close()
    await asyncio.sleep(0)


def test_every_class_of_the_tree_is_named_by_the_settings_module() -> None:
    """The tree's front door: its parts may be written in modules of their own
    (``pilothouse.xds_settings``), and ``pilothouse.settings`` still names each one."""
    found: list[type] = []

    def walk(tree: type) -> None:
        found.append(tree)
        for kind in typing.get_type_hints(tree).values():
            if isinstance(kind, type) and dataclasses.is_dataclass(kind):
                walk(kind)

    walk(Settings)
    assert {"XdsSettings", "DebounceSettings", "AdmissionSettings"} <= {t.__name__ for t in found}
    for tree in found:
        assert getattr(pilothouse.settings, tree.__name__) is tree

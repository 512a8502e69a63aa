"""``etcd://`` addresses: several endpoints, a prefix, and the source they build."""

from __future__ import annotations

import pytest

from pilothouse.sources.addresses import AddressError, Scheme, build_source, parse_address
from pilothouse.sources.etcd import EtcdSource


def test_several_endpoints_and_a_prefix() -> None:
    parsed = parse_address("etcd://a:1,[::1]:2,c:3/mesh/prod")
    assert parsed.scheme is Scheme.ETCD
    assert parsed.endpoints == (("a", 1), ("::1", 2), ("c", 3))
    assert parsed.path == "/mesh/prod"
    assert str(parsed) == "etcd://a:1,[::1]:2,c:3/mesh/prod"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("etcd://a:1,b/mesh", "a host and a port are required"),
        ("etcd://a:1,,b:2/mesh", "a host and a port are required"),
        ("etcd://a:0/mesh", "port 0"),
        ("etcd://a:1/mesh?x=1", "no query"),
    ],
)
def test_bad_endpoint_lists_say_why(text: str, says: str) -> None:
    with pytest.raises(AddressError, match=says):
        parse_address(text)


def test_builds_an_etcd_source_over_every_endpoint() -> None:
    source = build_source("etcd://a:1,b:2/mesh/", default_namespace="apps")
    assert isinstance(source, EtcdSource)
    assert source.endpoints == (("a", 1), ("b", 2))
    assert source.layout.root == b"/mesh/"
    assert source.loader.default_namespace == "apps"
    assert source.name == "etcd://a:1,b:2/mesh"
    assert not source.has_synced()
    assert not source.availability().available


def test_flags_and_mesh_config_wire_etcd_sources() -> None:
    from pilothouse.cli.config_sources import config_sources
    from pilothouse.settings import Settings

    settings = Settings(config_dirs=(), config_sources=("etcd://a:1/flag",))
    built = config_sources(settings, mesh_sources=["etcd://b:2,c:3/mesh"])
    etcd = [s for s in built if isinstance(s, EtcdSource)]
    assert [s.name for s in etcd] == ["etcd://a:1/flag", "etcd://b:2,c:3/mesh"]


def test_the_environment_list_keeps_etcd_endpoints_together() -> None:
    from pilothouse.cli.config_sources import rejoin_etcd_endpoints
    from pilothouse.environment import from_environment

    values = from_environment(
        {"PILOTHOUSE_CONFIG_SOURCES": "etcd://a:1,b:2/mesh,xds://c:3,etcd://d:4,e:5"}
    )
    assert rejoin_etcd_endpoints(values["config_sources"]) == [
        "etcd://a:1,b:2/mesh",
        "xds://c:3",
        "etcd://d:4,e:5",
    ]

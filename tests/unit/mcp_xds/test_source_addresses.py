"""Config source addresses: the accepted forms, clear errors for the rest, and build_source."""

from __future__ import annotations

from pathlib import Path

import pytest

from pilothouse.sources.addresses import (
    AddressError,
    Scheme,
    SourceAddress,
    UnsupportedSource,
    build_source,
    parse_address,
)
from pilothouse.sources.fs import FileSource
from pilothouse.sources.xds_upstream import XdsUpstreamSource


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("fs:///etc/istio/mesh", SourceAddress(Scheme.FS, path="/etc/istio/mesh")),
        ("/srv/mesh", SourceAddress(Scheme.FS, path="/srv/mesh")),
        ("./mesh", SourceAddress(Scheme.FS, path="./mesh")),
        ("mesh", SourceAddress(Scheme.FS, path="mesh")),
        ("xds://istiod.mesh:15010", SourceAddress(Scheme.XDS, "istiod.mesh", 15010)),
        ("xds://127.0.0.1:15010/", SourceAddress(Scheme.XDS, "127.0.0.1", 15010)),
        ("XDS://Upstream:1", SourceAddress(Scheme.XDS, "upstream", 1)),
        ("xds://[::1]:15010", SourceAddress(Scheme.XDS, "::1", 15010)),
        ("mcp://galley:9901", SourceAddress(Scheme.MCP, "galley", 9901)),
        (
            "etcd://127.0.0.1:2379/a/b",
            SourceAddress(Scheme.ETCD, "127.0.0.1", 2379, "/a/b", endpoints=(("127.0.0.1", 2379),)),
        ),
        (
            "etcd://etcd:2379",
            SourceAddress(Scheme.ETCD, "etcd", 2379, "/", endpoints=(("etcd", 2379),)),
        ),
        ("  xds://a:2  ", SourceAddress(Scheme.XDS, "a", 2)),
    ],
)
def test_valid_addresses(text: str, expected: SourceAddress) -> None:
    assert parse_address(text) == expected


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", "empty"),
        ("k8s://apiserver:443", "names no host"),
        ("http://a:1", "unsupported scheme 'http'"),
        ("fs://relative/dir", "absolute path"),
        ("fs:///dir?x=1", "plain path"),
        ("xds://istiod", "a host and a port are required"),
        ("xds://:15010", "a host and a port are required"),
        ("xds://istiod:notaport", "xds://host:port"),
        ("xds://istiod:70000", "xds://host:port"),
        ("xds://istiod:0", "port 0"),
        ("xds://istiod:15010/extra", "takes no path"),
        ("xds://user@istiod:15010", "no user"),
        ("mcp://galley:9901?x=y", "no user, query"),
        ("istiod:15010", "without a scheme"),
    ],
)
def test_invalid_addresses_say_why(text: str, says: str) -> None:
    with pytest.raises(AddressError) as problem:
        parse_address(text)
    assert says in str(problem.value)


@pytest.mark.parametrize(
    "text",
    ["fs:///etc/mesh", "xds://a:1", "xds://[::1]:15010", "mcp://b:2", "etcd://c:3/p"],
)
def test_str_is_the_canonical_form(text: str) -> None:
    assert str(parse_address(text)) == text
    assert parse_address(str(parse_address(text))) == parse_address(text)


def test_build_fs_source(tmp_path: Path) -> None:
    source = build_source(f"fs://{tmp_path}", default_namespace="apps")
    assert isinstance(source, FileSource)
    assert source.root == tmp_path.resolve()
    assert source.loader.default_namespace == "apps"
    assert source.store.name == f"fs://{tmp_path.resolve()}"
    assert not source.has_synced()


def test_build_xds_source() -> None:
    source = build_source("xds://upstream:15010")
    assert isinstance(source, XdsUpstreamSource)
    assert (source.host, source.port) == ("upstream", 15010)
    assert source.name == "xds://upstream:15010"
    assert not source.has_synced()


@pytest.mark.parametrize("text", ["mcp://galley:9901"])
def test_other_schemes_are_not_supported_yet(text: str) -> None:
    with pytest.raises(UnsupportedSource, match="not supported yet"):
        build_source(text)

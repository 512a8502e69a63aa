"""Structured log lines and per-scope levels."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator

import pytest

from pilothouse.logfmt import LevelSpecError, configure, parse_levels


def test_parse_levels() -> None:
    assert parse_levels("info") == (logging.INFO, {})
    assert parse_levels("default:warn,xds:debug,sources.fs:error") == (
        logging.WARNING,
        {"xds": logging.DEBUG, "sources.fs": logging.ERROR},
    )
    with pytest.raises(LevelSpecError) as caught:
        parse_levels("xds:chatty")
    assert "unknown log level 'chatty'" in str(caught.value)


@pytest.fixture(autouse=True)
def restore_logging() -> Iterator[None]:
    root = logging.getLogger("pilothouse")
    saved = (list(root.handlers), root.level, root.propagate)
    yield
    root.handlers[:] = saved[0]
    root.setLevel(saved[1])
    root.propagate = saved[2]
    logging.getLogger("pilothouse.xds").setLevel(logging.NOTSET)


def test_one_line_per_event_with_fields_and_scope_levels() -> None:
    stream = io.StringIO()
    configure("default:info,xds:warn", stream)
    logging.getLogger("pilothouse.sources").info(
        "config add", extra={"key": "Gateway ns/gw", "origin": "a b.yaml:3"}
    )
    logging.getLogger("pilothouse.xds").info("hidden by the scope level")
    logging.getLogger("pilothouse.xds").warning("shown")
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2
    stamp, level, scope, *_ = lines[0].split(" ")
    assert stamp.endswith("Z") and level == "info" and scope == "sources"
    assert lines[0].endswith('config add key="Gateway ns/gw" origin="a b.yaml:3"')
    assert " warn xds shown" in lines[1]


def test_the_kube_scope_still_sets_the_kubernetes_loggers_it_became() -> None:
    """``kube:debug`` (the scope of the old ``pilothouse.kube`` package) sets the
    Kubernetes source's and registry's scopes; their own names work as any scope's."""
    stream = io.StringIO()
    source = logging.getLogger("pilothouse.sources.kubernetes")
    registry = logging.getLogger("pilothouse.registry.kubernetes")
    saved = (source.level, registry.level)
    try:
        configure("default:warn,kube:debug", stream)
        assert (source.level, registry.level) == (logging.DEBUG, logging.DEBUG)
        assert source.isEnabledFor(logging.DEBUG) and registry.isEnabledFor(logging.DEBUG)
        assert not logging.getLogger("pilothouse.xds").isEnabledFor(logging.INFO)
        source.debug("watch opened")
        assert " debug sources.kubernetes watch opened" in stream.getvalue()
        configure("registry.kubernetes:error", stream)
        assert registry.level == logging.ERROR
    finally:
        source.setLevel(saved[0])
        registry.setLevel(saved[1])

"""The MCP encode benchmark compares like with like: its baselines write the same bytes."""

from __future__ import annotations

import dataclasses
import datetime
import json

import pytest

from bench.mcp_encode import FIRST_SEEN, loop_varint, main, protobuf_way, service_entries
from pilothouse.config.mcp_resource import encode_resource
from pilothouse.protowire import varint


def test_the_baseline_encoding_is_the_codecs_bytes() -> None:
    configs = service_entries(5)
    stamped = dataclasses.replace(
        configs[0], creation_time=datetime.datetime(2024, 2, 3, tzinfo=datetime.UTC)
    )
    for config in (*configs, stamped):
        assert protobuf_way(config, "v7", FIRST_SEEN) == encode_resource(config, "v7", FIRST_SEEN)


def test_the_baseline_varint_is_protowires() -> None:
    for value in (0, 127, 128, 16_383, 16_384, 2**40):
        assert loop_varint(value) == varint(value)


def test_it_prints_both_figures(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.argv", ["mcp_encode.py", "--services", "20", "--runs", "1"])
    main()
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["benchmark"] for line in lines] == ["mcp_encode", "protowire_varint"]
    assert all(line["ratio_to_baseline"] > 0 for line in lines)
    assert lines[0]["objects"] == 20

"""PILOTHOUSE_* variables: every knob can be set, bad values and unknown names are errors."""

from __future__ import annotations

import os
import typing
from pathlib import Path
from typing import Any, Literal

import pytest

from pilothouse.environment import OTHER_VARIABLES, SettingsError, from_environment
from pilothouse.settings import Knob, Settings, knobs

SAMPLES: dict[str, tuple[str, Any]] = {
    "PILOTHOUSE_JWKS_ALLOWED_HOSTS": (
        "issuer.internal, 10.0.0.0/8",
        ("issuer.internal", "10.0.0.0/8"),
    ),
    "PILOTHOUSE_WASM_ALLOWED_HOSTS": (
        "modules.internal, 10.0.0.0/8",
        ("modules.internal", "10.0.0.0/8"),
    ),
}
"""Knobs that check their values: a value they take."""


def changed_value(knob: Knob) -> tuple[str, Any]:
    """A value other than the default, as text and as the value it must become."""
    if knob.env in SAMPLES:
        return SAMPLES[knob.env]
    if knob.kind is bool:
        return ("false", False) if knob.default else ("true", True)
    if knob.kind is int:
        return str(knob.default + 7), knob.default + 7
    if knob.kind is float:
        return str(knob.default + 0.25), knob.default + 0.25
    if knob.kind is str:
        return "changed:1", "changed:1"
    if typing.get_origin(knob.kind) is Literal:
        other = next(c for c in typing.get_args(knob.kind) if c != knob.default)
        return other, other
    if knob.kind == tuple[Path, ...]:
        return f"/a{os.pathsep}/b", (Path("/a"), Path("/b"))
    assert knob.kind == tuple[str, ...], knob
    return "a=1, b=2", ("a=1", "b=2")


def leaf(settings: Settings, path: str) -> Any:
    value: Any = settings
    for part in path.split("."):
        value = getattr(value, part)
    return value


@pytest.mark.parametrize("knob", knobs(), ids=lambda knob: knob.env)
def test_every_knob_is_read_from_its_variable(knob: Knob) -> None:
    text, expected = changed_value(knob)
    assert expected != knob.default
    values = from_environment({knob.env: text})
    assert values == {knob.path: expected}
    settings = Settings().with_overrides(values)
    assert leaf(settings, knob.path) == expected
    others = [k for k in knobs() if k.path != knob.path]
    assert all(leaf(settings, k.path) == k.default for k in others)


def test_nothing_set_means_the_defaults() -> None:
    assert from_environment({"HOME": "/root", "PILOT_DEBOUNCE_AFTER": "1s"}) == {}
    assert Settings().with_overrides(from_environment({})) == Settings()


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        ("PILOTHOUSE_XDS_CACHE_SIZE", "lots", "an integer (int)"),
        ("PILOTHOUSE_XDS_CACHE_SIZE", "-1", "an integer (int) of 0 or more"),
        ("PILOTHOUSE_PUSH_THROTTLE", "2.5", "an integer (int)"),
        ("PILOTHOUSE_DEBOUNCE_AFTER", "100ms", "a number (float)"),
        ("PILOTHOUSE_XDS_KEEPALIVE_TIME", "nan", "a number (float)"),
        ("PILOTHOUSE_XDS_SEND_TIMEOUT", "inf", "a number (float)"),
        ("PILOTHOUSE_DRAIN_SECONDS", "-5", "a number (float) of 0 or more"),
        ("PILOTHOUSE_EDS_DEBOUNCE", "maybe", "a boolean (bool)"),
        ("PILOTHOUSE_ACCEPT_MCP_SOURCES", "", "a boolean (bool)"),
        ("PILOTHOUSE_ROLE", "galley", "one of 'all', 'config-server'"),
    ],
)
def test_a_bad_value_names_the_variable_the_value_and_the_type(
    name: str, value: str, expected: str
) -> None:
    with pytest.raises(SettingsError) as caught:
        from_environment({name: value})
    assert str(caught.value).startswith(f"{name}={value!r}: expected {expected}")


@pytest.mark.parametrize(
    ("name", "nearest"),
    [
        ("PILOTHOUSE_DEBOUNCE_AFTR", "PILOTHOUSE_DEBOUNCE_AFTER"),
        ("PILOTHOUSE_CACHE_SIZE", "PILOTHOUSE_XDS_CACHE_SIZE"),
        ("PILOTHOUSE_XDS_KEEPALIVE", "PILOTHOUSE_XDS_KEEPALIVE_TIME"),
        ("PILOTHOUSE_WARMING_TIMEOUT", "PILOTHOUSE_XDS_WARMING_TIMEOUT"),
        ("PILOTHOUSE_XDS_PUSH_THROTTLE", "PILOTHOUSE_PUSH_THROTTLE"),
        ("PILOTHOUSE_FUZZ_EXAMPLE", "PILOTHOUSE_FUZZ_EXAMPLES"),
    ],
)
def test_an_unknown_variable_names_the_nearest_known_one(name: str, nearest: str) -> None:
    with pytest.raises(SettingsError) as caught:
        from_environment({name: "1"})
    assert str(caught.value) == f"unknown environment variable {name}: did you mean {nearest}?"


def test_an_unknown_variable_like_nothing_points_at_the_readme() -> None:
    with pytest.raises(SettingsError, match="PILOTHOUSE_QQQQ: the known ones are listed"):
        from_environment({"PILOTHOUSE_QQQQ": "1"})


def test_every_problem_is_reported_at_once() -> None:
    with pytest.raises(SettingsError) as caught:
        from_environment(
            {"PILOTHOUSE_ROLLE": "all", "PILOTHOUSE_XDS_CACHE_SIZE": "x", "PILOTHOUSE_ROLE": "all"}
        )
    lines = str(caught.value).splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("unknown environment variable PILOTHOUSE_ROLLE")
    assert lines[1].startswith("PILOTHOUSE_XDS_CACHE_SIZE='x'")


def test_variables_that_are_not_server_knobs_pass() -> None:
    assert set(OTHER_VARIABLES) == {
        "PILOTHOUSE_FUZZ_EXAMPLES",
        "PILOTHOUSE_LOADTEST_CHANGE",
        "PILOTHOUSE_STORE",
    }
    environ = dict.fromkeys(OTHER_VARIABLES, "3") | {"PILOTHOUSE_ROLE": "config-server"}
    assert from_environment(environ) == {"role": "config-server"}


def test_the_process_environment_is_read_when_none_is_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PILOTHOUSE_XDS_WARMING_TIMEOUT", "0.5")
    assert from_environment()["xds.warming_timeout"] == 0.5

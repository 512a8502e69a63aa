"""The open-file limit is raised to the hard limit, and left alone when it cannot be."""

from __future__ import annotations

import resource

import pytest

from pilothouse.descriptors import raise_open_file_limit


def test_soft_limit_rises_to_the_hard_one(monkeypatch: pytest.MonkeyPatch) -> None:
    limits = {"now": (1024, 65536)}
    monkeypatch.setattr(resource, "getrlimit", lambda _which: limits["now"])

    def setrlimit(_which: int, value: tuple[int, int]) -> None:
        limits["now"] = value

    monkeypatch.setattr(resource, "setrlimit", setrlimit)
    assert raise_open_file_limit() == (1024, 65536)
    assert limits["now"] == (65536, 65536)


def test_a_refused_raise_keeps_the_soft_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(resource, "getrlimit", lambda _which: (1024, 1 << 40))

    def setrlimit(_which: int, _value: tuple[int, int]) -> None:
        raise ValueError("not allowed to raise maximum limit")

    monkeypatch.setattr(resource, "setrlimit", setrlimit)
    assert raise_open_file_limit() == (1024, 1024)


def test_an_unlimited_hard_limit_is_not_copied(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[int, int]] = []
    monkeypatch.setattr(resource, "getrlimit", lambda _which: (1024, resource.RLIM_INFINITY))
    monkeypatch.setattr(resource, "setrlimit", lambda _which, value: calls.append(value))
    assert raise_open_file_limit() == (1024, 1024)
    assert calls == []

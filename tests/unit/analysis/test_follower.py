"""The follower analyzes the store after a burst of changes, logs each finding once when
it appears and at debug level when it goes away, and a failing analysis keeps the last
result instead of ending the server."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest

from pilothouse.analysis import follower as follower_module
from pilothouse.analysis.follower import AnalysisFollower
from pilothouse.config.load import Loader
from pilothouse.config.model import Config
from pilothouse.kinds.table import SCHEMAS
from pilothouse.sources.memory import MemoryStore


def config(text: str) -> Config:
    (found,) = Loader(SCHEMAS).load_strict(text, "mesh.yaml")
    return found


RULE = config(
    "apiVersion: networking.istio.io/v1\nkind: DestinationRule\n"
    "metadata: {name: x, namespace: shop}\nspec: {host: nowhere}\n"
)
OTHER = config(
    "apiVersion: networking.istio.io/v1\nkind: DestinationRule\n"
    "metadata: {name: y, namespace: shop}\nspec: {host: elsewhere}\n"
)


async def next_run(follower: AnalysisFollower, after: int) -> None:
    # generous: a loaded machine slows each analysis run (the deadline only bounds a
    # failure)
    async with asyncio.timeout(20):
        while follower.latest.runs <= after:
            await asyncio.sleep(0.01)


async def test_findings_are_logged_once_and_resolved(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="pilothouse.analysis")
    store = MemoryStore()
    # share 1: the next run waits for no fraction of a slow run's time (the share has a
    # test of its own below)
    follower = AnalysisFollower(store, quiet=0.01, most=0.2, share=1.0)
    store.subscribe(follower.on_event)
    store.mark_synced()
    task = asyncio.create_task(follower.run())
    try:
        await next_run(follower, 0)
        assert follower.latest.messages == ()
        store.apply(RULE)
        await next_run(follower, 1)
        store.apply(OTHER)
        await next_run(follower, 2)
        store.delete(RULE.key)
        await next_run(follower, 3)
    finally:
        task.cancel()
    assert [m.type.code for m in follower.latest.messages] == ["IST0174"]
    assert follower.latest.counts() == {("Warning", "IST0174"): 1}
    lines = [(r.levelname, r.getMessage().partition(" The host")[0]) for r in caplog.records]
    assert lines == [
        ("WARNING", "analysis: Warning [IST0174] (DestinationRule shop/x mesh.yaml:1)"),
        ("WARNING", "analysis: Warning [IST0174] (DestinationRule shop/y mesh.yaml:1)"),
        ("DEBUG", "analysis resolved: Warning [IST0174] (DestinationRule shop/x mesh.yaml:1)"),
    ]


async def test_a_failing_analysis_keeps_the_last_result(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    store = MemoryStore()
    store.apply(RULE)
    follower = AnalysisFollower(store, logs=False)
    first = await follower.analyze_now()

    def broken(*_args: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(follower_module, "mesh_view", broken)
    assert await follower.analyze_now() is first
    assert "the analysis of the served config failed" in caplog.text


async def test_analysis_takes_at_most_its_share_of_the_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A run that takes 50 ms with a share of 25 %: the next starts no sooner than 200 ms
    after it began, however soon the config changes."""
    started: list[float] = []

    def slow(*_args: object) -> list[object]:
        started.append(time.monotonic())
        time.sleep(0.05)
        return []

    monkeypatch.setattr(follower_module, "_analyze", slow)
    store = MemoryStore()
    store.mark_synced()
    follower = AnalysisFollower(store, quiet=0.001, most=0.01, share=0.25, logs=False)
    store.subscribe(follower.on_event)
    task = asyncio.create_task(follower.run())
    try:
        await next_run(follower, 0)
        store.apply(RULE)
        await next_run(follower, 1)
    finally:
        task.cancel()
    assert started[1] - started[0] >= 0.2


async def test_the_first_run_waits_for_ready() -> None:
    store = MemoryStore()
    store.mark_synced()
    ready = asyncio.Event()
    follower = AnalysisFollower(store, quiet=0.001, ready=ready.wait, logs=False)
    task = asyncio.create_task(follower.run())
    try:
        for _ in range(20):
            await asyncio.sleep(0)
        assert follower.latest.runs == 0
        ready.set()
        await next_run(follower, 0)
    finally:
        task.cancel()

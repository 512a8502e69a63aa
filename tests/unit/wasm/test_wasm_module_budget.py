"""The byte budget of the Wasm module cache: past it, modules no served WasmPlugin names
go first, least recently used first; served and just-arrived modules stay, and being
over the budget with only those is said once in a warning. ``/metrics`` shows the
cache's state: modules and bytes kept, the budget, drops, over it or not, fetches."""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from pilothouse.admin.metrics_pilothouse import WasmModuleCollector
from pilothouse.security.wasm_modules import ARRIVAL_GRACE, WasmModules

SIZE = 1000


class Cache:
    """A running :class:`WasmModules` over ``file://`` modules of :data:`SIZE` bytes,
    with a clock the test moves and the digests it says are served."""

    def __init__(self, directory: Path, budget: int) -> None:
        self.directory = directory
        self.now = 0.0
        self.served: set[str] = set()
        self.arrived: list[str] = []
        self.modules = WasmModules(
            self.arrived.append,
            budget=budget,
            referenced=lambda: self.served,
            clock=lambda: self.now,
        )

    def url(self, name: str) -> str:
        path = self.directory / f"{name}.wasm"
        if not path.exists():
            path.write_bytes(b"\0asm\x01\0\0\0" + name.encode() * (SIZE - 8))
        return f"file://{path}"

    def digest(self, name: str) -> str:
        return hashlib.sha256(Path(self.url(name)[len("file://") :]).read_bytes()).hexdigest()

    async def fetch(self, name: str, *, look_up: bool = True) -> None:
        """Ask for ``name`` until it arrives; then (``look_up``) as a push context would."""
        url = self.url(name)
        assert self.modules(url, "") is None
        before = self.arrived.count(url)
        await until(lambda: self.arrived.count(url) > before)
        if look_up:
            assert self.modules(url, "") is not None

    def held(self, name: str) -> bool:
        return self.modules._held.get((self.url(name), "")) is not None


async def until(condition: Callable[[], object], timeout: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)


@pytest.fixture
async def running(tmp_path: Path) -> AsyncIterator[Callable[[int], Cache]]:
    made: list[tuple[Cache, asyncio.Task[None]]] = []

    def start(budget: int) -> Cache:
        cache = Cache(tmp_path, budget)
        made.append((cache, asyncio.create_task(cache.modules.run())))
        return cache

    yield start
    for cache, task in made:
        cache.modules.close()
        await asyncio.wait_for(task, 5)


async def test_past_the_budget_the_least_recently_used_module_goes(
    running: Callable[[int], Cache],
) -> None:
    cache = running(2 * SIZE + SIZE // 2)
    await cache.fetch("a")
    await cache.fetch("b")
    assert cache.modules(cache.url("a"), "") is not None  # a used after b
    await cache.fetch("c")
    assert (cache.held("a"), cache.held("b"), cache.held("c")) == (True, False, True)
    assert (cache.modules.bytes_held, cache.modules.evictions) == (2 * SIZE, 1)
    assert not cache.modules.over_budget
    # named again, the dropped module is fetched again (and a, now least recent, goes)
    await cache.fetch("b")
    assert (cache.held("a"), cache.held("b"), cache.held("c")) == (False, True, True)
    assert cache.arrived.count(cache.url("b")) == 2


async def test_a_served_module_stays_however_old(running: Callable[[int], Cache]) -> None:
    cache = running(2 * SIZE + SIZE // 2)
    await cache.fetch("a")
    await cache.fetch("b")
    cache.served = {cache.digest("a")}  # a is the least recently used, but served
    await cache.fetch("c")
    assert (cache.held("a"), cache.held("b"), cache.held("c")) == (True, False, True)


async def test_over_the_budget_with_served_modules_only_is_said_once(
    running: Callable[[int], Cache], caplog: pytest.LogCaptureFixture
) -> None:
    cache = running(SIZE + SIZE // 2)
    cache.served = {cache.digest("a"), cache.digest("b")}
    with caplog.at_level(logging.WARNING, logger="pilothouse.wasm"):
        await cache.fetch("a")
        await cache.fetch("b")
        assert cache.held("a") and cache.held("b") and cache.modules.over_budget
        cache.served = {cache.digest("b"), cache.digest("c")}
        await cache.fetch("c")
    assert (cache.held("a"), cache.held("b"), cache.held("c")) == (False, True, True)
    assert cache.modules.over_budget  # b and c are served: kept
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, warnings
    assert "over the budget of 1500 (PILOTHOUSE_WASM_CACHE_BYTES), all served" in warnings[0]
    cache.served = {cache.digest("c")}
    await cache.fetch("d")
    assert (cache.held("b"), cache.held("c"), cache.held("d")) == (False, True, True)
    assert cache.modules.over_budget  # c served, d just arrived


async def test_a_module_just_arrived_stays_until_looked_up_or_its_grace_ends(
    running: Callable[[int], Cache],
) -> None:
    cache = running(SIZE + SIZE // 2)
    await cache.fetch("a", look_up=False)  # the push context has not asked yet
    await cache.fetch("b", look_up=False)
    assert cache.held("a") and cache.held("b")
    cache.now += ARRIVAL_GRACE
    await cache.fetch("c", look_up=False)
    assert (cache.held("a"), cache.held("b"), cache.held("c")) == (False, False, True)
    assert (cache.modules.bytes_held, cache.modules.over_budget) == (SIZE, False)


async def test_the_metrics_show_the_cache_filled_past_its_budget(
    running: Callable[[int], Cache], tmp_path: Path
) -> None:
    cache = running(SIZE + SIZE // 2)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(WasmModuleCollector(cache.modules.state))

    def read(name: str, **labels: str) -> float | None:
        return registry.get_sample_value(name, labels)

    assert read("pilothouse_wasm_cache_budget_bytes") == SIZE + SIZE // 2
    assert (read("wasm_cache_entries"), read("pilothouse_wasm_cache_bytes")) == (0, 0)
    await cache.fetch("a")
    await cache.fetch("b")  # past the budget: a, least recently used and not served, goes
    assert (read("wasm_cache_entries"), read("pilothouse_wasm_cache_bytes")) == (1, SIZE)
    assert read("pilothouse_wasm_cache_evictions_total") == 1
    assert read("pilothouse_wasm_cache_over_budget") == 0
    cache.served = {cache.digest("b"), cache.digest("c")}
    await cache.fetch("c")  # both served: kept past the budget
    assert (read("wasm_cache_entries"), read("pilothouse_wasm_cache_bytes")) == (2, 2 * SIZE)
    assert read("pilothouse_wasm_cache_over_budget") == 1
    assert read("pilothouse_wasm_cache_evictions_total") == 1
    (tmp_path / "broken.wasm").write_bytes(b"not wasm")
    url = f"file://{tmp_path / 'broken.wasm'}"
    assert cache.modules(url, "") is None
    await until(lambda: read("pilothouse_wasm_module_fetches_total", result="not_wasm") == 1)
    assert read("pilothouse_wasm_module_fetches_total", result="ok") == 3
    assert read("wasm_cache_entries") == 2

"""The admin API on a running ``pilothouse serve``, with simulated proxies on real gRPC.

Each knob is changed over HTTP and its effect is observed on the next push, as the
proxies see it: the debounce times change when a config change reaches them, the
throttle bounds how many of them are pushed at once, a forced push reaches every one,
a disconnected proxy reconnects. Each change is logged with the old and new value and
the client's address.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest

from pilothouse.loadtest.fleet import ProxyFleet, fleet_identities
from pilothouse.loadtest.proxy import SimulatedProxy
from pilothouse.logscopes import scope_names
from pilothouse.protocol.type_urls import CDS, LDS
from pilothouse.push.workers import default_push_throttle
from tests.integration.serve_in_process import (
    ServeInProcess,
    serve_in_process,
    service_entry,
    write_atomically,
)

PROXIES = 6
FAST = {"xds.debounce.debounce_after": 0.05, "xds.debounce.debounce_max": 5.0}


@pytest.fixture(autouse=True)
def restore_log_levels() -> Iterator[None]:
    loggers = [logging.getLogger("pilothouse")] + [
        logging.getLogger(f"pilothouse.{scope}") for scope in scope_names()[1:]
    ]
    saved = [(logger, logger.level) for logger in loggers]
    root = logging.getLogger("pilothouse")
    propagate = root.propagate
    root.propagate = True  # to caplog, whatever an earlier test configured
    yield
    root.propagate = propagate
    for logger, level in saved:
        logger.setLevel(level)


@pytest.fixture
async def plane(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> AsyncIterator[ServeInProcess]:
    config = tmp_path / "mesh"
    config.mkdir()
    (config / "alpha.yaml").write_text(service_entry("alpha"))
    async with serve_in_process(monkeypatch, config, FAST) as running:
        yield running


@pytest.fixture
async def proxies(plane: ServeInProcess) -> AsyncIterator[list[SimulatedProxy]]:
    fleet = ProxyFleet(plane.xds_target, fleet_identities(PROXIES), seed=1)
    await fleet.start()
    try:
        report = await fleet.wait_converged(timeout=30)
        assert report.converged, report.unconverged
        yield list(fleet.proxies)
    finally:
        await fleet.close()


async def pushed_after(
    proxies: list[SimulatedProxy], action: Callable[[], None], type_url: str = CDS
) -> float:
    """Run ``action`` and wait until every proxy got a new ``type_url`` response; the
    seconds from the action to the last of them."""
    before = {p.node_id: p.counters(type_url).responses for p in proxies}
    started = time.monotonic()
    action()
    deadline = started + 20
    while not all(p.counters(type_url).responses > before[p.node_id] for p in proxies):
        assert time.monotonic() < deadline, "the push never reached every proxy"
        await asyncio.sleep(0.01)
    return max(p.last_response_time(type_url) or 0.0 for p in proxies) - started


async def pushes_finished(plane: ServeInProcess, count: int) -> None:
    """Wait until the push workers have finished ``count`` pushes (a push is finished
    once its responses are written, a moment after the proxy has read them)."""
    deadline = time.monotonic() + 10
    while plane.discovery.worker_stats.pushes < count:
        assert time.monotonic() < deadline, plane.discovery.worker_stats
        await asyncio.sleep(0.01)


def add_service(plane: ServeInProcess, name: str) -> Callable[[], None]:
    return lambda: write_atomically(plane.config_dir / f"{name}.yaml", service_entry(name))


def changes(
    caplog: pytest.LogCaptureFixture, message: str = "knob changed"
) -> list[dict[str, object]]:
    fields = ("knob", "old", "new", "by", "via", "connections", "proxy")
    return [
        {f: getattr(r, f) for f in fields if hasattr(r, f)}
        for r in caplog.records
        if r.name == "pilothouse.admin" and r.getMessage() == message
    ]


async def test_knobs_are_listed_with_their_values(plane: ServeInProcess) -> None:
    listed = await plane.request("GET", "/admin/knobs")
    assert listed.status == 200
    values = {k["name"]: k["value"] for k in listed.body["knobs"]}
    assert values["debounce.after"] == 0.05 and values["debounce.max"] == 5.0
    assert values["debounce.eds"] is True
    assert values["push.throttle"] == default_push_throttle()
    assert {"log.default", "log.xds", "log.push", "log.sources"} <= set(values)
    one = await plane.request("GET", "/admin/knobs/push.throttle")
    assert one.body == {
        "name": "push.throttle",
        "value": default_push_throttle(),
        "type": "int",
        "description": (
            "concurrent per-proxy pushes; 0 sets the default, 100 (PILOT_PUSH_THROTTLE)"
        ),
        "setting": "PILOTHOUSE_PUSH_THROTTLE",
    }
    unknown = await plane.request("GET", "/admin/knobs/push.throtle")
    assert (unknown.status, unknown.body["error"]) == (
        404,
        "unknown knob 'push.throtle': did you mean 'push.throttle'?",
    )


async def test_debounce_times_changed_over_http_time_the_next_push(
    plane: ServeInProcess, proxies: list[SimulatedProxy], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="pilothouse.admin")
    baseline = await pushed_after(proxies, add_service(plane, "beta"))
    assert baseline < 1.0

    answer = await plane.request("PUT", "/admin/knobs/debounce.after", 2.5)
    assert (answer.status, answer.body) == (
        200,
        {"name": "debounce.after", "old": 0.05, "new": 2.5},
    )
    assert changes(caplog) == [
        {"knob": "debounce.after", "old": 0.05, "new": 2.5, "by": "127.0.0.1", "via": "admin-api"}
    ]
    slow = await pushed_after(proxies, add_service(plane, "gamma"))
    assert slow >= 2.5, f"pushed {slow:.2f} s after the change, within the new quiet time"

    answer = await plane.request("PUT", "/admin/knobs/debounce.after", "50ms")
    assert answer.body == {"name": "debounce.after", "old": 2.5, "new": 0.05}
    fast = await pushed_after(proxies, add_service(plane, "delta"))
    assert fast < 2.0, "well within the quiet time it had before"

    # A quiet time longer than the maximum: the maximum releases the push.
    await plane.request("PUT", "/admin/knobs/debounce.after", 60)
    answer = await plane.request("PUT", "/admin/knobs/debounce.max", 0.8)
    assert answer.body == {"name": "debounce.max", "old": 5.0, "new": 0.8}
    capped = await pushed_after(proxies, add_service(plane, "epsilon"))
    assert 0.8 <= capped < 5.0
    assert plane.discovery.settings.debounce.debounce_max == 0.8


async def test_the_throttle_changed_over_http_bounds_the_next_push(
    plane: ServeInProcess, proxies: list[SimulatedProxy], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="pilothouse.admin")
    assert plane.discovery.worker_stats.max_concurrent <= 1, "no push ran before this test"
    answer = await plane.request("PUT", "/admin/knobs/push.throttle", 1)
    assert answer.body == {"name": "push.throttle", "old": default_push_throttle(), "new": 1}
    await pushed_after(proxies, add_service(plane, "beta"))
    await pushes_finished(plane, PROXIES)
    assert plane.discovery.worker_stats.max_concurrent == 1, "one proxy at a time"

    answer = await plane.request("PUT", "/admin/knobs/push.throttle", "4")
    assert answer.body == {"name": "push.throttle", "old": 1, "new": 4}
    await pushed_after(proxies, add_service(plane, "gamma"))
    await pushes_finished(plane, 2 * PROXIES)
    assert plane.discovery.worker_stats.max_concurrent == 4, "four of the six at once"

    answer = await plane.request("PUT", "/admin/knobs/push.throttle", 0)
    assert answer.body == {"name": "push.throttle", "old": 4, "new": default_push_throttle()}
    assert [c["new"] for c in changes(caplog)] == [1, 4, default_push_throttle()]


async def test_a_full_push_over_http_reaches_every_proxy(
    plane: ServeInProcess, proxies: list[SimulatedProxy], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="pilothouse.admin")
    held = {p.node_id: dict(p.holds(CDS)) for p in proxies}
    before = {(p.node_id, t): p.counters(t).responses for p in proxies for t in (CDS, LDS)}
    answer = await plane.request("POST", "/admin/push")
    assert (answer.status, answer.body) == (202, {"push": "queued", "connections": PROXIES})
    deadline = time.monotonic() + 15
    while not all(p.counters(t).responses > before[p.node_id, t] for p, t in before_keys(proxies)):
        assert time.monotonic() < deadline, "the full push did not reach every proxy"
        await asyncio.sleep(0.01)
    # Nothing changed: the same clusters were sent again, as istiod's forced push does.
    assert {p.node_id: dict(p.holds(CDS)) for p in proxies} == held
    assert changes(caplog, "full push requested") == [
        {"by": "127.0.0.1", "via": "admin-api", "connections": PROXIES}
    ]


def before_keys(proxies: list[SimulatedProxy]) -> list[tuple[SimulatedProxy, str]]:
    return [(p, t) for p in proxies for t in (CDS, LDS)]


async def test_a_disconnected_proxy_reconnects(
    plane: ServeInProcess, proxies: list[SimulatedProxy], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="pilothouse.admin")
    target, other = proxies[2], proxies[3]
    opened = {p.node_id: p.streams_opened for p in proxies}
    (old_id,) = [
        c.id for c in plane.discovery.connections.values() if c.proxy.id == "app-2.default"
    ]

    answer = await plane.request("POST", "/admin/disconnect?proxyID=app-2.default")
    assert (answer.status, answer.body) == (200, {"disconnected": [old_id]})
    await target.wait_for(
        lambda p: p.streams_opened > opened[p.node_id] and p.connected and p.settled(), 15
    )
    assert {p.node_id: p.streams_opened for p in proxies if p is not target} == {
        p.node_id: opened[p.node_id] for p in proxies if p is not target
    }
    (new_id,) = [
        c.id for c in plane.discovery.connections.values() if c.proxy.id == "app-2.default"
    ]
    assert new_id != old_id
    assert changes(caplog, "proxy disconnected") == [
        {"proxy": "app-2.default", "connections": old_id, "by": "127.0.0.1", "via": "admin-api"}
    ]

    by_node = await plane.request("POST", f"/admin/disconnect?proxyID={other.node_id}")
    assert by_node.status == 200 and len(by_node.body["disconnected"]) == 1
    missing = await plane.request("POST", "/admin/disconnect")
    assert missing.status == 400
    assert missing.body["error"].startswith("name the proxy: ?proxyID=")
    unknown = await plane.request("POST", "/admin/disconnect?proxyID=app-22.default")
    assert (unknown.status, unknown.body["error"]) == (
        404,
        "no proxy 'app-22.default' is connected: did you mean 'app-2.default'?",
    )


async def test_a_log_level_changed_over_http_is_the_scopes_level(
    plane: ServeInProcess, proxies: list[SimulatedProxy], caplog: pytest.LogCaptureFixture
) -> None:
    xds = logging.getLogger("pilothouse.xds")
    xds.setLevel(logging.INFO)
    answer = await plane.request("PUT", "/admin/knobs/log.xds", "debug")
    assert answer.body == {"name": "log.xds", "old": "info", "new": "debug"}
    assert xds.getEffectiveLevel() == logging.DEBUG
    await plane.request("POST", "/admin/disconnect?proxyID=app-1.default")
    await proxies[1].wait_for(lambda p: p.connected and p.streams_opened > 1, 15)
    connected = [r for r in caplog.records if r.getMessage() == "proxy connected"]
    assert connected and connected[-1].levelno == logging.DEBUG, "debug lines are logged now"

    await plane.request("PUT", "/admin/knobs/log.xds", "error")
    caplog.clear()
    await plane.request("POST", "/admin/disconnect?proxyID=app-1.default")
    await proxies[1].wait_for(lambda p: p.connected and p.streams_opened > 2, 15)
    assert not [r for r in caplog.records if r.name == "pilothouse.xds"]


async def test_values_a_knob_cannot_take_are_400_and_change_nothing(
    plane: ServeInProcess, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="pilothouse.admin")
    refused = {
        ("debounce.after", b"-1"): (
            "debounce.after: expected seconds: a number of 0 or more (0.5) or a duration "
            "(100ms, 2s, 1m); got -1"
        ),
        ("debounce.after", b'"soon"'): (
            "debounce.after: expected seconds: a number of 0 or more (0.5) or a duration "
            '(100ms, 2s, 1m); got "soon"'
        ),
        ("push.throttle", b"2.5"): "push.throttle: expected a whole number of 0 or more; got 2.5",
        ("debounce.eds", b"1"): "debounce.eds: expected true or false; got 1",
        ("log.xds", b'"loud"'): (
            'log.xds: expected a log level: one of debug, info, warn, error, none; got "loud"'
        ),
        ("debounce.max", b"{not json"): (
            "debounce.max: body: not JSON: expecting property name enclosed in double quotes "
            "at line 1 column 2"
        ),
        ("debounce.max", b""): (
            'debounce.max: body: empty; send the new value as JSON, such as 0.5, true or "debug"'
        ),
    }
    before = (await plane.request("GET", "/admin/knobs")).body
    for (name, body), reason in refused.items():
        answer = await plane.request("PUT", f"/admin/knobs/{name}", body=body)
        assert (answer.status, answer.body) == (400, {"error": reason, "status": 400}), name
    assert (await plane.request("GET", "/admin/knobs")).body == before
    assert changes(caplog) == []
    unknown = await plane.request("PUT", "/admin/knobs/debounce.aftr", 1)
    assert (unknown.status, unknown.body["error"]) == (
        404,
        "unknown knob 'debounce.aftr': did you mean 'debounce.after'?",
    )
    wrong_method = await plane.request("DELETE", "/admin/knobs/debounce.after")
    assert wrong_method.status == 405


async def test_other_sites_cannot_make_changes(plane: ServeInProcess) -> None:
    cross = await plane.request("POST", "/admin/push", headers={"Origin": "http://evil.example"})
    assert cross.status == 403
    assert cross.body["error"].startswith("cross-site request refused")
    rebound = await plane.request("GET", "/admin/knobs", headers={"Host": "evil.example"})
    assert rebound.status == 421 and "DNS rebinding" in rebound.body["error"]
    # the rule holds for the whole admin port, not only the admin API
    assert (await plane.request("GET", "/ready", headers={"Host": "evil.example"})).status == 421


def outside_address() -> str | None:
    """An address of this machine that is not loopback, if it has one."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # TEST-NET-1: nothing is sent
            address = str(probe.getsockname()[0])
        except OSError:
            return None
    return None if address.startswith("127.") else address


@pytest.mark.parametrize("allow_remote", [False, True])
async def test_clients_not_on_this_host_are_refused_unless_allowed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, allow_remote: bool
) -> None:
    address = outside_address()
    if address is None:
        pytest.skip("this machine has no address but loopback")
    overrides = {"admin.address": "0.0.0.0:0", "admin.allow_remote": allow_remote}
    async with serve_in_process(monkeypatch, tmp_path, overrides) as running:
        knobs = await running.request("GET", "/admin/knobs", host=address)
        ready = await running.request("GET", "/ready", host=address)
        local = await running.request("GET", "/admin/knobs")
    assert ready.status == 200, "probes from elsewhere still work"
    assert local.status == 200
    if allow_remote:
        assert knobs.status == 200
    else:
        assert knobs.status == 403
        assert knobs.body["error"] == (
            f"/admin/knobs answers only clients on this host; {address} is not "
            "(set PILOTHOUSE_ADMIN_ALLOW_REMOTE=true to allow it)"
        )

"""ControlZ on a running ``pilothouse serve``: every topic's JSON, the scope and knob
changes, the pages and their headers, and what is refused."""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

import pilothouse
from pilothouse.logscopes import scope_names
from tests.integration.serve_in_process import ServeInProcess, serve_in_process, service_entry

TOPICS = ("scope", "knob", "mem", "proc", "arg", "env", "version")


@pytest.fixture(autouse=True)
def restore_log_scopes() -> Iterator[None]:
    loggers = [logging.getLogger("pilothouse")] + [
        logging.getLogger(f"pilothouse.{scope}") for scope in scope_names()[1:]
    ]
    saved = [(logger, logger.level, list(logger.filters)) for logger in loggers]
    root = logging.getLogger("pilothouse")
    propagate, root.propagate = root.propagate, True
    yield
    root.propagate = propagate
    for logger, level, filters in saved:
        logger.setLevel(level)
        logger.filters[:] = filters


@pytest.fixture
async def plane(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> AsyncIterator[ServeInProcess]:
    (tmp_path / "alpha.yaml").write_text(service_entry("alpha"))
    monkeypatch.setenv("CTRLZ_TEST_API_TOKEN", "s3cr3t-value")
    monkeypatch.setenv("CTRLZ_TEST_PLAIN", "plain-value")
    async with serve_in_process(monkeypatch, tmp_path) as running:
        assert running.bound.ctrlz_port > 0
        yield running


async def test_scopes_are_listed_read_and_changed_as_istioctl_does(
    plane: ServeInProcess, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="pilothouse.admin")
    logging.getLogger("pilothouse").setLevel(logging.INFO)
    logging.getLogger("pilothouse.xds").setLevel(logging.NOTSET)
    for path in ("/scopej", "/scopej/"):
        listed = await plane.ctrlz("GET", path)
        assert listed.status == 200
        assert [s["name"] for s in listed.body][:1] == ["default"]
        assert {"xds", "push", "sources", "admin"} <= {s["name"] for s in listed.body}
    one = await plane.ctrlz("GET", "/scopej/xds")
    assert set(one.body) == {
        "name", "description", "output_level", "stack_trace_level", "log_callers", "inherited"
    }  # fmt: skip
    assert (one.body["inherited"], one.body["stack_trace_level"]) == (True, "none")

    # istioctl admin log --level xds:debug sends the name and the one field, wants 202
    answer = await plane.ctrlz("PUT", "/scopej/xds", {"name": "xds", "output_level": "debug"})
    assert answer.status == 202
    assert (answer.body["output_level"], answer.body["inherited"]) == ("debug", False)
    assert logging.getLogger("pilothouse.xds").getEffectiveLevel() == logging.DEBUG
    camel = await plane.ctrlz(
        "PUT", "/scopej/xds", {"stackTraceLevel": "error", "logCallers": True}
    )
    assert camel.status == 202
    assert (camel.body["output_level"], camel.body["stack_trace_level"]) == ("debug", "error")
    assert camel.body["log_callers"] is True
    assert (await plane.ctrlz("GET", "/scopej/xds")).body == camel.body
    logged = [
        (r.scope, r.field, r.old, r.new, r.by, r.via)  # type: ignore[attr-defined]
        for r in caplog.records
        if r.getMessage() == "log scope changed"
    ]
    assert logged == [
        ("xds", "output_level", "info", "debug", "127.0.0.1", "controlz"),
        ("xds", "stack_trace_level", "none", "error", "127.0.0.1", "controlz"),
        ("xds", "log_callers", False, True, "127.0.0.1", "controlz"),
    ]


async def test_scope_changes_that_cannot_be_made_are_refused(plane: ServeInProcess) -> None:
    refused = {
        b'{"output_level": "loud"}': (
            "scope xds: output_level: expected a log level: one of debug, info, warn, error, "
            "none; got 'loud'"
        ),
        b'{"log_callers": "maybe"}': (
            'scope xds: log_callers: expected true or false; got "maybe"'
        ),
        b'{"colour": "red"}': (
            "scope xds: unknown field 'colour'; the fields are output_level, "
            "stack_trace_level and log_callers"
        ),
        b'"debug"': (
            'scope xds: expected a JSON object such as {"output_level": "debug"}; got str'
        ),
        b"[1": "scope xds: body: not JSON: expecting ',' delimiter at line 1 column 3",
    }
    for body, reason in refused.items():
        answer = await plane.ctrlz("PUT", "/scopej/xds", body=body)
        assert (answer.status, answer.body) == (400, {"error": reason, "status": 400}), body
    unknown = await plane.ctrlz("PUT", "/scopej/xdss", {"output_level": "debug"})
    assert (unknown.status, unknown.body["error"]) == (
        404,
        "unknown scope 'xdss': did you mean 'xds'?",
    )
    assert (await plane.ctrlz("GET", "/scopej/nothing-like-it")).status == 404


async def test_knobs_are_read_and_changed_from_controlz(
    plane: ServeInProcess, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="pilothouse.admin")
    listed = await plane.ctrlz("GET", "/knobj")
    names = [k["name"] for k in listed.body["knobs"]]
    assert names[:4] == ["debounce.after", "debounce.max", "debounce.eds", "push.throttle"]
    answer = await plane.ctrlz("PUT", "/knobj/debounce.max", 2)
    assert (answer.status, answer.body) == (200, {"name": "debounce.max", "old": 10.0, "new": 2.0})
    assert plane.discovery.settings.debounce.debounce_max == 2.0
    admin_view = await plane.request("GET", "/admin/knobs/debounce.max")
    assert admin_view.body["value"] == 2.0, "one registry behind both"
    (record,) = [r for r in caplog.records if r.getMessage() == "knob changed"]
    assert (record.via, record.by) == ("controlz", "127.0.0.1")  # type: ignore[attr-defined]
    bad = await plane.ctrlz("PUT", "/knobj/debounce.max", -3)
    assert bad.status == 400 and bad.body["error"].startswith("debounce.max: expected seconds")
    unknown = await plane.ctrlz("PUT", "/knobj/debounce.maxx", 1)
    assert unknown.status == 404 and "did you mean 'debounce.max'?" in unknown.body["error"]


async def test_memory_process_arguments_environment_and_version(plane: ServeInProcess) -> None:
    memory = (await plane.ctrlz("GET", "/memj")).body
    assert memory["residentBytes"] > 0 and memory["gc"]["enabled"] is True
    collected = await plane.ctrlz("PUT", "/memj/forcecollection")
    assert collected.status == 202 and collected.body["collected"] >= 0
    facts = (await plane.ctrlz("GET", "/procj")).body
    assert facts["pid"] == os.getpid()
    assert facts["asyncioTasks"] > 0 and facts["openFiles"] > 0
    arguments = (await plane.ctrlz("GET", "/argj")).body
    assert set(arguments) == {"args", "command"} and arguments["command"]
    variables = {v["name"]: v for v in (await plane.ctrlz("GET", "/envj")).body["variables"]}
    assert variables["CTRLZ_TEST_API_TOKEN"] == {
        "name": "CTRLZ_TEST_API_TOKEN", "value": "<redacted>", "redacted": True
    }  # fmt: skip
    assert variables["CTRLZ_TEST_PLAIN"]["value"] == "plain-value"
    version = (await plane.ctrlz("GET", "/versionj")).body
    assert version["version"] == pilothouse.__version__


async def test_every_topic_has_a_page_and_json_and_the_pages_load_nothing_else(
    plane: ServeInProcess,
) -> None:
    home = await plane.ctrlz("GET", "/")
    assert home.status == 200 and home.headers["Content-Type"].startswith("text/html")
    for topic in TOPICS:
        page = await plane.ctrlz("GET", f"/{topic}z")
        assert page.status == 200, topic
        assert f'data-topic="{topic}"' in page.body and f'href="/{topic}j"' in page.body
        assert f'href="/{topic}z"' in home.body
        policy = page.headers["Content-Security-Policy"]
        assert "default-src 'none'" in policy and "script-src 'self'" in policy
        assert page.headers["X-Frame-Options"] == "DENY"
        data = await plane.ctrlz("GET", f"/{topic}j")
        assert data.status == 200, topic
        assert data.headers["Content-Type"].startswith("application/json"), topic
    script = await plane.ctrlz("GET", "/static/controlz.js")
    assert script.status == 200 and script.headers["Content-Type"].startswith("text/javascript")
    assert "innerHTML" not in script.body, "text only, never markup"
    assert (await plane.ctrlz("GET", "/static/secrets.txt")).status == 404
    assert (await plane.ctrlz("GET", "/nothingz")).status == 404


async def test_controlz_refuses_other_sites(plane: ServeInProcess) -> None:
    cross = await plane.ctrlz(
        "PUT", "/scopej/xds", {"output_level": "debug"}, headers={"Origin": "http://evil.example"}
    )
    assert cross.status == 403
    rebound = await plane.ctrlz("GET", "/envj", headers={"Host": "evil.example:9876"})
    assert rebound.status == 421


async def test_controlz_that_cannot_listen_is_logged_and_serve_goes_on(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "x").mkdir()  # a config directory that does not exist stops serve
    async with serve_in_process(monkeypatch, tmp_path) as first:
        taken = f"127.0.0.1:{first.bound.ctrlz_port}"
        with caplog.at_level(logging.WARNING, logger="pilothouse.admin"):
            async with serve_in_process(
                monkeypatch, tmp_path / "x", {"ctrlz.address": taken}
            ) as second:
                assert second.bound.ctrlz_port == 0
                assert (await second.request("GET", "/ready")).status == 200
        (warning,) = [
            r for r in caplog.records if r.getMessage().startswith("ControlZ not started")
        ]
        assert taken in warning.getMessage()
    async with serve_in_process(monkeypatch, tmp_path, {"ctrlz.address": "off"}) as off:
        assert off.bound.ctrlz_port == 0

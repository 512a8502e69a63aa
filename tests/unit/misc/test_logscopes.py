"""Logging scopes at run time: names, levels (own or inherited), stack traces, callers."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator

import pytest

import pilothouse.cli.main  # noqa: F401  # every command's loggers, as serve has them
from pilothouse import logfmt, logscopes
from pilothouse.logfmt import LevelSpecError


@pytest.fixture(autouse=True)
def restore_logging() -> Iterator[None]:
    names = ["pilothouse", *(f"pilothouse.{s}" for s in logscopes.scope_names()[1:])]
    saved = {
        name: (logging.getLogger(name).level, list(logging.getLogger(name).filters))
        for name in names
    }
    root = logging.getLogger("pilothouse")
    handlers, propagate = list(root.handlers), root.propagate
    yield
    for name, (level, filters) in saved.items():
        logger = logging.getLogger(name)
        logger.setLevel(level)
        logger.filters[:] = filters
    root.handlers[:] = handlers
    root.propagate = propagate


def test_scopes_are_the_loggers_under_pilothouse_named_as_log_lines_name_them() -> None:
    logging.getLogger("pilothouse.xds")  # exists in any process that imported the server
    names = logscopes.scope_names()
    assert names[0] == "default"
    assert "xds" in names and names[1:] == sorted(names[1:])
    assert logscopes.logger_of("default") is logging.getLogger("pilothouse")
    assert logscopes.logger_of("xds") is logging.getLogger("pilothouse.xds")
    for unknown in ("no-such-scope", ""):
        with pytest.raises(logscopes.UnknownScope):
            logscopes.logger_of(unknown)


def test_a_scope_without_a_level_follows_its_parent() -> None:
    logging.getLogger("pilothouse.push.debounce")
    logscopes.set_output_level("default", logging.WARNING)
    logging.getLogger("pilothouse.push").setLevel(logging.NOTSET)
    logging.getLogger("pilothouse.push.debounce").setLevel(logging.NOTSET)
    child = logscopes.state("push.debounce")
    assert (child.output_level, child.inherited) == ("warn", True)
    logscopes.set_output_level("push", logging.DEBUG)
    assert logscopes.state("push.debounce").output_level == "debug"
    logscopes.set_output_level("push.debounce", logscopes.NONE)
    own = logscopes.state("push.debounce")
    assert (own.output_level, own.inherited) == ("none", False)
    assert own.as_json() == {
        "name": "push.debounce",
        "description": "the push pipeline: debounce, PushContext, push workers",
        "output_level": "none",
        "stack_trace_level": "none",
        "log_callers": False,
        "inherited": False,
    }


@pytest.mark.parametrize("name", logscopes.LEVEL_NAMES)
def test_level_names_round_trip(name: str) -> None:
    assert logscopes.level_name(logscopes.parse_level(name)) == name


def test_unknown_level_names_are_refused_with_the_known_ones() -> None:
    with pytest.raises(ValueError, match="one of debug, info, warn, error, none; got 'loud'"):
        logscopes.parse_level("loud")
    with pytest.raises(ValueError):
        logscopes.parse_level(10)


def emit_warning(log: logging.Logger) -> None:
    log.warning("disk is full")


def test_stack_traces_and_callers_are_added_per_scope() -> None:
    stream = io.StringIO()
    logfmt.configure("default:info", stream)
    log = logging.getLogger("pilothouse.xds")
    logscopes.set_stack_trace_level("xds", logging.WARNING)
    logscopes.set_log_callers("xds", True)
    state = logscopes.state("xds")
    assert (state.stack_trace_level, state.log_callers) == ("warn", True)
    log.info("all well")
    emit_warning(log)
    logging.getLogger("pilothouse.config").warning("other scope")
    lines = stream.getvalue().splitlines()
    assert lines[0].endswith("info xds all well caller=test_logscopes.py:" + lines[0][-2:])
    assert "warn xds disk is full caller=test_logscopes.py:" in lines[1]
    assert lines[2] == "Stack (most recent call last):"
    stack = stream.getvalue().split("disk is full", 1)[1].split("other scope", 1)[0]
    assert "in emit_warning" in stack and 'log.warning("disk is full")' in stack
    assert "pilothouse/logscopes.py" not in stack, "the stack ends at the logging call"
    assert "logging/__init__.py" not in stack
    other = [line for line in lines if "other scope" in line]
    assert other and "caller=" not in other[0]
    logscopes.set_stack_trace_level("xds", logscopes.NONE)
    logscopes.set_log_callers("xds", False)
    stream.truncate(0)
    stream.seek(0)
    emit_warning(log)
    assert stream.getvalue().count("\n") == 1 and "caller=" not in stream.getvalue()


def test_log_level_scopes_are_checked_with_the_nearest_name() -> None:
    for spec in ("info", "warn,serve:info,xds.admission:debug", "kube:debug", "registry:debug"):
        logscopes.check_level_spec(spec)  # loggers, their parents, older names
    said = r"unknown log scope 'xdss' in 'xdss:debug': did you mean 'xds'\?"
    with pytest.raises(LevelSpecError, match=said):
        logscopes.check_level_spec("xdss:debug")
    with pytest.raises(LevelSpecError, match="the scopes are: default, admin"):
        logscopes.check_level_spec("info,qqqqzz:debug")
    with pytest.raises(LevelSpecError, match="unknown log level 'loud'"):
        logscopes.check_level_spec("xds:loud")

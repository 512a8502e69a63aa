"""Logging scopes at run time: list them, read and change each one's levels and callers.

A scope is one of pilothouse's loggers, named as its log lines name it (:mod:`logfmt`):
``default`` is the ``pilothouse`` logger itself, ``xds`` is ``pilothouse.xds``,
``push.debounce`` is ``pilothouse.push.debounce``. Each has, as istio's log scopes do:

- an output level (``debug``, ``info``, ``warn``, ``error``, ``none``): the logger's
  effective level. Setting it sets the logger's own level; a scope that has none of its
  own follows its parent (``push.debounce`` follows ``push``, which follows ``default``);
- a stack trace level: lines at or above it carry the stack of the logging call;
- log callers: lines carry ``caller=file.py:line``.

The last two are kept by a :class:`ScopeExtras` filter on the scope's logger, made the
first time one of them is set; the logger carries its own settings, so nothing is kept
here. ControlZ's ``scope`` topic and the admin API's ``log.<scope>`` knobs both come here,
and so does ``--log-level``'s check (:func:`check_level_spec`): a scope no logger has
is refused with the nearest name, not accepted to log nothing.
"""

from __future__ import annotations

import difflib
import logging
import sys
import traceback
from collections.abc import Mapping
from dataclasses import dataclass
from types import FrameType, MappingProxyType
from typing import Any, Final

from pilothouse.logfmt import LEVELS, ROOT, SCOPE_ALIASES, LevelSpecError, parse_levels

LEVEL_NAMES: Final = ("debug", "info", "warn", "error", "none")
"""The levels a scope can be set to, most talkative first (istio's names)."""
NONE: Final = LEVELS["none"]

DESCRIPTIONS: Final[Mapping[str, str]] = MappingProxyType(
    {
        "default": "everything without a scope of its own",
        "admin": "the admin HTTP server, the admin API and ControlZ",
        "analysis": "the analysis of the served config (pilothouse analyze's checks)",
        "config": "loading and validating config",
        "mcp": "legacy MCP: sources, sinks and their streams",
        "push": "the push pipeline: debounce, PushContext, push workers",
        "registry": "the service registry: Kubernetes Services, EndpointSlices and Pods",
        "serve": "start-up, readiness and shutdown of pilothouse serve",
        "sources": "config sources (files, etcd, xds://, mcp://, k8s://)",
        "validate": "the validate command",
        "webhook": "the validating admission webhook",
        "xds": "the xDS server: streams, pushes, REST discovery",
    }
)
"""What each top-level scope logs; a nested scope is described by its parent's entry."""

_LOGGING_FILE: Final = logging.Logger.handle.__code__.co_filename


class UnknownScope(LookupError):
    """No logger of pilothouse has this scope name."""

    def __init__(self, scope: str) -> None:
        super().__init__(scope)
        self.scope = scope


@dataclass(frozen=True, slots=True)
class ScopeState:
    """One scope as ControlZ shows it (istio's ``scopeInfo``)."""

    name: str
    description: str
    output_level: str
    stack_trace_level: str
    log_callers: bool
    inherited: bool
    """True when the output level is the parent's (the scope has no level of its own)."""

    def as_json(self) -> dict[str, Any]:
        """istio's field names, so that ``istioctl admin log`` reads it."""
        return {
            "name": self.name,
            "description": self.description,
            "output_level": self.output_level,
            "stack_trace_level": self.stack_trace_level,
            "log_callers": self.log_callers,
            "inherited": self.inherited,
        }


class ScopeExtras(logging.Filter):
    """Adds the caller and the call stack to one scope's lines, as its settings ask."""

    def __init__(self) -> None:
        super().__init__()
        self.stack_trace_level = NONE
        self.log_callers = False

    def filter(self, record: logging.LogRecord) -> bool:
        if self.log_callers:
            record.caller = f"{record.filename}:{record.lineno}"
        if record.levelno >= self.stack_trace_level and not record.stack_info:
            record.stack_info = "Stack (most recent call last):\n" + "".join(
                traceback.format_stack(_calling_frame())
            ).rstrip("\n")
        return True


def _calling_frame() -> FrameType | None:
    """The frame that called the logger (past this module's and logging's own frames)."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename in (_LOGGING_FILE, __file__):
        frame = frame.f_back
    return frame


def scope_of(logger_name: str) -> str:
    """``pilothouse.xds`` → ``xds``; ``pilothouse`` → ``default``."""
    return "default" if logger_name == ROOT else logger_name[len(ROOT) + 1 :]


def logger_of(scope: str) -> logging.Logger:
    """The logger of ``scope``; :class:`UnknownScope` unless it exists already."""
    if scope == "default":
        return logging.getLogger(ROOT)
    name = f"{ROOT}.{scope}"
    if not scope or name not in logging.Logger.manager.loggerDict:
        raise UnknownScope(scope)
    found = logging.Logger.manager.loggerDict[name]
    if not isinstance(found, logging.Logger):  # a placeholder: only children exist
        raise UnknownScope(scope)
    return found


def scope_names() -> list[str]:
    """Every scope, ``default`` first, the rest in name order."""
    names = [
        scope_of(name)
        for name, logger in list(logging.Logger.manager.loggerDict.items())
        if name.startswith(ROOT + ".") and isinstance(logger, logging.Logger)
    ]
    return ["default", *sorted(names)]


def level_name(level: int) -> str:
    """istio's name for a ``logging`` level (levels between names round up)."""
    if level <= logging.DEBUG:
        return "debug"
    if level <= logging.INFO:
        return "info"
    if level <= logging.WARNING:
        return "warn"
    if level <= logging.CRITICAL:
        return "error"
    return "none"


def parse_level(value: object) -> int:
    """A level name (``debug``, ``info``, ``warn``, ``error``, ``none``; any case) as a
    ``logging`` level; ValueError naming the accepted names otherwise."""
    if isinstance(value, str):
        level = LEVELS.get(value.strip().lower())
        if level is not None:
            return level
    raise ValueError(f"expected a log level: one of {', '.join(LEVEL_NAMES)}; got {value!r}")


def description(scope: str) -> str:
    top = scope.split(".", 1)[0]
    return DESCRIPTIONS.get(scope) or DESCRIPTIONS.get(top, "")


def _extras(logger: logging.Logger, create: bool) -> ScopeExtras | None:
    for candidate in logger.filters:
        if isinstance(candidate, ScopeExtras):
            return candidate
    if not create:
        return None
    made = ScopeExtras()
    logger.addFilter(made)
    return made


def state(scope: str) -> ScopeState:
    logger = logger_of(scope)
    extras = _extras(logger, create=False)
    return ScopeState(
        name=scope,
        description=description(scope),
        output_level=level_name(logger.getEffectiveLevel()),
        stack_trace_level=level_name(extras.stack_trace_level if extras else NONE),
        log_callers=extras.log_callers if extras else False,
        inherited=scope != "default" and logger.level == logging.NOTSET,
    )


def set_output_level(scope: str, level: int) -> None:
    logger_of(scope).setLevel(level)


def set_stack_trace_level(scope: str, level: int) -> None:
    extras = _extras(logger_of(scope), create=level < NONE)
    if extras is not None:
        extras.stack_trace_level = level


def set_log_callers(scope: str, enabled: bool) -> None:
    extras = _extras(logger_of(scope), create=enabled)
    if extras is not None:
        extras.log_callers = enabled


def check_level_spec(spec: str) -> None:
    """Raise :class:`~pilothouse.logfmt.LevelSpecError` when ``spec`` (``--log-level``)
    has a bad level or names a scope that is neither a logger of pilothouse (nor a parent
    of one) nor an older name (:data:`~pilothouse.logfmt.SCOPE_ALIASES`), with the
    nearest scope: ``unknown log scope 'xdss' in 'xdss:debug': did you mean 'xds'?``.
    Call it once the commands' modules are imported (their loggers exist then)."""
    _, scopes = parse_levels(spec)
    names = scope_names()
    known = {*names, *DESCRIPTIONS, *SCOPE_ALIASES}
    known |= {name.rsplit(".", i)[0] for name in names for i in range(1, name.count(".") + 1)}
    for scope in scopes:
        if scope in known:
            continue
        close = difflib.get_close_matches(scope, sorted(known), n=1, cutoff=0.5)
        hint = f": did you mean {close[0]!r}?" if close else f"; the scopes are: {', '.join(names)}"
        raise LevelSpecError(f"unknown log scope {scope!r} in {spec!r}{hint}")

"""Structured logs: one line per event, ``key=value`` pairs, levels per scope.

A line looks like::

    2026-11-22T02:55:41.123Z info xds proxy connected id=app-1.ns-1 peer=ipv4:127.0.0.1:5000

The scope is the logger name below ``pilothouse`` (``pilothouse.xds`` → ``xds``).
Levels are set as istiod's ``--log_output_level`` does: ``info`` for everything, or
``default:info,xds:debug`` for a default plus per-scope levels. A scope name of an older
layout (:data:`SCOPE_ALIASES`) sets the scopes that took its place.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final

ROOT = "pilothouse"
LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warn": logging.WARNING,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "none": logging.CRITICAL + 10,
}
SCOPE_ALIASES: Final[Mapping[str, tuple[str, ...]]] = MappingProxyType(
    {"kube": ("sources.kubernetes", "registry.kubernetes")}
)
"""Scope names kept working after their loggers moved: ``kube`` was the Kubernetes API
client, informers, custom-resource source, mesh ConfigMap and registry, one package
before it was split by stage."""
# Attributes every LogRecord has; anything else was passed in ``extra`` and is printed.
_STANDARD = frozenset(logging.LogRecord("x", 0, "x", 0, "x", None, None).__dict__) | {
    "message",
    "asctime",
    "taskName",
}


class LevelSpecError(ValueError):
    """A ``--log-level`` value that cannot be read."""


def parse_levels(spec: str) -> tuple[int, dict[str, int]]:
    """``"info"`` or ``"default:info,xds:debug"`` → (default level, {scope: level})."""
    default = logging.INFO
    scopes: dict[str, int] = {}
    for part in (p.strip() for p in spec.split(",") if p.strip()):
        scope, sep, level_name = part.rpartition(":")
        if not sep:
            scope, level_name = "default", part
        level = LEVELS.get(level_name.lower())
        if level is None:
            known = ", ".join(sorted(LEVELS))
            raise LevelSpecError(f"unknown log level {level_name!r} in {spec!r}; use {known}")
        if scope == "default":
            default = level
        else:
            scopes[scope] = level
    return default, scopes


def _quote(value: Any) -> str:
    text = str(value)
    if not text or any(c in text for c in ' "=\n'):
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    return text


class LineFormatter(logging.Formatter):
    """``time level scope message key=value...`` with UTC millisecond timestamps."""

    def format(self, record: logging.LogRecord) -> str:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
        scope = record.name
        if scope == ROOT:
            scope = "default"
        elif scope.startswith(ROOT + "."):
            scope = scope[len(ROOT) + 1 :]
        level = record.levelname.lower().replace("warning", "warn")
        parts = [f"{stamp}.{int(record.msecs):03d}Z", level, scope, record.getMessage()]
        fields: Mapping[str, Any] = {k: v for k, v in record.__dict__.items() if k not in _STANDARD}
        parts.extend(f"{key}={_quote(value)}" for key, value in fields.items())
        line = " ".join(parts)
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        if record.stack_info:  # asked for by the caller, or by the scope (logscopes)
            line += "\n" + record.stack_info
        return line


def configure(spec: str, stream: Any = None) -> None:
    """Install the line formatter on pilothouse's loggers with the levels of ``spec``."""
    default, scopes = parse_levels(spec)
    root = logging.getLogger(ROOT)
    for handler in list(root.handlers):
        root.removeHandler(handler)
    handler = logging.StreamHandler(stream)
    handler.setFormatter(LineFormatter())
    root.addHandler(handler)
    root.setLevel(default)
    root.propagate = False
    for scope, level in scopes.items():
        for name in SCOPE_ALIASES.get(scope, (scope,)):
            logging.getLogger(f"{ROOT}.{name}").setLevel(level)

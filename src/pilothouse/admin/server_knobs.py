"""The server's runtime knobs, registered where ``pilothouse serve`` wires its parts.

- ``debounce.after``, ``debounce.max``, ``debounce.eds``: the debouncer's settings
  (istiod's ``PILOT_DEBOUNCE_AFTER``, ``PILOT_DEBOUNCE_MAX``,
  ``PILOT_ENABLE_EDS_DEBOUNCE``), in force from the debouncer's next decision;
- ``push.throttle``: concurrent per-proxy pushes (``PILOT_PUSH_THROTTLE``; 0 sets the
  automatic default, and reading gives the number in force), from the next push taken
  off the queue;
- ``log.<scope>``: each logging scope's output level (see :mod:`pilothouse.logscopes`);
- ``admission.rate``, ``admission.burst``, ``admission.max_connections``: the xDS
  admission controller's, through :func:`register_admission_knobs`.

Each knob names the environment variable that sets it at start-up; the value set at
run time lasts until the process ends.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, Protocol

from pilothouse.admin import knob_values
from pilothouse.admin.knobs import Knob, KnobRegistry
from pilothouse.logfmt import LEVELS
from pilothouse.logscopes import description, scope_names, set_output_level, state
from pilothouse.settings import knobs as settings_knobs
from pilothouse.xds.server.debug_view import DebugView


def _variable(path: str) -> str:
    """The environment variable of the settings knob at ``path`` (``xds.push_throttle``)."""
    for knob in settings_knobs():
        if knob.path == path:
            return knob.env
    return ""


def register_push_knobs(registry: KnobRegistry, discovery: DebugView) -> None:
    """The debounce times and the push throttle of the server ``discovery`` is the debug
    view of."""

    def debounce_writer(field: str) -> Callable[[Any], None]:
        def write(value: Any) -> None:
            current = discovery.settings.debounce
            discovery.set_debounce(dataclasses.replace(current, **{field: value}))

        return write

    def set_throttle(value: int) -> None:
        discovery.set_push_throttle(value)

    registry.register(
        Knob(
            "debounce.after",
            "quiet time before a push, in seconds (PILOT_DEBOUNCE_AFTER)",
            read=lambda: discovery.settings.debounce.debounce_after,
            parse=knob_values.seconds,
            write=debounce_writer("debounce_after"),
            kind="seconds",
            setting=_variable("xds.debounce.debounce_after"),
        )
    )
    registry.register(
        Knob(
            "debounce.max",
            "longest a push waits for quiet, in seconds (PILOT_DEBOUNCE_MAX)",
            read=lambda: discovery.settings.debounce.debounce_max,
            parse=knob_values.seconds,
            write=debounce_writer("debounce_max"),
            kind="seconds",
            setting=_variable("xds.debounce.debounce_max"),
        )
    )
    registry.register(
        Knob(
            "debounce.eds",
            "debounce endpoint-only pushes too (PILOT_ENABLE_EDS_DEBOUNCE)",
            read=lambda: discovery.settings.debounce.eds_debounce,
            parse=knob_values.flag,
            write=debounce_writer("eds_debounce"),
            kind="bool",
            setting=_variable("xds.debounce.eds_debounce"),
        )
    )
    registry.register(
        Knob(
            "push.throttle",
            "concurrent per-proxy pushes; 0 sets the default, 100 (PILOT_PUSH_THROTTLE)",
            read=lambda: discovery.push_throttle,
            parse=knob_values.count,
            write=set_throttle,
            kind="int",
            setting=_variable("xds.push_throttle"),
        )
    )


def register_log_knobs(registry: KnobRegistry) -> None:
    """``log.<scope>`` for every logging scope there is now."""
    for scope in scope_names():
        registry.register(_log_knob(scope))


def _log_knob(scope: str) -> Knob[str]:
    def write(level: str) -> None:
        set_output_level(scope, LEVELS[level])

    return Knob(
        f"log.{scope}",
        f"output level of the {scope} logging scope: {description(scope) or scope}",
        read=lambda: state(scope).output_level,
        parse=knob_values.level,
        write=write,
        kind="level",
        setting=_variable("log_level"),
    )


class AdmissionControl(Protocol):
    """What the admission knobs need of the xDS admission controller."""

    @property
    def rate(self) -> float: ...

    @property
    def burst(self) -> int: ...

    @property
    def max_connections(self) -> int: ...

    def configure(
        self,
        *,
        rate: float | None = None,
        burst: int | None = None,
        max_connections: int | None = None,
    ) -> object:
        """Change the values given (None keeps one); ValueError for one out of range."""
        ...


def register_admission_knobs(
    registry: KnobRegistry, admission: AdmissionControl, *, settings_prefix: str = ""
) -> None:
    """``admission.rate``, ``admission.burst`` and ``admission.max_connections``.

    ``settings_prefix`` is the settings path of the admission part of the tree
    (``xds.admission``), for the variables the knobs name.
    """

    def variable(field: str) -> str:
        return _variable(f"{settings_prefix}.{field}") if settings_prefix else ""

    def set_rate(value: float) -> None:
        admission.configure(rate=value)

    def set_burst(value: int) -> None:
        admission.configure(burst=value)

    def set_max_connections(value: int) -> None:
        admission.configure(max_connections=value)

    registry.register(
        Knob(
            "admission.rate",
            "new xDS streams admitted per second (PILOT_MAX_REQUESTS_PER_SECOND)",
            read=lambda: admission.rate,
            parse=knob_values.rate,
            write=set_rate,
            kind="float",
            setting=variable("rate"),
        )
    )
    registry.register(
        Knob(
            "admission.burst",
            "new xDS streams admitted at once above the rate",
            read=lambda: admission.burst,
            parse=knob_values.count,
            write=set_burst,
            kind="int",
            setting=variable("burst"),
        )
    )
    registry.register(
        Knob(
            "admission.max_connections",
            "most xDS streams served at once",
            read=lambda: admission.max_connections,
            parse=knob_values.count,
            write=set_max_connections,
            kind="int",
            setting=variable("max_connections"),
        )
    )

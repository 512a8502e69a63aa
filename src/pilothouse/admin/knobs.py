"""Runtime knobs: settings read and changed while pilothouse runs, in one registry.

A :class:`Knob` is a name, a description, a reader, a parser and a writer. The parser
turns a JSON value into the knob's value or raises ValueError saying what it expected;
the writer may refuse a value the same way. Components' knobs are registered where the
server is wired (``pilothouse serve``, see :mod:`pilothouse.admin.server_knobs`) into one
:class:`KnobRegistry`, which the admin API (``/admin/knobs``) and ControlZ share.

Every change goes through :meth:`KnobRegistry.change`: parse, read the old value, write,
read the new value back, and log both with who asked (the client's address) and how
(``admin-api`` or ``controlz``), on the ``admin`` scope at info.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

T = TypeVar("T")

_log = logging.getLogger("pilothouse.admin")


@dataclass(frozen=True, slots=True)
class Knob(Generic[T]):
    """One setting that can change at run time."""

    name: str
    """Dotted, lower case: ``debounce.after``, ``push.throttle``, ``log.xds``."""
    description: str
    read: Callable[[], T]
    parse: Callable[[object], T]
    """A JSON value → the knob's value; ValueError with a message fit for the client."""
    write: Callable[[T], None]
    """Puts the value in force (from the next push, the next log line...)."""
    kind: str
    """What the value is, in the docs' words: ``seconds``, ``int``, ``bool``, ``level``."""
    setting: str = ""
    """The environment variable that sets it at start-up, if there is one."""

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "value": self.read(),
            "type": self.kind,
            "description": self.description,
            "setting": self.setting,
        }


@dataclass(frozen=True, slots=True)
class Change:
    """A change made: the knob, and its value before and after."""

    name: str
    old: Any
    new: Any

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "old": self.old, "new": self.new}


class UnknownKnob(LookupError):
    """No knob has this name; :attr:`message` names the nearest one."""

    def __init__(self, name: str, known: list[str]) -> None:
        super().__init__(name)
        self.name = name
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.5)
        self.nearest = close[0] if close else None
        if self.nearest is not None:
            self.message = f"unknown knob {name!r}: did you mean {self.nearest!r}?"
        else:
            self.message = f"unknown knob {name!r}; the knobs are: {', '.join(known)}"


class BadKnobValue(ValueError):
    """The value given for a knob cannot be used; :attr:`message` says why."""

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(f"{name}: {reason}")
        self.name = name
        self.message = f"{name}: {reason}"


class KnobRegistry:
    """The knobs of one server, by name, in the order they were registered."""

    def __init__(self, log: logging.Logger | None = None) -> None:
        self._knobs: dict[str, Knob[Any]] = {}
        self._log = log if log is not None else _log

    def register(self, knob: Knob[Any]) -> None:
        if knob.name in self._knobs:
            raise ValueError(f"a knob named {knob.name!r} is registered already")
        self._knobs[knob.name] = knob

    def names(self) -> list[str]:
        return list(self._knobs)

    def __contains__(self, name: object) -> bool:
        return name in self._knobs

    def get(self, name: str) -> Knob[Any]:
        knob = self._knobs.get(name)
        if knob is None:
            raise UnknownKnob(name, self.names())
        return knob

    def describe(self) -> list[dict[str, Any]]:
        """Every knob with its current value, in registration order."""
        return [knob.describe() for knob in self._knobs.values()]

    def change(self, name: str, value: object, *, who: str, via: str) -> Change:
        """Set knob ``name`` to ``value`` (a JSON value) and log it.

        Raises :class:`UnknownKnob`, or :class:`BadKnobValue` when the parser or the
        writer refuses the value (then nothing changed).
        """
        knob = self.get(name)
        try:
            parsed = knob.parse(value)
        except ValueError as problem:
            raise BadKnobValue(name, str(problem)) from None
        old = knob.read()
        try:
            knob.write(parsed)
        except ValueError as problem:
            raise BadKnobValue(name, str(problem)) from None
        new = knob.read()
        self._log.info(
            "knob changed",
            extra={"knob": name, "old": old, "new": new, "by": who, "via": via},
        )
        return Change(name, old, new)

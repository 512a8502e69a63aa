"""Settings from ``PILOTHOUSE_*`` environment variables, strictly.

Every knob of :class:`~pilothouse.settings.Settings` has one variable (see
:func:`pilothouse.settings.knobs`). A value that does not parse as the knob's type is an
error naming the variable, the value and what was expected. A ``PILOTHOUSE_*`` variable
that names no knob is an error too, with the nearest known name, so that a typo cannot
leave a knob silently at its default. The few ``PILOTHOUSE_*`` variables that are not
server knobs (:data:`OTHER_VARIABLES`) are let through.
"""

from __future__ import annotations

import difflib
import math
import os
import typing
from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final, Literal

from pilothouse.settings import Knob, knobs

PREFIX: Final = "PILOTHOUSE_"

OTHER_VARIABLES: Final[Mapping[str, str]] = MappingProxyType(
    {
        "PILOTHOUSE_LOADTEST_CHANGE": "set by `pilothouse loadtest` for its trigger commands",
        "PILOTHOUSE_FUZZ_EXAMPLES": "the test suite's fuzz budget (tests/fuzz/budget.py)",
        "PILOTHOUSE_STORE": "the config store of `apply`, `get` and `delete` (their --store)",
    }
)
"""``PILOTHOUSE_*`` variables that are not server knobs, and who reads them. Test
processes start ``pilothouse serve`` with their own environment, so these must not stop
it."""

_TRUE: Final = frozenset({"1", "true", "yes", "on"})
_FALSE: Final = frozenset({"0", "false", "no", "off"})


class SettingsError(ValueError):
    """The environment cannot be read as settings; the message names every problem."""


def from_environment(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The knobs set by ``PILOTHOUSE_*`` variables, by dotted path, converted to their
    types. Raises :class:`SettingsError` for unknown variables and bad values."""
    variables = os.environ if environ is None else environ
    by_env = {knob.env: knob for knob in knobs()}
    values: dict[str, Any] = {}
    problems: list[str] = []
    for name in sorted(variables):
        if not name.startswith(PREFIX) or name in OTHER_VARIABLES:
            continue
        knob = by_env.get(name)
        if knob is None:
            problems.append(unknown_variable(name, by_env))
            continue
        try:
            values[knob.path] = parse_value(knob, variables[name])
        except ValueError as problem:
            problems.append(str(problem))
    if problems:
        raise SettingsError("\n".join(problems))
    return values


def unknown_variable(name: str, known: Mapping[str, Knob]) -> str:
    """The message for ``name``, a ``PILOTHOUSE_*`` variable no knob reads."""
    # Compared without the shared prefix, which would make every name look close.
    suffixes = [known_name[len(PREFIX) :] for known_name in (*known, *OTHER_VARIABLES)]
    nearest = difflib.get_close_matches(name[len(PREFIX) :], suffixes, n=1, cutoff=0.6)
    hint = (
        f"did you mean {PREFIX}{nearest[0]}?"
        if nearest
        else "the known ones are listed in docs/reference/settings.md"
    )
    return f"unknown environment variable {name}: {hint}"


def parse_value(knob: Knob, text: str) -> Any:
    """``text`` as ``knob``'s type; ValueError naming the variable, value and type."""
    parse, expected = _PARSERS.get(knob.kind, (None, ""))
    if parse is None and typing.get_origin(knob.kind) is Literal:
        parse, expected = _choice_parser(typing.get_args(knob.kind))
    elif parse is None:
        parse, expected = _tuple_parser(knob.kind)
    try:
        return parse(text)
    except ValueError:
        raise ValueError(f"{knob.env}={text!r}: expected {expected}") from None


def _integer(text: str) -> int:
    value = int(text.strip())
    if value < 0:
        raise ValueError(text)
    return value


def _number(text: str) -> float:
    value = float(text.strip())
    if value < 0 or not math.isfinite(value):
        raise ValueError(text)
    return value


def _boolean(text: str) -> bool:
    word = text.strip().lower()
    if word in _TRUE:
        return True
    if word in _FALSE:
        return False
    raise ValueError(text)


def _string(text: str) -> str:
    return text


_PARSERS: Final[Mapping[Any, tuple[Callable[[str], Any], str]]] = MappingProxyType(
    {
        int: (_integer, "an integer (int) of 0 or more"),
        float: (_number, "a number (float) of 0 or more, such as 0.5"),
        bool: (_boolean, "a boolean (bool): true or false (also 1/0, yes/no, on/off)"),
        str: (_string, "a string (str)"),
    }
)


def _choice_parser(choices: tuple[str, ...]) -> tuple[Callable[[str], Any], str]:
    def choice(text: str) -> str:
        if text not in choices:
            raise ValueError(text)
        return text

    return choice, "one of " + ", ".join(repr(c) for c in choices)


def _tuple_parser(kind: Any) -> tuple[Callable[[str], Any], str]:
    item = typing.get_args(kind)[0] if typing.get_origin(kind) is tuple else None
    if item is Path:

        def paths(text: str) -> tuple[Path, ...]:
            return tuple(Path(p) for p in text.split(os.pathsep) if p)

        return paths, f"paths separated by {os.pathsep!r}"
    if item is str:

        def words(text: str) -> tuple[str, ...]:
            return tuple(p.strip() for p in text.split(",") if p.strip())

        return words, "values separated by ','"
    raise TypeError(f"no environment form for settings of type {kind!r}")

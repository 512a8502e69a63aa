"""Parsers for knob values arriving as JSON: each returns the value or raises ValueError
with a message that names what was expected and quotes what came.

JSON gives numbers, booleans and strings; a page's text field or a shell's ``curl -d``
may give a number as a string, so each parser takes the string form too (``"0.5"``,
``"100ms"``, ``"true"``), but never a boolean as a number (``true`` is not 1 here,
though Python says so) nor a number as a boolean.
"""

from __future__ import annotations

import json
import math
import re
from typing import Final

from pilothouse.logscopes import LEVEL_NAMES, level_name, parse_level

MAX_SECONDS: Final = 24 * 3600.0
"""Longest duration a knob takes: a day (a debounce of more is a typo)."""
MAX_COUNT: Final = 1_000_000_000

_DURATION: Final = re.compile(r"(?P<number>\d+(?:\.\d*)?|\.\d+)(?P<unit>ms|s|m|h)")
_UNITS: Final = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
_TRUE: Final = frozenset({"true", "1", "yes", "on"})
_FALSE: Final = frozenset({"false", "0", "no", "off"})


def _shown(value: object) -> str:
    """``value`` as JSON writes it (``true``, ``"abc"``), cut to 60 characters."""
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def seconds(value: object) -> float:
    """A duration: a number of seconds (``0.5``), or Istio's form (``100ms``, ``2s``, ``1m``),
    from 0 up to a day."""
    expected = "seconds: a number of 0 or more (0.5) or a duration (100ms, 2s, 1m)"
    number: float | None = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        number = float(value)
    elif isinstance(value, str):
        text = value.strip()
        match = _DURATION.fullmatch(text)
        if match is not None:
            number = float(match["number"]) * _UNITS[match["unit"]]
        else:
            try:
                number = float(text)
            except ValueError:
                number = None
    if number is None or not math.isfinite(number) or number < 0:
        raise ValueError(f"expected {expected}; got {_shown(value)}")
    if number > MAX_SECONDS:
        raise ValueError(f"expected at most {MAX_SECONDS:g} seconds (a day); got {_shown(value)}")
    return number


def count(value: object) -> int:
    """A whole number from 0 up."""
    expected = "a whole number of 0 or more"
    number: int | None = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    elif isinstance(value, str) and value.strip().isdigit():
        number = int(value.strip())
    if number is None or number < 0:
        raise ValueError(f"expected {expected}; got {_shown(value)}")
    if number > MAX_COUNT:
        raise ValueError(f"expected at most {MAX_COUNT}; got {_shown(value)}")
    return number


def rate(value: object) -> float:
    """A number of events per second, from 0 up (fractions allowed)."""
    number: float | None = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            number = None
    if number is None or not math.isfinite(number) or number < 0:
        raise ValueError(f"expected a rate: a number of 0 or more per second; got {_shown(value)}")
    return number


def flag(value: object) -> bool:
    """true or false (also ``"true"``/``"false"``, ``"on"``/``"off"``, ``"1"``/``"0"``)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        word = value.strip().lower()
        if word in _TRUE:
            return True
        if word in _FALSE:
            return False
    raise ValueError(f"expected true or false; got {_shown(value)}")


def level(value: object) -> str:
    """A log level name, as istio names them."""
    try:
        return level_name(parse_level(value))
    except ValueError:
        raise ValueError(
            f"expected a log level: one of {', '.join(LEVEL_NAMES)}; got {_shown(value)}"
        ) from None

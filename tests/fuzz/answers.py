"""What every HTTP answer pilothouse gives to bad input must look like: no text that
only Python's internals would write (tracebacks, exception names, the interpreter's own
advice), and a message on every 4xx."""

from __future__ import annotations

from typing import Final

PYTHON_INTERNALS: Final = (
    "Traceback",
    'File "',
    "Error:",  # RecursionError:, ValueError:, ...
    "RecursionError",
    "OverflowError",
    "UnicodeDecodeError",
    "sys.set_int_max_str_digits",
    "integer string conversion",
    "int too large to convert",
    "codec can't",
    "bytes-like object",
    "NoneType",
    "object has no attribute",
    "<class ",
    "invalid literal for int()",
    "Server got itself in trouble",  # aiohttp's answer to an exception nobody caught
)


def internals_in(text: str) -> list[str]:
    """The Python-internal phrases ``text`` holds (empty when it holds none)."""
    return [phrase for phrase in PYTHON_INTERNALS if phrase in text]

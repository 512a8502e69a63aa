"""Plain text tables the way ``istioctl`` prints them: a header, columns padded with spaces."""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Sequence
from typing import Any

GAP = "   "


def table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """``header`` and ``rows`` in left-aligned columns, one line each, ending in a newline;
    the last column is not padded."""
    lines = [list(header), *(list(row) for row in rows)]
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    out = []
    for line in lines:
        cells = [cell.ljust(width) for cell, width in zip(line[:-1], widths, strict=False)]
        out.append(GAP.join([*cells, line[-1]]).rstrip())
    return "\n".join(out) + "\n"


def age(seconds: float) -> str:
    """A short age as istioctl shows one: ``4s``, ``12m``, ``3h``, ``5d``."""
    seconds = max(0.0, seconds)
    if seconds < 60:
        return f"{int(seconds)}s"
    if seconds < 3600:
        return f"{int(seconds // 60)}m"
    if seconds < 48 * 3600:
        return f"{int(seconds // 3600)}h"
    return f"{int(seconds // 86400)}d"


def timestamp(text: Any) -> float | None:
    """An ISO 8601 time from a JSON answer as POSIX seconds (for :func:`age`), or None
    when it is missing or not a time."""
    if not isinstance(text, str) or not text:
        return None
    try:
        return datetime.datetime.fromisoformat(text).timestamp()
    except ValueError:
        return None

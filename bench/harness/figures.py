"""The report writer's side in every benchmark: figures rounded the way BENCHMARKS.md
shows them, ratios to the baseline, declarative per-side figure tables (``per_side``), and
the JSON lines ``run_all.py`` records.

Every benchmark prints one JSON object per figure group on stdout (``emit``); each names
its ``benchmark``, its ``baseline`` and its ``ratio_to_baseline``, usually its ``target``
and ``target_met``; ``run_all.py`` turns them into the BENCHMARKS.md sections.
"""

from __future__ import annotations

import json
import statistics
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any


def ratio(baseline: float, ours: float, digits: int = 2) -> float:
    """Baseline ÷ ours for a figure where lower is better (1 = as good as the baseline)."""
    return round(baseline / ours, digits) if ours > 0 else float("inf")


def ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


def s(seconds: float) -> float:
    return round(seconds, 2)


def mib(kib: float) -> float:
    return round(kib / 1024, 1)


def cell(value: object) -> str:
    """A value as one markdown table cell."""
    text = "—" if value is None else str(value)
    return text.replace("|", "\\|").replace("\n", " ")


def emit(groups: Iterable[Mapping[str, Any]]) -> None:
    """Print each figure group as one JSON line, flushed (run_all reads them as they come)."""
    for group in groups:
        print(json.dumps(group, ensure_ascii=False), flush=True)


def note(text: str) -> None:
    """A progress line for whoever watches the run (stderr: not a figure)."""
    print(text, file=sys.stderr, flush=True)


Row = tuple[str, Callable[[Any], Any]]
"""One figure of a declarative table: its key (``{side}`` stands for the side's name) and how
it is read from that side's measurements."""


def per_side(rows: Sequence[Row], sides: Mapping[str, Any]) -> dict[str, Any]:
    """Every row for every side, row by row: ``{"pilothouse_s": …, "floor_s": …, …}``."""
    return {
        key.format(side=name): read(value) for key, read in rows for name, value in sides.items()
    }


def rounded(digits: int) -> Callable[[float], float]:
    """A figure shown rounded to ``digits`` decimals."""
    return lambda value: round(value, digits)


def medians(key: str, figure: Callable[[Any], float], shown: Callable[[float], Any]) -> Row:
    """A row showing the median over one side's runs of ``figure`` of each run."""
    return key, lambda runs: shown(statistics.median(figure(run) for run in runs))

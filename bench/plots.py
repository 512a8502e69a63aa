"""Scaling curves of the benchmark results, drawn as PNG charts next to BENCHMARKS.md.

A result may carry a ``curve``: a list of points, each a dict whose first key is
the x axis (``proxies``, say) and whose other numeric keys are series
(``pilothouse_rss_mib``, ``floor_rss_mib``…). A key's suffix gives its unit
(``_ms``, ``_s``, ``_mib``…); series of one unit share a chart, so a curve with
several units gets one chart per unit, stacked. Pilothouse's series are solid
lines, the baseline's (``floor_…``) dashed in the same colour.

Matplotlib draws off-screen (the Agg canvas); nothing here needs a display.
Run ``python bench/plots.py`` to redraw every chart from ``bench/results.json``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
UNITS: tuple[tuple[str, str], ...] = (
    ("_per_second", "per second"),
    ("_seconds", "s"),
    ("_ms", "ms"),
    ("_us", "µs"),
    ("_s", "s"),
    ("_mib", "MiB"),
    ("_kib", "KiB"),
    ("_mb", "MB"),
    ("_kb", "KB"),
)
"""Key suffix → unit, longest first where one suffix ends another."""
BASELINE_PREFIXES = ("floor_", "baseline_")
CHART_NAMES = {
    "memory_slope": "memory",
    "fanout_curve": "fanout",
    "connect_storm": "storm",
    "endpoint_churn": "churn",
}
"""Short chart file names for the scripts known to draw curves; others use their own name."""


def is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def split_unit(key: str) -> tuple[str, str]:
    """``pilothouse_rss_mib`` → (``pilothouse_rss``, ``MiB``); no known suffix → (key, "")."""
    for suffix, unit in UNITS:
        if key.endswith(suffix) and len(key) > len(suffix):
            return key[: -len(suffix)], unit
    return key, ""


def words(name: str) -> str:
    return name.replace("_", " ")


def axis_label(key: str) -> str:
    name, unit = split_unit(key)
    return f"{words(name)} ({unit})" if unit else words(name)


def curve_keys(curve: Sequence[Mapping[str, Any]]) -> tuple[str, list[str]]:
    """The x key (the first point's first key) and the series keys, in first-seen order."""
    x_key = next(iter(curve[0]))
    series: list[str] = []
    for point in curve:
        for key, value in point.items():
            if key != x_key and key not in series and is_number(value):
                series.append(key)
    return x_key, series


def by_unit(series: Sequence[str]) -> dict[str, list[str]]:
    """Series grouped by unit, in first-seen order: one chart each."""
    groups: dict[str, list[str]] = {}
    for key in series:
        groups.setdefault(split_unit(key)[1], []).append(key)
    return groups


def measure_of(key: str) -> str:
    """What a series measures, without whose it is: ``floor_rss_mib`` → ``rss``."""
    name = split_unit(key)[0]
    for prefix in ("pilothouse_", *BASELINE_PREFIXES):
        if name.startswith(prefix):
            return name[len(prefix) :]
    return name


def points_of(
    curve: Sequence[Mapping[str, Any]], x_key: str, key: str
) -> tuple[list[float], list[float]]:
    """The (x, y) pairs of one series where both are numbers."""
    pairs = [
        (point[x_key], point[key])
        for point in curve
        if is_number(point.get(x_key)) and is_number(point.get(key))
    ]
    return [x for x, _ in pairs], [y for _, y in pairs]


def y_label(keys: Sequence[str]) -> str:
    """What the series of one chart measure, if they all measure one thing, and the unit."""
    measures = {measure_of(key) for key in keys}
    name = words(measures.pop()) if len(measures) == 1 else ""
    unit = split_unit(keys[0])[1]
    if name and unit:
        return f"{name} ({unit})"
    return name or unit or "value"


def has_curve(result: Mapping[str, Any]) -> bool:
    curve = result.get("curve")
    return (
        isinstance(curve, list)
        and bool(curve)
        and all(isinstance(point, dict) and point for point in curve)
        and bool(curve_keys(curve)[1])
    )


def draw(result: Mapping[str, Any], path: Path) -> None:
    """Draw the result's curve into a PNG at ``path``."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    curve = result["curve"]
    x_key, series = curve_keys(curve)
    groups = by_unit(series)
    figure = Figure(figsize=(8, 1.2 + 3.4 * len(groups)), dpi=100)
    FigureCanvasAgg(figure)
    axes = figure.subplots(len(groups), 1, squeeze=False)[:, 0]
    measures: dict[str, int] = {}
    for ax, keys in zip(axes, groups.values(), strict=True):
        for key in keys:
            colour = measures.setdefault(measure_of(key), len(measures))
            dashed = key.startswith(BASELINE_PREFIXES)
            xs, ys = points_of(curve, x_key, key)
            ax.plot(
                xs,
                ys,
                marker="o",
                color=f"C{colour % 10}",
                linestyle="--" if dashed else "-",
                label=words(split_unit(key)[0]),
            )
        ax.set_ylabel(y_label(keys))
        ax.set_xlabel(axis_label(x_key))
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="small")
    figure.suptitle(str(result.get("benchmark", "")), fontsize="medium")
    figure.tight_layout()
    figure.savefig(path, format="png")


def chart_path(folder: Path, script: str, index: int) -> Path:
    """``BENCHMARKS-<name>.png``; the second and later curves of a script get ``-2``…"""
    name = CHART_NAMES.get(script, script)
    suffix = f"-{index + 1}" if index else ""
    return folder / f"BENCHMARKS-{name}{suffix}.png"


def draw_all(results: Mapping[str, Sequence[Mapping[str, Any]]], folder: Path) -> dict[str, Path]:
    """Draw every result with a curve; ``results`` is script → its results.

    Returns benchmark name → the chart drawn for it.
    """
    drawn: dict[str, Path] = {}
    for script, entries in results.items():
        with_curves = [entry for entry in entries if has_curve(entry)]
        for index, entry in enumerate(with_curves):
            path = chart_path(folder, script, index)
            draw(entry, path)
            drawn[str(entry["benchmark"])] = path
    return drawn


def main() -> None:
    source = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "results.json"
    stored = json.loads(source.read_text(encoding="utf-8"))
    scripts = {name: run["results"] for name, run in stored["scripts"].items()}
    for benchmark, path in draw_all(scripts, ROOT).items():
        print(f"{path.name}: {benchmark}")


if __name__ == "__main__":
    main()

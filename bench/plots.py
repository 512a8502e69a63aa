"""Scaling curves of the benchmark results, drawn as PNG charts next to BENCHMARKS.md.

A result may carry a ``curve``: a list of points, each a dict whose first key is
the x axis (``proxies``, say) and whose other numeric keys are series
(``pilothouse_rss_mib``, ``floor_rss_mib``…). A key's suffix gives its unit
(``_ms``, ``_s``, ``_mib``…); series of one unit share a chart, so a curve with
several units gets one chart per unit, stacked. Pilothouse's series are solid
lines, the baseline's (``floor_…``) dashed in the same colour.

A result may also name a ``curve_series`` key (``workers``, say): its points then
hold several series at each x (one point per x and series value), each measure
(the key without its ``pilothouse_``/``floor_`` prefix) gets a chart of its own,
and the series values are the colours (pilothouse solid, floor dashed). An x axis
spanning 20× or more (250 to 10,000 proxies) is drawn on a log scale.

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
    ("_us_per_proxy", "µs per proxy"),
    ("_kib_per_connection", "KiB per connection"),
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


def curve_keys(
    curve: Sequence[Mapping[str, Any]], series_key: str | None = None
) -> tuple[str, list[str]]:
    """The x key (the first point's first key) and the series keys, in first-seen order
    (not ``series_key``, which tells the series apart)."""
    x_key = next(iter(curve[0]))
    series: list[str] = []
    for point in curve:
        for key, value in point.items():
            if key not in (x_key, series_key) and key not in series and is_number(value):
                series.append(key)
    return x_key, series


def by_measure(series: Sequence[str]) -> dict[str, list[str]]:
    """Series grouped by what they measure (with its unit), in first-seen order."""
    groups: dict[str, list[str]] = {}
    for key in series:
        groups.setdefault(f"{measure_of(key)}|{split_unit(key)[1]}", []).append(key)
    return groups


def series_values(curve: Sequence[Mapping[str, Any]], series_key: str | None) -> list[Any]:
    """The values of ``series_key`` in the curve, sorted (one None without a series key)."""
    if series_key is None:
        return [None]
    return sorted({point.get(series_key) for point in curve}, key=str)


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
        if name == prefix[:-1]:
            return ""  # the unit says it all: ``floor_kib_per_connection``
    return name


def points_of(
    curve: Sequence[Mapping[str, Any]],
    x_key: str,
    key: str,
    series: tuple[str, Any] | None = None,
) -> tuple[list[float], list[float]]:
    """The (x, y) pairs of one series where both are numbers (with ``series``, only the
    points whose ``series[0]`` is ``series[1]``)."""
    pairs = [
        (point[x_key], point[key])
        for point in curve
        if is_number(point.get(x_key))
        and is_number(point.get(key))
        and (series is None or point.get(series[0]) == series[1])
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
        and bool(curve_keys(curve, _series_key(result))[1])
    )


def _series_key(result: Mapping[str, Any]) -> str | None:
    named = result.get("curve_series")
    return named if isinstance(named, str) else None


def wide_x(xs: Sequence[float]) -> bool:
    """Whether an x axis spans enough (20× or more, all positive) to be drawn on a log scale."""
    return bool(xs) and min(xs) > 0 and max(xs) >= 20 * min(xs)


def draw(result: Mapping[str, Any], path: Path) -> None:
    """Draw the result's curve into a PNG at ``path``."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    curve = result["curve"]
    series_key = _series_key(result)
    x_key, series = curve_keys(curve, series_key)
    groups = by_measure(series) if series_key else by_unit(series)
    values = series_values(curve, series_key)
    columns = 2 if len(groups) > 3 else 1
    rows = -(-len(groups) // columns)
    figure = Figure(figsize=(8 * columns, 1.2 + 3.4 * rows), dpi=100)
    FigureCanvasAgg(figure)
    grid = figure.subplots(rows, columns, squeeze=False)
    axes = [grid[i // columns][i % columns] for i in range(rows * columns)]
    for spare in axes[len(groups) :]:
        spare.set_visible(False)
    measures: dict[str, int] = {}
    xs_all = [p[x_key] for p in curve if is_number(p.get(x_key))]
    for ax, keys in zip(axes, groups.values(), strict=False):
        for index, value in enumerate(values):
            for key in keys:
                if series_key is None:
                    colour = measures.setdefault(measure_of(key), len(measures))
                    label = words(split_unit(key)[0])
                    xs, ys = points_of(curve, x_key, key)
                else:
                    colour = index
                    label = f"{words(split_unit(key)[0])}, {words(series_key)} {value}"
                    xs, ys = points_of(curve, x_key, key, (series_key, value))
                if not xs:
                    continue
                dashed = key.startswith(BASELINE_PREFIXES)
                ax.plot(
                    xs,
                    ys,
                    marker="o",
                    color=f"C{colour % 10}",
                    linestyle="--" if dashed else "-",
                    label=label,
                )
        ax.set_ylabel(y_label(keys))
        ax.set_xlabel(axis_label(x_key))
        if wide_x(xs_all):
            ax.set_xscale("log")
            ticks = sorted(set(xs_all))
            ax.set_xticks(ticks, [f"{tick:g}" for tick in ticks])
            ax.minorticks_off()
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

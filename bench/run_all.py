"""Runs the benchmarks under bench/ and rewrites BENCHMARKS.md with their figures and charts.

Each benchmark script prints one JSON object per line; every object names its
``benchmark``, its ``baseline`` (measured in the same run) and its
``ratio_to_baseline``, and usually its ``target`` and ``target_met``. Two keys
are optional:

- ``headline``: the key of the figure the summary table shows (otherwise a
  known headline key, or the first numeric ``pilothouse_…`` figure);
- ``curve``: a list of points (dicts, the x key first), shown as a small table
  and drawn as a chart ``BENCHMARKS-<name>.png`` by ``plots.py``.

A script that needs a program missing here (``native_profile`` needs ``perf``) is
skipped with a line saying so, its last results kept. A script that is missing, fails
or runs out of time becomes an entry
``{"benchmark": script, "error": …}`` (with the end of its stderr) and the run
goes on. The raw results are kept per script, with the date, machine and commit they
were measured on, in ``bench/results.json``: ``--only a,b`` re-runs some
scripts and keeps the others' last results in BENCHMARKS.md.

BENCHMARKS.md opens with the "[17] targets" block: issue #17's speed targets
(``harness/targets.py``), each once, read from the row that owns it, with its verdict
and when and at which commit it was measured. The summary row that owns a target shows
the same wording and verdict, computed from the row's figures.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import fnmatch
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeGuard

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness.figures import cell
from bench.harness.targets import judged, owned, targets_block

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results.json"
REPORT = ROOT / "BENCHMARKS.md"
ERROR_LINES = 20
HEADLINE_KEYS = (
    "pilothouse_event_p99_ms",
    "us_per_resource",
    "pilothouse_p99_beyond_debounce_ms",
    "pilothouse_kib_per_connection_*_to_*",
    "pilothouse_kib_per_connection",
    "pilothouse_sync_seconds",
    "us_per_object",
)
"""Headline figures of the scripts that do not name one, tried in order."""

COMPARE_WITH = "{compare_with}"
"""Stands in a script's arguments for ``--compare-with``: a script that takes it is
skipped when no tree to compare against is given (a fixed commit here went stale)."""

Result = dict[str, Any]
ScriptRun = dict[str, Any]
"""One script's last run: ``{"date": …, "machine": …, "commit": …, "results": [Result, …]}``
(runs kept from before the commit was recorded have none)."""


@dataclass(frozen=True)
class Script:
    name: str
    args: tuple[str, ...] = ()
    timeout: float = 1800.0
    folder: Path = HERE
    needs: str | None = None
    """A program the script runs (on the PATH); without it the script is skipped."""

    @property
    def path(self) -> Path:
        return self.folder / f"{self.name}.py"


SCRIPTS: tuple[Script, ...] = (
    Script("config_load"),
    # 15 pushes per trigger: at 5 the CPU ratios moved by a quarter to a third between runs
    # of one tree, at 15 by about a tenth (docs/guides/scale.md, "Figures that hold still")
    Script("push_fanout", ("--runs", "15")),
    Script("cds_messages", timeout=300.0),
    Script("push_cost", timeout=600.0),
    Script("workers_fanout", timeout=600.0),
    Script("fanout_curve", timeout=2400.0),
    Script("generation_cost"),
    Script("memory_slope", timeout=600.0),
    Script("connect_storm"),
    Script("admission_storm", timeout=1200.0),
    Script("endpoint_churn", ("--workers", "2")),
    Script("rest_sovereign"),
    Script("mcp_sync"),
    Script("mcp_encode"),
    Script("tree_compare", ("--old", COMPARE_WITH, "--rounds", "3"), timeout=3600.0),
    Script("metrics_overhead", timeout=900.0),
    Script("fleet10k", timeout=1500.0),
    Script("authorization_cost", timeout=600.0),
    Script("envoy_filter_cost"),
    Script("kube_source", timeout=900.0),
    Script("kube_registry", timeout=600.0),
    Script("kube_serve", timeout=900.0),
    Script("etcd_replicas", timeout=2400.0),
    Script("analysis_cost", timeout=600.0),
    Script("impact_cost", timeout=600.0),
    Script("node_sets", timeout=300.0),
    Script("worker_cost", timeout=300.0),
    Script("push_profile", timeout=600.0),
    Script("native_profile", timeout=900.0, needs="perf"),
)


# -- running ------------------------------------------------------------------------------


def failure(script: str, problem: str, stderr: str = "") -> Result:
    tail = "\n".join(stderr.rstrip().splitlines()[-ERROR_LINES:])
    return {"benchmark": script, "error": f"{problem}\n{tail}".rstrip()}


def parse_results(stdout: str) -> list[Result]:
    """The JSON objects among a script's output lines."""
    results = []
    for line in stdout.splitlines():
        if line.startswith("{"):
            with contextlib.suppress(json.JSONDecodeError):
                results.append(json.loads(line))
    return results


def _stop(process: subprocess.Popen[str]) -> None:
    """SIGTERM to the script's process group, SIGKILL if it is still there 10 s later."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(10)


def run_script(script: Script) -> list[Result]:
    """The script's results; a failure (missing, exit code, time-out, no output) as an entry."""
    if not script.path.exists():
        return [failure(script.name, f"bench/{script.path.name} does not exist")]
    process = subprocess.Popen(
        [sys.executable, str(script.path), *script.args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        start_new_session=True,
    )
    problem = None
    try:
        stdout, stderr = process.communicate(timeout=script.timeout)
    except subprocess.TimeoutExpired:
        _stop(process)
        stdout, stderr = process.communicate()
        problem = f"timed out after {script.timeout:.0f} s"
    except BaseException:
        _stop(process)
        raise
    if problem is None and process.returncode:
        problem = f"exited with {process.returncode}"
    results = parse_results(stdout)
    if problem is None and not results:
        problem = "printed no results"
    if problem is not None:
        results.append(failure(script.name, problem, stderr))
    return results


def commit() -> str:
    """The tree the scripts run from: HEAD's short hash, with "+changes" when src/ or
    bench/ (results.json aside) differ from it; "unknown" outside a git checkout."""
    git = ["git", "-C", str(ROOT)]
    try:
        head = subprocess.run(
            [*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        changed = subprocess.run(
            [*git, "status", "--porcelain", "--", "src", "bench", ":(exclude)bench/results.json"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+changes" if changed else "")


def machine() -> str:
    memory = ""
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            kib = int(handle.readline().split()[1])
        memory = f", {kib / 1024 / 1024:.0f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    return (
        f"{platform.machine()}, {os.cpu_count()} cores{memory}, "
        f"Python {platform.python_version()}, {platform.system()} {platform.release()}"
    )


# -- keeping results ----------------------------------------------------------------------


def load_stored(path: Path) -> dict[str, ScriptRun]:
    """The script runs kept from earlier, by script name (none if there is no file)."""
    if not path.exists():
        return {}
    stored: dict[str, ScriptRun] = json.loads(path.read_text(encoding="utf-8"))["scripts"]
    return stored


def merge(stored: Mapping[str, ScriptRun], fresh: Mapping[str, ScriptRun]) -> dict[str, ScriptRun]:
    """Fresh runs replace stored ones; in SCRIPTS order, then any others as they were."""
    combined = {**stored, **fresh}
    known = [script.name for script in SCRIPTS if script.name in combined]
    others = [name for name in combined if name not in known]
    return {name: combined[name] for name in known + others}


def save(path: Path, runs: Mapping[str, ScriptRun]) -> None:
    path.write_text(
        json.dumps({"scripts": runs}, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
    )


# -- rendering ----------------------------------------------------------------------------


def is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def headline(result: Mapping[str, Any]) -> str:
    named = result.get("headline")
    if isinstance(named, str):
        return f"{named} = {cell(result[named])}" if named in result else cell(named)
    for pattern in HEADLINE_KEYS:
        for key in result:
            if fnmatch.fnmatchcase(key, pattern):
                return f"{key} = {cell(result[key])}"
    for key, value in result.items():
        if key.startswith("pilothouse_") and is_number(value):
            return f"{key} = {cell(value)}"
    return "—"


def baseline_name(result: Mapping[str, Any]) -> str:
    """The baseline's name, without its description: "transport floor (…): …" → "transport
    floor"."""
    text = result.get("baseline")
    if text is None:
        return "—"
    return cell(str(text).split(" (")[0].split(":")[0])


def summary_table(runs: Mapping[str, ScriptRun]) -> list[str]:
    """One row per result; a row that owns issue #17 targets shows them (``judged``)."""
    lines = [
        "| benchmark | headline figure | baseline | ratio | target | met |",
        "|---|---|---|---|---|---|",
    ]
    for name, run in runs.items():
        for result in run["results"]:
            if "error" in result:
                row = [cell(result["benchmark"]), "—", "—", "—", "—", "**failed**"]
            else:
                own = {"target": result.get("target"), "target_met": result.get("target_met")}
                own |= judged(name, result, "") if owned(name, result) else {}
                row = [
                    cell(result["benchmark"]),
                    headline(result),
                    baseline_name(result),
                    cell(result.get("ratio_to_baseline")),
                    cell(own["target"]),
                    cell(own["target_met"]),
                ]
            lines.append("| " + " | ".join(row) + " |")
    return lines


def curve_table(curve: Sequence[Mapping[str, Any]]) -> list[str]:
    columns: list[str] = []
    for point in curve:
        columns.extend(key for key in point if key not in columns)
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for point in curve:
        lines.append("| " + " | ".join(cell(point.get(key)) for key in columns) + " |")
    return lines


def is_curve(value: object) -> TypeGuard[list[dict[str, Any]]]:
    return (
        isinstance(value, list) and bool(value) and all(isinstance(point, dict) for point in value)
    )


def section(result: Mapping[str, Any], measured: str | None, chart: str | None) -> list[str]:
    """One result: its figures, its curve as a table, its chart."""
    lines = [f"## {result['benchmark']}", ""]
    if measured:
        lines += [f"_{measured}_", ""]
    if "error" in result:
        return [*lines, "**failed**:", "", "```", str(result["error"]), "```", ""]
    lines += ["| figure | value |", "|---|---|"]
    curve = result.get("curve")
    for key, value in result.items():
        if key in ("benchmark", "headline") or (key == "curve" and is_curve(value)):
            continue
        lines.append(f"| {cell(key)} | {cell(value)} |")
    lines.append("")
    if is_curve(curve):
        lines += ["Curve:", "", *curve_table(curve), ""]
    if chart:
        lines += [f"![{result['benchmark']}]({chart})", ""]
    return lines


def render(runs: Mapping[str, ScriptRun], charts: Mapping[str, str], today: str, host: str) -> str:
    """BENCHMARKS.md; ``charts`` maps a benchmark name to its chart's file name."""
    lines = [
        "# Benchmarks",
        "",
        "Written by `make bench` (bench/run_all.py); do not edit by hand.",
        "Every figure is compared with a baseline measured in the same run on the same",
        "machine, because absolute times on a shared machine are noise.",
        "",
        f"- date: {today}",
        f"- machine: {host}",
    ]
    if any(run["date"] != today or run["machine"] != host for run in runs.values()):
        lines.append("- entries kept from an earlier run say when and where they were measured")
    lines += ["", *targets_block(runs), "", "## Summary", "", *summary_table(runs), ""]
    for run in runs.values():
        measured = None
        if run["date"] != today or run["machine"] != host:
            measured = f"measured {run['date']}"
            if run["machine"] != host:
                measured += f" on {run['machine']}"
        for result in run["results"]:
            lines += section(result, measured, charts.get(str(result["benchmark"])))
    return "\n".join(lines).rstrip() + "\n"


def draw_charts(runs: Mapping[str, ScriptRun]) -> dict[str, str]:
    """Chart file names by benchmark; none if matplotlib is missing (the bench extra)."""
    from bench.plots import draw_all

    try:
        drawn = draw_all({name: run["results"] for name, run in runs.items()}, ROOT)
    except ModuleNotFoundError as missing:
        print(f"no charts: {missing} (pip install -e '.[bench]')", file=sys.stderr)
        return {}
    return {benchmark: path.name for benchmark, path in drawn.items()}


# -- main ---------------------------------------------------------------------------------


def chosen_scripts(only: str | None) -> list[Script]:
    if not only:
        return list(SCRIPTS)
    names = [name.strip().removesuffix(".py") for name in only.split(",") if name.strip()]
    known = [script.name for script in SCRIPTS]
    unknown = [name for name in names if name not in known]
    if unknown:
        raise SystemExit(f"unknown benchmark {', '.join(unknown)}; known: {', '.join(known)}")
    return [script for script in SCRIPTS if script.name in names]


def with_comparison(script: Script, compare_with: str | None) -> Script | None:
    """``script`` with ``--compare-with``'s tree in its arguments; None when it needs one
    and none was given."""
    if COMPARE_WITH not in script.args:
        return script
    if not compare_with:
        return None
    args = tuple(compare_with if arg == COMPARE_WITH else arg for arg in script.args)
    return Script(script.name, args, script.timeout, script.folder, script.needs)


def missing_program(script: Script) -> str | None:
    """Why ``script`` cannot run here ("perf not found"), or None."""
    if script.needs is None or shutil.which(script.needs) is not None:
        return None
    return f"{script.needs} not found"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--only", metavar="NAMES", help="comma-separated scripts to run; keep the others' results"
    )
    parser.add_argument(
        "--render-only",
        action="store_true",
        help=f"run nothing: redraw the charts and rewrite {REPORT.name} from {RESULTS.name}",
    )
    parser.add_argument(
        "--compare-with",
        metavar="REF",
        help="the tree tree_compare runs against this one (a commit or branch); "
        "without it tree_compare is skipped",
    )
    args = parser.parse_args()
    today = datetime.date.today().isoformat()
    host = machine()
    tree = "" if args.render_only else commit()
    runs = load_stored(RESULTS)
    for chosen in [] if args.render_only else chosen_scripts(args.only):
        script = with_comparison(chosen, args.compare_with)
        if script is None:
            print(f"{chosen.name}: skipped (give --compare-with REF)", file=sys.stderr)
            continue
        missing = missing_program(script)
        if missing is not None:
            print(f"{script.name}: skipped: {missing}", file=sys.stderr)
            continue
        print(f"{script.name}…", file=sys.stderr, flush=True)
        began = time.monotonic()
        results = run_script(script)
        for result in results:
            print(json.dumps(result, ensure_ascii=False), flush=True)
        print(f"{script.name}: {time.monotonic() - began:.0f} s", file=sys.stderr, flush=True)
        fresh = {"date": today, "machine": host, "commit": tree, "results": results}
        runs = merge(runs, {script.name: fresh})
        save(RESULTS, runs)
    charts = draw_charts(runs)
    REPORT.write_text(render(runs, charts, today, host), encoding="utf-8")


if __name__ == "__main__":
    main()

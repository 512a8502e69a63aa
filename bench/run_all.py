"""Runs every benchmark under bench/ and rewrites BENCHMARKS.md with their figures.

Each benchmark script prints one JSON object per line; every object names its
``benchmark``, its ``baseline`` (measured in the same run) and its ``ratio_to_baseline``.
This runner records them with the machine and the date.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SCRIPTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("config_load.py", ()),
    ("push_fanout.py", ()),
    ("mcp_sync.py", ()),
)


def run(script: str, args: tuple[str, ...]) -> list[dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, str(HERE / script), *args],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        timeout=1800,
    )
    results = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    for result in results:
        print(json.dumps(result))
    return results


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


def render(results: list[dict[str, Any]]) -> str:
    today = datetime.date.today().isoformat()
    lines = [
        "# Benchmarks",
        "",
        "Written by `make bench` (bench/run_all.py); do not edit by hand.",
        "Every figure is compared with a baseline measured in the same run on the same",
        "machine, because absolute times on a shared machine are noise.",
        "",
        f"- date: {today}",
        f"- machine: {machine()}",
        "",
    ]
    for result in results:
        lines.append(f"## {result['benchmark']}")
        lines.append("")
        lines.append("| figure | value |")
        lines.append("|---|---|")
        for key, value in result.items():
            if key != "benchmark":
                lines.append(f"| {key} | {value} |")
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    results: list[dict[str, Any]] = []
    for script, args in SCRIPTS:
        results.extend(run(script, args))
    (ROOT / "BENCHMARKS.md").write_text(render(results), encoding="utf-8")


if __name__ == "__main__":
    main()

"""The benchmark runner (bench/run_all.py): failures become entries, partial runs merge with
the kept results, and BENCHMARKS.md renders a summary, curves as tables and chart links."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench.run_all import (
    Script,
    chosen_scripts,
    headline,
    load_stored,
    merge,
    render,
    run_script,
    save,
)

TODAY = "2026-12-01"
HOST = "x86_64, 2 cores"


def run(results: list[dict[str, Any]], date: str = TODAY, host: str = HOST) -> dict[str, Any]:
    return {"date": date, "machine": host, "results": results}


MEMORY = {
    "benchmark": "memory_slope: server RSS per connected proxy",
    "baseline": "transport floor (bench/transport_floor.py): a bare server",
    "headline": "pilothouse_kib_per_proxy_1000_to_2000",
    "pilothouse_kib_per_proxy_1000_to_2000": 85.4,
    "ratio_to_baseline": 0.54,
    "target": "≤ 100 KiB per proxy",
    "target_met": "yes",
    "curve": [
        {"proxies": 0, "pilothouse_rss_mib": 67.3, "floor_rss_mib": 49.9},
        {"proxies": 1000, "pilothouse_rss_mib": 161.3, "floor_rss_mib": 96.2},
    ],
}


# -- running ------------------------------------------------------------------------------


def write_script(folder: Path, name: str, body: str) -> Script:
    (folder / f"{name}.py").write_text(body, encoding="utf-8")
    return Script(name, timeout=20.0, folder=folder)


def test_a_missing_script_is_a_failure_entry(tmp_path: Path) -> None:
    [entry] = run_script(Script("not_written_yet", folder=tmp_path))
    assert entry["benchmark"] == "not_written_yet"
    assert "does not exist" in entry["error"]


def test_a_failing_script_keeps_its_results_and_adds_its_stderr(tmp_path: Path) -> None:
    script = write_script(
        tmp_path,
        "breaks",
        "import json, sys\n"
        "print(json.dumps({'benchmark': 'breaks: first', 'ratio_to_baseline': 1}))\n"
        "print('not json')\n"
        "print('\\n'.join(f'line {i}' for i in range(30)), file=sys.stderr)\n"
        "sys.exit(3)\n",
    )
    first, failed = run_script(script)
    assert first == {"benchmark": "breaks: first", "ratio_to_baseline": 1}
    assert failed["benchmark"] == "breaks"
    assert failed["error"].startswith("exited with 3")
    assert "line 29" in failed["error"]
    assert "line 5\n" not in failed["error"]  # only the last lines


def test_a_script_that_prints_nothing_failed(tmp_path: Path) -> None:
    [entry] = run_script(write_script(tmp_path, "silent", "pass\n"))
    assert entry["error"] == "printed no results"


def test_a_script_out_of_time_is_stopped(tmp_path: Path) -> None:
    script = write_script(tmp_path, "slow", "import time\ntime.sleep(60)\n")
    [entry] = run_script(Script(script.name, timeout=0.5, folder=tmp_path))
    assert entry["error"].startswith("timed out after")


def test_only_picks_known_scripts_in_the_runners_order() -> None:
    assert [s.name for s in chosen_scripts("mcp_sync, memory_slope.py")] == [
        "memory_slope",
        "mcp_sync",
    ]
    assert len(chosen_scripts(None)) > 2
    with pytest.raises(SystemExit, match="unknown benchmark nope"):
        chosen_scripts("memory_slope,nope")


# -- keeping results ----------------------------------------------------------------------


def test_a_partial_run_replaces_only_the_scripts_it_ran() -> None:
    stored = {
        "mcp_sync": run([{"benchmark": "mcp_sync: old"}], "2026-11-22"),
        "config_load": run([{"benchmark": "config_load"}], "2026-11-22"),
        "retired": run([{"benchmark": "retired"}], "2026-11-01"),
    }
    fresh = {"config_load": run([{"benchmark": "config_load", "ratio_to_baseline": 2}])}
    merged = merge(stored, fresh)
    assert list(merged) == ["config_load", "mcp_sync", "retired"]
    assert merged["config_load"] == fresh["config_load"]
    assert merged["mcp_sync"] == stored["mcp_sync"]


def test_results_survive_a_save_and_load(tmp_path: Path) -> None:
    path = tmp_path / "results.json"
    assert load_stored(path) == {}
    runs = {"memory_slope": run([MEMORY])}
    save(path, runs)
    assert load_stored(path) == runs


# -- rendering ----------------------------------------------------------------------------


def test_the_summary_row_shows_headline_baseline_ratio_target_and_met() -> None:
    text = render({"memory_slope": run([MEMORY])}, {}, TODAY, HOST)
    summary = text.split("## Summary", 1)[1].split("\n## ", 1)[0]
    assert (
        "| memory_slope: server RSS per connected proxy "
        "| pilothouse_kib_per_proxy_1000_to_2000 = 85.4 | transport floor | 0.54 "
        "| ≤ 100 KiB per proxy | yes |"
    ) in summary


def test_a_curve_is_a_table_with_its_chart_below() -> None:
    charts = {MEMORY["benchmark"]: "BENCHMARKS-memory.png"}
    text = render({"memory_slope": run([MEMORY])}, charts, TODAY, HOST)
    assert "| proxies | pilothouse_rss_mib | floor_rss_mib |" in text
    assert "| 1000 | 161.3 | 96.2 |" in text
    assert "[{'proxies'" not in text  # not the raw list
    assert f"![{MEMORY['benchmark']}](BENCHMARKS-memory.png)" in text
    assert "| headline |" not in text


def test_a_failure_says_so_in_the_summary_and_its_section() -> None:
    failed = {"benchmark": "connect_storm", "error": "exited with 1\nTraceback: boom"}
    text = render({"connect_storm": run([failed])}, {}, TODAY, HOST)
    assert "| connect_storm | — | — | — | — | **failed** |" in text
    assert "## connect_storm\n\n**failed**:\n\n```\nexited with 1\nTraceback: boom\n```" in text


def test_kept_entries_say_when_and_where_they_were_measured() -> None:
    runs = {
        "memory_slope": run([MEMORY]),
        "mcp_sync": run([{"benchmark": "mcp_sync: 10 objects"}], "2026-11-22", "other box"),
    }
    text = render(runs, {}, TODAY, HOST)
    assert "## mcp_sync: 10 objects\n\n_measured 2026-11-22 on other box_" in text
    assert "## memory_slope: server RSS per connected proxy\n\n| figure" in text


def test_cells_escape_table_pipes() -> None:
    result = {"benchmark": "b", "cluster": "outbound|8080||svc", "target_met": None}
    text = render({"b": run([result])}, {}, TODAY, HOST)
    assert "| cluster | outbound\\|8080\\|\\|svc |" in text
    assert "| target_met | — |" in text


def test_headline_figure_named_known_or_first_pilothouse_figure() -> None:
    assert headline(MEMORY) == "pilothouse_kib_per_proxy_1000_to_2000 = 85.4"
    assert headline({"headline": "12 ms at 1k"}) == "12 ms at 1k"
    fanout = {"pilothouse_p50_ms": 1.0, "pilothouse_p99_beyond_debounce_ms": 478.5}
    assert headline(fanout) == "pilothouse_p99_beyond_debounce_ms = 478.5"
    assert headline({"pilothouse_note": "x", "pilothouse_seconds": 6.5}) == (
        "pilothouse_seconds = 6.5"
    )
    assert headline({"benchmark": "b"}) == "—"

"""Issue #17's speed targets, each stated once the issue's way, and their verdicts.

``TARGETS`` lists the targets of the issue's item 5 and the storm and worker targets of
items 3 and 4, each with the script and the summary row that measure it (its floor or
baseline measured in the same run), how the judged figure is read from that row and its
limit. A script puts a target's wording and verdict on the row that owns it
(``judged``); ``targets_block`` lists the same table as the "[17] targets" block that
``run_all.py`` puts at the top of BENCHMARKS.md, read from the rows kept in
``results.json`` (a missed target whose miss a docs page explains with a profile points
there), and ``run_all.py`` shows the same wording and verdict in the summary
row. A target is therefore worded, owned and judged in one place.

A verdict is ``met`` or ``missed by X (Y× the target)``: X how far the figure is on the
wrong side of the limit, Y the figure as a multiple of the limit. A row whose run also
counted failures (proxies that never converged, events or pushes never delivered) misses
its target whatever its figure.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from bench.harness.figures import cell

ISSUE = "[17]"
MB_PER_MIB = 1.048576
UNCONVERGED = "proxies never converged (worst run)"

Row = Mapping[str, Any]
Reading = Callable[[Row], float | None]


def number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def key(*names: str, factor: float = 1.0) -> Reading:
    """The first of ``names`` the row holds as a number (later names: what older runs
    called the same figure), times ``factor``."""

    def read(row: Row) -> float | None:
        for name in names:
            found = number(row.get(name))
            if found is not None:
                return found * factor
        return None

    return read


def worst(*names: str) -> Reading:
    """The largest of the named figures the row holds."""

    def read(row: Row) -> float | None:
        found = [v for v in (number(row.get(name)) for name in names) if v is not None]
        return max(found) if found else None

    return read


def curve_ratio(proxies: int, trigger: str, workers: int = 1) -> Reading:
    """pilothouse ÷ floor server CPU per proxy pushed at one ``fanout_curve`` point."""

    def read(row: Row) -> float | None:
        for point in row.get("curve") or ():
            if point.get("proxies") == proxies and point.get("workers") == workers:
                ours = number(point.get(f"pilothouse_{trigger}_cpu_us_per_proxy"))
                floor = number(point.get(f"floor_{trigger}_cpu_us_per_proxy"))
                if ours is not None and floor:
                    return round(ours / floor, 2)
        return None

    return read


@dataclass(frozen=True)
class Target:
    name: str
    text: str
    """The target as the issue words it."""
    script: str
    row: str
    """``fnmatch`` pattern of the benchmark name of the summary row that owns it."""
    read: Reading
    limit: float
    unit: str
    digits: int = 2
    at_least: bool = False
    failures: tuple[tuple[str, str], ...] = ()
    """Count figures of the row that must be 0 (absent: not counted by that run), each
    with what it counts."""
    against: Reading | None = field(default=None, compare=False)
    """The floor's (or baseline's) same figure, where the target is not a ratio."""
    limit_from: Reading | None = field(default=None, compare=False)
    """The limit as the row's run set it (e.g. from its admission rate), else ``limit``."""
    explained: str = ""
    """Where a miss is explained with a profile (a docs page and anchor), or nothing."""

    def owns(self, script: str, row: Row) -> bool:
        return script == self.script and fnmatch.fnmatchcase(str(row.get("benchmark")), self.row)

    def shown(self, value: float) -> str:
        return f"{value:.{self.digits}f}{self.unit}"

    def figure(self, row: Row) -> float | None:
        return self.read(row)

    def limit_of(self, row: Row) -> float:
        found = None if self.limit_from is None else self.limit_from(row)
        return self.limit if found is None else found

    def verdict(self, row: Row) -> str:
        """``met``, or by how much not; says so when the row does not hold the figure."""
        failed = [f"{row[name]:g} {what}" for name, what in self.failures if number(row.get(name))]
        if failed:
            return "missed: " + ", ".join(failed)
        value = self.figure(row)
        if value is None:
            return "not measured (this run does not hold the figure)"
        return judge(value, self.limit_of(row), self.at_least, self.shown)


def judge(value: float, limit: float, at_least: bool, shown: Callable[[float], str]) -> str:
    if (value >= limit) if at_least else (value <= limit):
        return "met"
    return f"missed by {shown(abs(value - limit))} ({value / limit:.2f}× the target)"


def storm_limit(rate: float | None, proxies: int = 2000) -> float | None:
    """Item 3: a storm of ``proxies`` converges within proxies ÷ rate + 2 s."""
    return proxies / rate + 2.0 if rate else None


CPU_EXPLAINED = "docs/guides/scale.md#where-the-servers-cpu-goes"
SPREAD_EXPLAINED = "docs/guides/scale.md#figures-that-hold-still"
MISSES_EXPLAINED = "docs/guides/scale.md#the-misses-explained"


def _cpu(trigger: str, proxies: int) -> Target:
    title = "EDS" if trigger == "eds" else "CDS"
    text = f"server CPU per message ≤ 1.2× the floor's, {title}, {proxies:,} proxies"
    if proxies == 1000:
        return Target(
            f"cpu_{trigger}_{proxies}",
            text,
            "push_fanout",
            f"push_fanout: {title} change to every proxy (SotW, 1000 proxies)",
            key("cpu_per_message_times_floor", "cpu_times_floor"),
            1.2,
            "×",
            explained=CPU_EXPLAINED,
        )
    return Target(
        f"cpu_{trigger}_{proxies}",
        text,
        "fanout_curve",
        "fanout_curve: server CPU per *",
        curve_ratio(proxies, trigger),
        1.2,
        "×",
        explained=CPU_EXPLAINED,
    )


TARGETS: tuple[Target, ...] = (
    *(_cpu(trigger, n) for n in (1000, 2000, 5000) for trigger in ("eds", "cds")),
    Target(
        "eds_spread",
        "EDS spread ≥ 0.8 of the floor's (floor's spread ÷ pilothouse's), 1,000 proxies",
        "push_fanout",
        "push_fanout: fan-out spread, last − first proxy (SotW, 1000 proxies)",
        key("eds_spread_ratio_floor_to_pilothouse"),
        0.8,
        "",
        at_least=True,
        explained=SPREAD_EXPLAINED,
    ),
    Target(
        "endpoint_churn",
        "endpoint churn 50/s to 1,000 proxies: event p99 ≤ 1 s",
        "endpoint_churn",
        "endpoint_churn: 50 endpoint changes/s for * s to 1000 SotW proxies",
        key("pilothouse_event_p99_ms"),
        1000.0,
        " ms",
        digits=0,
        failures=(("pilothouse_events_missed", "events never reached every proxy"),),
        against=key("floor_event_p99_ms"),
    ),
    Target(
        "fleet_replay",
        "the 10,000-proxy fleet's full-push p99 ≤ 1.5× the floor's replay in the same run",
        "fleet10k",
        "fleet10k: 10000 SotW sidecars on one serve, *",
        key("cds_push_p99_times_floor"),
        1.5,
        "×",
        failures=(
            ("unconverged", "proxies never converged"),
            ("pushes_missed", "pushes never reached every proxy"),
        ),
        explained=MISSES_EXPLAINED,
    ),
    Target(
        "kib_per_connection",
        "≤ 80 KiB per connection (server RSS, idle, 1,000 and 1,000 to 2,000 proxies)",
        "push_fanout",
        "push_fanout: server RSS per idle connection (SotW)",
        worst("pilothouse_kib_per_connection", "pilothouse_kib_per_connection_1000_to_2000"),
        80.0,
        " KiB",
        digits=1,
        against=worst("floor_kib_per_connection", "floor_kib_per_connection_1000_to_2000"),
    ),
    Target(
        "connect_cpu",
        "connect CPU ≤ 1.5 ms per connection (1,000 proxies connecting at once)",
        "connect_storm",
        "connect_storm: 1000 SotW sidecars connect at once and converge",
        key("pilothouse_server_cpu_ms_per_proxy"),
        1.5,
        " ms",
        failures=(("pilothouse_unconverged_worst_run", UNCONVERGED),),
        against=key("floor_server_cpu_ms_per_proxy"),
        explained=MISSES_EXPLAINED,
    ),
    Target(
        "storm_convergence",
        "a 2,000-proxy storm converges within 2,000 ÷ rate + 2 s (admission defaults)",
        "admission_storm",
        "admission_storm: 2000 SotW sidecars connect at once, * (the defaults)",
        key("pilothouse_s"),
        10.0,
        " s",
        failures=(("pilothouse_unconverged_worst_run", UNCONVERGED),),
        against=key("admission_off_s"),
        limit_from=lambda row: storm_limit(number(row.get("rate_per_s"))),
    ),
    Target(
        "worker_cost",
        "idle overhead per extra worker ≤ 60 MB (PSS)",
        "worker_cost",
        "worker_cost: idle memory of one more serve worker*",
        key("pss_mib_per_extra_worker", factor=MB_PER_MIB),
        60.0,
        " MB",
        digits=1,
    ),
)


def owned(script: str, row: Row) -> list[Target]:
    """The targets the row of ``script`` owns, in the table's order."""
    return [t for t in TARGETS if t.owns(script, row)]


def judged(script: str, row: Row, otherwise: str) -> dict[str, Any]:
    """The row's ``target`` and ``target_met``: the targets it owns (joined by "; "), or
    ``otherwise`` (why nothing is judged on this row) and "—"."""
    mine = owned(script, row)
    if not mine:
        return {"target": otherwise, "target_met": "—"}
    return {
        "target": "; ".join(f"{ISSUE} {t.text}" for t in mine),
        "target_met": "; ".join(t.verdict(row) for t in mine),
    }


# -- the block at the top of BENCHMARKS.md -----------------------------------------------


def measured_on(run: Mapping[str, Any]) -> str:
    return f"{run['date']} at {run.get('commit') or 'a commit not recorded'}"


def target_row(target: Target, runs: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """One target's line of the "[17] targets" block."""
    refresh = f"run `bench/run_all.py --only {target.script}`"
    run = runs.get(target.script)
    if run is None:
        return [target.text, "—", "—", f"not measured yet: {refresh}", target.script, "—"]
    rows = [result for result in run["results"] if target.owns(target.script, result)]
    if not rows:
        failed = any("error" in result for result in run["results"])
        why = "the script failed" if failed else "its last run has no such row"
        return [target.text, "—", "—", f"not measured: {why}; {refresh}", target.script,
                measured_on(run)]  # fmt: skip
    row = rows[0]
    figure, floor = target.figure(row), target.against and target.against(row)
    verdict = target.verdict(row)
    if figure is None:
        verdict += f"; {refresh}"
    elif target.explained and verdict.startswith("missed"):
        verdict += f"; explained: see {target.explained}"
    return [
        target.text,
        "—" if figure is None else target.shown(figure),
        "—" if floor is None else target.shown(floor),
        verdict,
        target.script,
        measured_on(run),
    ]


def targets_block(runs: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """BENCHMARKS.md's "[17] targets" block from the kept script runs (``run_all.py``'s
    ``{"date": …, "commit": …, "results": […]}`` by script name): every target, once."""
    lines = [
        f"## {ISSUE} targets",
        "",
        "Issue #17's speed targets, each judged once, on the row of the script named, "
        "against the transport floor (or baseline) measured in the same run "
        "(`bench/harness/targets.py`). A ratio is pilothouse ÷ floor unless the target says "
        "otherwise; the floor column gives the floor's own figure where the target is not "
        "a ratio.",
        "",
        "| target | measured | floor | verdict | script | measured on |",
        "|---|---|---|---|---|---|",
    ]
    for target in TARGETS:
        lines.append("| " + " | ".join(map(cell, target_row(target, runs))) + " |")
    return lines

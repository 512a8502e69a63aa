"""Issue #17's targets (bench/harness/targets.py): each stated once, owned by one script's row,
judged "met" or "missed by X (Y× the target)" from that row's figures, old runs' names read."""

from __future__ import annotations

from collections import Counter

import pytest

from bench.harness.targets import TARGETS, judged, owned
from bench.run_all import SCRIPTS

PUSH_EDS = "push_fanout: EDS change to every proxy (SotW, 1000 proxies)"


def test_each_target_is_stated_once_and_owned_by_a_script_make_bench_runs() -> None:
    assert len(TARGETS) == 13
    assert not [text for text, n in Counter(t.text for t in TARGETS).items() if n > 1]
    assert len({t.name for t in TARGETS}) == len(TARGETS)
    assert {t.script for t in TARGETS} <= {script.name for script in SCRIPTS}
    cpu = [t.text for t in TARGETS if t.text.startswith("server CPU per message ≤ 1.2×")]
    assert [text.split(", ", 2)[1:] for text in cpu] == [
        [kind, f"{n} proxies"] for n in ("1,000", "2,000", "5,000") for kind in ("EDS", "CDS")
    ]


def test_an_upper_limit_is_met_up_to_it_and_missed_by_how_much_beyond() -> None:
    row = {"benchmark": PUSH_EDS, "cpu_per_message_times_floor": 1.2}
    assert judged("push_fanout", row, "none") == {
        "target": "[17] server CPU per message ≤ 1.2× the floor's, EDS, 1,000 proxies",
        "target_met": "met",
    }
    row["cpu_per_message_times_floor"] = 1.5
    assert judged("push_fanout", row, "none")["target_met"] == (
        "missed by 0.30× (1.25× the target)"
    )


def test_a_lower_limit_is_missed_below_it() -> None:
    name = "push_fanout: fan-out spread, last − first proxy (SotW, 1000 proxies)"
    row = {"benchmark": name, "eds_spread_ratio_floor_to_pilothouse": 0.6}
    assert judged("push_fanout", row, "none")["target_met"] == "missed by 0.20 (0.75× the target)"
    row["eds_spread_ratio_floor_to_pilothouse"] = 0.8
    assert judged("push_fanout", row, "none")["target_met"] == "met"


def test_a_row_owns_only_its_scripts_targets_and_others_say_why_not() -> None:
    row = {"benchmark": PUSH_EDS, "cpu_per_message_times_floor": 1.0}
    assert [t.name for t in owned("push_fanout", row)] == ["cpu_eds_1000"]
    assert owned("tree_compare", row) == []
    other = {"benchmark": "push_fanout: EDS change to every proxy (SotW, 500 proxies)"}
    assert judged("push_fanout", other, "none here") == {"target": "none here", "target_met": "—"}


@pytest.mark.parametrize(
    ("script", "row", "verdict"),
    [
        # an earlier run's name for the figure: CPU per push, the floor sending the same messages
        ("push_fanout", {"benchmark": PUSH_EDS, "cpu_times_floor": 1.28},
         "missed by 0.08× (1.07× the target)"),
        # worker_cost measured MiB: 57.3 MiB is 60.1 MB
        ("worker_cost", {"benchmark": "worker_cost: idle memory of one more serve worker (x)",
                         "pss_mib_per_extra_worker": 57.3},
         "missed by 0.1 MB (1.00× the target)"),
        # the worst of the RSS figures is judged
        ("push_fanout", {"benchmark": "push_fanout: server RSS per idle connection (SotW)",
                         "pilothouse_kib_per_connection": 60.0,
                         "pilothouse_kib_per_connection_1000_to_2000": 82.0},
         "missed by 2.0 KiB (1.02× the target)"),
        # fanout_curve: the point at 2,000 proxies, one worker
        ("fanout_curve", {"benchmark": "fanout_curve: server CPU per push, RSS (…)", "curve": [
            {"proxies": 2000, "workers": 2, "pilothouse_eds_cpu_us_per_proxy": 900.0,
             "floor_eds_cpu_us_per_proxy": 300.0},
            {"proxies": 2000, "workers": 1, "pilothouse_eds_cpu_us_per_proxy": 330.0,
             "floor_eds_cpu_us_per_proxy": 300.0},
        ]}, "met"),
        # admission: the limit follows the row's rate (2,000 ÷ 400 + 2 = 7 s)
        ("admission_storm", {
            "benchmark": "admission_storm: 2000 SotW sidecars connect at once, 400 new "
            "streams/s, wait 10 s (the defaults)", "rate_per_s": 400, "pilothouse_s": 8.4,
        }, "missed by 1.40 s (1.20× the target)"),
    ],
)  # fmt: skip
def test_the_figure_is_read_the_way_each_script_records_it(
    script: str, row: dict[str, object], verdict: str
) -> None:
    target = owned(script, row)[0]  # fanout_curve's row owns four: EDS at 2,000 first
    assert target.verdict(row) == verdict


def test_a_row_without_the_figure_is_not_measured() -> None:
    row = {"benchmark": "fanout_curve: server CPU per message (…)", "curve": []}
    assert len(owned("fanout_curve", row)) == 4
    assert set(judged("fanout_curve", row, "")["target_met"].split("; ")) == {
        "not measured (this run does not hold the figure)"
    }

"""tree_compare's arithmetic: rounds paired back to back, the median of their ratios, the
verdict against their spread, and the order of the two trees flipped every round.

Running the script whole needs a second tree and minutes of benchmarks (nothing else
runs it); these feed :func:`compare` the results two trees' scripts print.
"""

from __future__ import annotations

from typing import Any

from bench.tree_compare import Bench, compare, old_first, verdict

BENCH = Bench("generation_cost", ("--sample", "4"), 900.0)
NAME = "generation_cost: first push"


def rounds(values: list[float], **extra: Any) -> list[list[dict[str, Any]]]:
    """One run per value, each reporting the figure under NAME."""
    return [[{"benchmark": NAME, "us_per_resource": value, **extra}] for value in values]


def only(entries: list[dict[str, Any]]) -> dict[str, Any]:
    (entry,) = entries
    return entry


def test_each_round_is_compared_with_its_own_pair_not_with_the_best_of_the_other_side() -> None:
    # the machine was slow in round 2 for both sides: per round, old ÷ new is 1.0 each time
    entry = only(list(compare(BENCH, rounds([10, 20, 10]), rounds([10, 20, 10]), "abc")))
    assert entry["ratio_each"] == [1.0, 1.0, 1.0]
    assert entry["ratio_to_baseline"] == 1.0
    assert entry["ratio_spread"] == [1.0, 1.0]
    assert entry["old_us_per_resource"] == entry["new_us_per_resource"] == 10.0
    assert entry["rounds"] == 3
    assert entry["verdict"] == "no regression beyond spread"
    assert entry["target_met"] == "yes"


def test_a_consistent_slowdown_is_a_regression_beyond_spread() -> None:
    entry = only(list(compare(BENCH, rounds([10, 10, 10]), rounds([12, 12.5, 12]), "abc")))
    assert entry["ratio_to_baseline"] == 0.833
    assert entry["verdict"] == "regression beyond spread"
    assert entry["target_met"] == "no"


def test_a_slower_median_inside_a_wide_spread_is_not_called_a_regression() -> None:
    entry = only(list(compare(BENCH, rounds([10, 10, 10]), rounds([8, 11, 14]), "abc")))
    assert entry["ratio_spread"] == [0.714, 1.25]
    assert entry["ratio_to_baseline"] == 0.909
    assert entry["verdict"] == "no regression beyond spread"


def test_verdict_thresholds() -> None:
    assert verdict([0.9, 0.95, 0.97]) == "regression beyond spread"  # 0.95 + 0.035 < 1
    assert verdict([0.8, 0.95, 1.1]) == "no regression beyond spread"
    assert verdict([1.1, 1.2, 1.15]) == "faster beyond spread"
    assert verdict([0.99]) == "regression beyond spread"  # one round: no spread to hide in


def test_a_round_missing_on_one_side_is_left_out_and_unknown_results_are_skipped() -> None:
    old = rounds([10, 10, 10])
    new = rounds([10, 5, 10])
    new[1] = []  # the new tree's run failed (run_once keeps no error entries)
    new[2].append({"benchmark": "only in the new tree", "us_per_resource": 1.0})
    (entry,) = compare(BENCH, old, new, "abc")
    assert entry["benchmark"] == f"tree_compare: {NAME}"
    assert entry["rounds"] == 2 and entry["ratio_each"] == [1.0, 1.0]


def test_each_sides_own_floor_ratio_is_the_median_of_its_rounds() -> None:
    old = rounds([10, 10, 10])
    new = rounds([10, 10, 10])
    for run, ratio in zip(old, (0.2, 0.4, 0.3), strict=True):
        run[0].update(ratio_to_baseline=ratio, baseline="the floor")
    for run, ratio in zip(new, (0.5, 0.1, 0.3), strict=True):
        run[0].update(ratio_to_baseline=ratio, baseline="the floor")
    entry = only(list(compare(BENCH, old, new, "abc")))
    assert entry["old_ratio_to_own_baseline"] == 0.3
    assert entry["new_ratio_to_own_baseline"] == 0.3
    assert entry["own_baseline"] == "the floor"


def test_the_tree_that_runs_first_alternates() -> None:
    assert [old_first(n) for n in range(4)] == [True, False, True, False]

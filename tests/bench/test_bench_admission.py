"""The admission storm benchmark's parts: reading admissions from a server log, the busiest
second, the rate check and issue #17's storm target on the row with the defaults."""

from __future__ import annotations

import logging
from pathlib import Path

from bench.admission_storm import (
    NOT_JUDGED,
    Admissions,
    Options,
    Side,
    admitted_times,
    busiest_window,
    rate_kept,
    refusals,
    report,
)
from bench.harness.storm import StormRun
from bench.run_all import SCRIPTS
from pilothouse import logfmt

LOG = """\
2026-11-25T19:35:04.328Z info serve xDS listening on 127.0.0.1:32829 address=127.0.0.1:32829
2026-11-25T19:35:05.000Z debug xds.admission xds stream admitted at=1000.000000 waited=0.0 peer=a
2026-11-25T19:35:05.001Z debug xds.admission xds stream refused reason=rate_limited peer=b
2026-11-25T19:35:05.002Z debug xds.admission xds stream admitted at=1000.500000 waited=0.5 peer=c
2026-11-25T19:35:05.003Z debug xds.admission xds stream refused reason=max_connections peer=d
2026-11-25T19:35:05.004Z debug xds.admission xds stream refused reason=rate_limited peer=e
2026-11-25T19:35:06.900Z debug xds.admission xds stream admitted at=1000.999000 waited=0.9 peer=f
2026-11-25T19:35:07.000Z debug xds.admission xds stream admitted at=1001.000000 waited=1.0 peer=g
"""


def test_admissions_are_read_at_the_moments_their_tokens_were_taken() -> None:
    assert admitted_times(LOG) == [1000.0, 1000.5, 1000.999, 1001.0]
    assert refusals(LOG) == {"rate_limited": 2, "max_connections": 1}
    figures = Admissions.from_log(LOG)
    assert figures.admitted == 4
    assert figures.busiest_second == 3  # [1000.0, 1001.0) holds three; 1001.0 is out
    assert figures.mean_rate == 3.0
    assert figures.refused == {"max_connections": 1, "rate_limited": 2}


def test_the_busiest_window_is_half_open() -> None:
    assert busiest_window([]) == 0
    assert busiest_window([5.0]) == 1
    assert busiest_window([0.0, 1.0, 2.0]) == 1
    assert busiest_window([0.0, 0.2, 0.99, 1.0, 1.1, 1.5]) == 4  # [0.2, 1.2)
    assert busiest_window([0.0] * 7 + [0.999]) == 8
    assert busiest_window([0.0, 0.5, 1.0], length=0.5) == 1


def test_the_servers_own_log_line_is_what_is_read(tmp_path: Path) -> None:
    """The format the benchmark parses is the one ``pilothouse serve`` writes."""
    path = tmp_path / "serve.log"
    with path.open("w") as stream:
        logfmt.configure("info,xds.admission:debug", stream)
        logging.getLogger("pilothouse.xds.admission").debug(
            "xds stream admitted", extra={"at": "1234.500000", "waited": 0.1, "peer": "x"}
        )
        logging.getLogger("pilothouse.xds.admission").debug(
            "xds stream refused", extra={"reason": "rate_limited", "peer": "y"}
        )
    logfmt.configure("info")
    text = path.read_text()
    assert admitted_times(text) == [1234.5]
    assert refusals(text) == {"rate_limited": 1}


def side(seconds: float, busiest: int, unconverged: int = 0) -> Side:
    run = StormRun(
        proxies=10,
        seconds=seconds,
        durations=tuple(seconds for _ in range(10 - unconverged)),
        unconverged=unconverged,
        stream_failures=0,
        reconnects=0,
        nacks=0,
        rss_before_kib=1024,
        peak_rss_kib=2048,
        cpu_seconds=1.0,
    )
    return Side(run, Admissions(10, busiest, busiest * 0.9, {"rate_limited": 3}))


OPTIONS = Options(
    proxies=10,
    rate=250,
    burst=25,
    waits=(1.0, 10.0),
    runs=2,
    services=100,
    namespaces=10,
    endpoints=2,
    streams_per_channel=100,
    timeout=60,
)
STORM = Options(**{**OPTIONS.__dict__, "proxies": 2000})


def test_the_rate_check_names_the_busiest_second() -> None:
    assert rate_kept(OPTIONS, [side(9.0, 250), side(9.9, 248)]) == "yes"
    assert rate_kept(OPTIONS, [side(9.0, 251)]) == "no: 251 admitted in one second"


def test_the_report_compares_with_the_storm_without_a_limit() -> None:
    result = report(OPTIONS, 10.0, [side(12.0, 250), side(10.0, 249)], [side(5.5, 1900)])
    assert result["benchmark"].endswith("250 new streams/s, wait 10 s (the defaults)")
    assert result["pilothouse_s"] == 11.0
    assert result["admission_off_s"] == 5.5
    assert result["ratio_to_baseline"] == 0.5
    assert result["pilothouse_busiest_second_admitted"] == 250
    assert result["pilothouse_refused_all_runs"] == {"rate_limited": 6}
    assert result["rate_check"] == "at most 250 admitted in any second"
    assert result["rate_check_met"] == "yes"
    assert (result["target"], result["target_met"]) == (NOT_JUDGED, "—")  # 10 proxies
    shorter = report(OPTIONS, 1.0, [side(9.0, 250)], [side(5.5, 1900)])
    assert "(the defaults)" not in shorter["benchmark"] and shorter["wait_s"] == 1.0


def test_a_2000_proxy_storm_at_the_defaults_must_converge_within_2000_over_rate_plus_2_s() -> None:
    met = report(STORM, 10.0, [side(9.0, 250), side(10.0, 250)], [side(5.5, 1900)])
    assert met["target"] == (
        "[17] a 2,000-proxy storm converges within 2,000 ÷ rate + 2 s (admission defaults)"
    )
    assert met["target_met"] == "met"  # median 9.5 s, limit 2,000 ÷ 250 + 2 = 10 s
    slow = report(STORM, 10.0, [side(12.0, 250), side(11.0, 250)], [side(5.5, 1900)])
    assert slow["target_met"] == "missed by 1.50 s (1.15× the target)"
    stalled = report(STORM, 10.0, [side(9.0, 250, unconverged=2)], [side(5.5, 1900)])
    assert stalled["target_met"] == "missed: 2 proxies never converged (worst run)"
    faster_rate = Options(**{**STORM.__dict__, "rate": 500.0})
    fast = report(faster_rate, 10.0, [side(6.5, 500)], [side(5.5, 1900)])
    assert fast["target_met"] == "missed by 0.50 s (1.08× the target)"  # limit 6 s
    one_second = report(STORM, 1.0, [side(12.0, 250)], [side(5.5, 1900)])
    assert (one_second["target"], one_second["target_met"]) == (NOT_JUDGED, "—")


def test_run_all_runs_it() -> None:
    assert "admission_storm" in {script.name for script in SCRIPTS}

"""The impact benchmark runs small and measures what it says: every proxy predicted to
change, and both the prediction and the real push timed."""

from __future__ import annotations

import asyncio
import json

import pytest

from bench.impact_cost import main
from bench.run_all import SCRIPTS


def test_it_prints_the_prediction_beside_the_push(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["impact_cost.py", "--proxies", "20", "--services", "5", "--rounds", "1"]
    argv += ["--changes", "route"]
    monkeypatch.setattr("sys.argv", argv)
    asyncio.run(main())
    (line,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert line["benchmark"].startswith("impact_cost: impact of a VirtualService edit, RDS (20")
    assert line["proxies_predicted"] == 20
    assert line["impact_seconds"] > 0 and line["push_seconds"] > 0
    assert line["ratio_to_baseline"] > 0 and line["target_met"]
    assert "impact_cost" in {script.name for script in SCRIPTS}

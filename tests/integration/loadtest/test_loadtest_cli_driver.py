"""The scenario driver over stand-in shares (push, churn, failing triggers, Ctrl-C, a share that
fails), the triggers themselves, and a whole `pilothouse loadtest` connect run in this process
against the fake ADS server."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path
from types import MappingProxyType

import pytest

from pilothouse.cli.loadtest import EXIT_OK, Observation, loadtest
from pilothouse.loadtest.histogram import LatencyHistogram
from pilothouse.loadtest.outcome import ShareResult, ShareStatus
from pilothouse.loadtest.scenarios import (
    CHANGES_BEGIN,
    CONNECTED,
    END,
    START,
    LoadRun,
    LoadtestError,
    change_marks,
)
from pilothouse.loadtest.server_process import ServerRecord, ServerSample
from pilothouse.loadtest.spec import FleetSlice, LoadSpec, Scenario, Trigger
from pilothouse.loadtest.triggers import CHANGE_VARIABLE, fire
from pilothouse.loadtest.workers import WorkerError, WorkerShare
from tests.unit.loadtest.fake_ads import FakeAdsServer


class StandInShare:
    """A share whose proxies converge at once and reach every change at once."""

    def __init__(self, proxies: int, *, converges: bool = True) -> None:
        self._proxies = proxies
        self.converges = converges
        self.started_with: float | None = None
        self.armed: list[tuple[int, float]] = []
        self.marks: list[str] = []
        self.closed = False
        self.failure: str | None = None

    @property
    def name(self) -> str:
        return "stand-in"

    @property
    def proxies(self) -> int:
        return self._proxies

    async def prepare(self) -> None:
        pass

    async def start(self, ramp: float) -> None:
        self.started_with = ramp

    def status(self) -> ShareStatus:
        started = self.started_with is not None
        converged = self._proxies if started and self.converges else 0
        return ShareStatus(self._proxies, converged, converged, armed=len(self.armed))

    def problem(self) -> str | None:
        return self.failure

    async def arm(self, index: int, at: float) -> None:
        assert index == len(self.armed)
        self.armed.append((index, at))

    async def mark(self, name: str) -> None:
        self.marks.append(name)

    async def finish(self) -> ShareResult:
        return ShareResult(
            proxies=self._proxies,
            converged=self.status().converged,
            connect=LatencyHistogram(),
            last_converged_at=None,
            changes=(),
            change_times=LatencyHistogram(),
            marks=MappingProxyType({}),
        )

    async def close(self) -> None:
        self.closed = True


def spec(**fields: object) -> LoadSpec:
    return LoadSpec(server="127.0.0.1:1", **fields)  # type: ignore[arg-type]


async def test_push_writes_the_trigger_file_and_announces_each_change(tmp_path: Path) -> None:
    target = tmp_path / "mesh" / "entry.yaml"
    target.parent.mkdir()
    trigger = Trigger(file=str(target), content="address: 10.0.0.{n}\n")
    shares = [StandInShare(3), StandInShare(2)]
    run = LoadRun(
        spec(proxies=5, scenario=Scenario.PUSH, repeat=2, trigger=trigger, ramp=0.25),
        shares,
        asyncio.Event(),
    )
    before = time.monotonic()
    record = await run.run()
    assert [fired.number for fired in record.fired] == [1, 2]
    assert all(fired.ok for fired in record.fired)
    assert target.read_text() == "address: 10.0.0.2\n"
    assert [p.name for p in target.parent.iterdir()] == ["entry.yaml"]  # no temporary left
    for share in shares:
        assert share.started_with == 0.25
        assert [index for index, _ in share.armed] == [0, 1]
        assert [at for _, at in share.armed] == [fired.at for fired in record.fired]
        assert share.marks == [START, CONNECTED, END]
    assert before <= record.marks[START] <= record.marks[CONNECTED] <= record.marks[END]
    assert record.fired[1].at - record.fired[0].at >= 0.5  # the fleet was quiet in between
    assert len(record.results) == 2
    assert not record.interrupted


async def test_churn_makes_changes_at_the_rate_for_the_duration(tmp_path: Path) -> None:
    shares = [StandInShare(1)]
    trigger = Trigger(file=str(tmp_path / "churned"), content="{n}")
    run = LoadRun(
        spec(scenario=Scenario.CHURN, rate=20.0, duration=1.0, trigger=trigger),
        shares,
        asyncio.Event(),
    )
    record = await run.run()
    numbers = [fired.number for fired in record.fired]
    # 1 s at 20 a second: 20 changes, one at a time and never ahead of the rate (change n
    # begins no earlier than its slot, (n - 1) / 20 s after the first); a busy machine (a
    # full parallel test run) starves the loop and skips some, never more. Two changes may
    # be closer than 50 ms apart: a late change does not push back the slots after it.
    assert 5 <= len(numbers) <= 21, numbers
    assert numbers == list(range(1, len(numbers) + 1))
    begin = record.marks[CHANGES_BEGIN]
    early = [begin + (f.number - 1) / 20.0 - f.at for f in record.fired]
    assert max(early) <= 0.001, early
    assert (tmp_path / "churned").read_text() == str(numbers[-1])
    assert len(shares[0].armed) == len(numbers)


async def test_a_failing_trigger_is_recorded_and_not_announced() -> None:
    shares = [StandInShare(1)]
    trigger = Trigger(command="echo broken >&2; exit 3")
    run = LoadRun(spec(scenario=Scenario.PUSH, repeat=2, trigger=trigger), shares, asyncio.Event())
    record = await run.run()
    assert [fired.error for fired in record.fired] == [
        "the trigger command exited with status 3: broken"
    ] * 2
    assert shares[0].armed == []


async def test_connect_waits_at_most_the_timeout_for_stragglers() -> None:
    shares = [StandInShare(2, converges=False)]
    run = LoadRun(spec(proxies=2, timeout=0.3), shares, asyncio.Event())
    began = time.monotonic()
    record = await run.run()
    assert 0.3 <= record.seconds(START, CONNECTED) < 1.5
    assert time.monotonic() - began < 2
    assert record.fired == []


async def test_stop_ends_the_run_early_and_marks_it_interrupted() -> None:
    stop = asyncio.Event()
    shares = [StandInShare(1)]
    run = LoadRun(
        spec(scenario=Scenario.CHURN, rate=1.0, duration=60.0, trigger=Trigger(command="true")),
        shares,
        stop,
    )
    task = asyncio.create_task(run.run())
    await asyncio.sleep(1.0)
    stop.set()
    record = await asyncio.wait_for(task, 3)
    assert record.interrupted
    assert 1 <= len(record.fired) <= 2
    assert shares[0].marks == [START, CONNECTED, END]


async def test_a_failed_share_stops_the_run() -> None:
    broken = StandInShare(1, converges=False)
    broken.failure = "worker 1 exited with status 1"
    run = LoadRun(spec(timeout=5.0), [StandInShare(1), broken], asyncio.Event())
    with pytest.raises(LoadtestError, match="worker 1 exited"):
        await asyncio.wait_for(run.run(), 3)


async def test_trigger_command_gets_the_change_number(tmp_path: Path) -> None:
    out = tmp_path / "n"
    fired = await fire(Trigger(command=f'echo "${CHANGE_VARIABLE}" > {out}'), 7, 5.0)
    assert fired.ok and fired.number == 7
    assert out.read_text() == "7\n"
    assert fired.seconds >= 0


async def test_a_trigger_command_that_hangs_is_stopped() -> None:
    began = time.monotonic()
    fired = await fire(Trigger(command="sleep 30"), 1, 0.3)
    assert fired.error == "the trigger command ran longer than 0.3s"
    assert time.monotonic() - began < 5


async def test_an_unwritable_trigger_file_is_an_error(tmp_path: Path) -> None:
    fired = await fire(Trigger(file=str(tmp_path / "missing" / "x.yaml"), content="x"), 1, 1.0)
    assert fired.error is not None and fired.error.startswith("cannot write ")


async def test_a_worker_that_dies_is_reported_with_its_stderr() -> None:
    command = [sys.executable, "-c", "import sys; sys.stderr.write('no luck\\n'); sys.exit(3)"]
    worker = WorkerShare(spec(proxies=2), FleetSlice(1, 1, 1), command)
    try:
        with pytest.raises(WorkerError, match="worker 1 exited with status 3:\nno luck"):
            await worker.prepare()
        assert worker.problem() is not None
    finally:
        await worker.close()


async def test_connect_run_in_process_against_the_fake_server(
    ads_server: FakeAdsServer, capsys: pytest.CaptureFixture[str]
) -> None:
    made = LoadSpec(server=ads_server.target, proxies=30, namespaces=("a", "b"), delta=True)
    observation = Observation(server_pid=os.getpid(), output="json", quiet=True)
    assert await loadtest(made, observation) == EXIT_OK
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert captured.err == ""
    assert report["ok"] is True
    assert report["transport"] == "delta"
    assert report["connect"]["converged"] == 30
    assert report["connect"]["seconds"]["count"] == 30
    assert 0 < report["connect"]["seconds"]["p99"] <= report["connect"]["seconds"]["max"]
    assert report["connect"]["traffic"]["responses"] >= 30 * 4
    assert report["errors"]["nacks"] == 0
    assert report["serverProcess"]["pid"] == os.getpid()
    assert report["serverProcess"]["rssBytes"]["peak"] > 0
    nodes = {
        entry.message.node.id for entry in ads_server.ads.requests if entry.message.HasField("node")
    }
    assert len(nodes) == 30
    assert ads_server.ads.stream_count == 0  # every stream closed at the end


class CountingProbe:
    """A server probe whose CPU seconds go up by one at every sample (RSS fixed)."""

    def __init__(self) -> None:
        self.samples = 0

    @property
    def source(self) -> str:
        return "counting"

    async def sample(self) -> ServerSample:
        self.samples += 1
        return ServerSample(2**20, float(self.samples))


async def test_push_samples_the_server_around_each_change() -> None:
    probe = CountingProbe()
    server = ServerRecord(probe.source)
    run = LoadRun(
        spec(proxies=2, scenario=Scenario.PUSH, repeat=2, trigger=Trigger(command="true")),
        [StandInShare(2)],
        asyncio.Event(),
        probe=probe,
        server=server,
    )
    await run.run()
    before_1, reached_1 = change_marks(1)
    before_2, reached_2 = change_marks(2)
    order = [START, CONNECTED, before_1, reached_1, before_2, reached_2, END]
    assert list(server.marks) == order
    assert [server.marks[name].cpu_seconds for name in order] == [1, 2, 3, 4, 5, 6, 7]
    assert server.cpu_between(before_2, reached_2) == 1.0

"""The MCP sync benchmark's parts: its mesh, the floor's encoding, log timestamps, phases."""

from __future__ import annotations

import calendar
import logging
import sys
import time
from pathlib import Path
from typing import Any

from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]

from bench.harness.child import Child, CpuClock, line_time
from bench.mcp_sync import SinkRun, cpu_text
from bench.mcp_sync_floor import encode, service_entry, service_entry_text, specs, write_mesh
from bench.mcp_sync_phases import PHASES, PhaseRun, measure, source_store
from pilothouse.api.istio.networking.v1alpha3 import service_entry_pb2
from pilothouse.config.documents import RawObject
from pilothouse.config.load import Loader
from pilothouse.kinds.table import SCHEMAS
from pilothouse.logfmt import LineFormatter


def test_text_and_dict_forms_are_the_same_valid_objects() -> None:
    loader = Loader(SCHEMAS)
    text = loader.load_text("---\n".join(service_entry_text(i) for i in range(30)), "x.yaml")
    assert text.ok, text.errors
    for i, from_text in enumerate(text.configs):
        from_dict, problems, _key = loader.load_object(RawObject(service_entry(i), "x", 0, {}))
        assert from_dict is not None, problems
        assert from_dict.key == from_text.key
        assert from_dict.spec == from_text.spec
        assert dict(from_dict.labels) == dict(from_text.labels)
    endpoints = [a.address for c in text.configs for a in c.spec.endpoints]
    assert len(set(endpoints)) == 60


def test_write_mesh_spreads_every_object_over_the_files(tmp_path: Path) -> None:
    files = write_mesh(tmp_path, 250, files=100)
    assert len(files) == 100
    loader = Loader(SCHEMAS)
    names = [
        c.name for f in files for c in loader.load_strict(f.read_text(encoding="utf-8"), str(f))
    ]
    assert sorted(names) == sorted(f"svc-{i}" for i in range(250))


def test_the_floor_sends_the_same_specs_the_mesh_holds() -> None:
    messages = specs(20)
    response = discovery_pb2.DiscoveryResponse.FromString(encode(messages, "7"))
    assert response.version_info == "7"
    assert len(response.resources) == 20
    loader = Loader(SCHEMAS)
    for i, entry in enumerate(response.resources):
        parsed = service_entry_pb2.ServiceEntry.FromString(entry.value)
        config, _problems, _key = loader.load_object(RawObject(service_entry(i), "x", 0, {}))
        assert config is not None
        assert parsed == config.spec


def test_line_time_reads_the_log_formatters_stamp() -> None:
    record = logging.LogRecord("pilothouse.xds", logging.INFO, "f", 1, "proxy connected", (), None)
    record.created = calendar.timegm((2026, 11, 22, 3, 34, 20, 0, 0, 0)) + 0.207
    record.msecs = 207.0
    line = LineFormatter().format(record)
    assert line.startswith("2026-11-22T03:34:20.207Z info xds proxy connected")
    assert abs(line_time(line) - record.created) < 1e-6


def test_the_phases_run_in_order_and_agree_with_the_store() -> None:
    seen: list[dict[str, Any]] = []
    measure(source_store(40), lambda **values: seen.append(values))
    timed = [item["phase"] for item in seen if "seconds" in item]
    assert timed == list(PHASES)
    assert all(item["seconds"] >= 0 for item in seen if "seconds" in item)
    response = next(item for item in seen if item["phase"] == "response")
    assert response["bytes"] > 40 * 200
    assert seen[-1]["phase"] == "done"


def test_a_cut_off_run_names_the_phase_that_did_not_finish() -> None:
    run = PhaseRun(
        seconds={"encode": 0.5, "assemble": 0.01, "parse": 0.002, "decode": 60.0},
        response_bytes=1,
        gc_seconds=1.0,
        gc_collections=None,
        cut_off="> 240 s (cut off at the 300 s limit)",
        where=[],
        text="",
    )
    assert run.summary() == (
        "encode 500.0, assemble 10.0, parse 2.0, decode 60000.0, "
        "store > 240 s (cut off at the 300 s limit)"
    )
    assert run.per_object_us(("encode", "assemble"), 1000) == 510.0
    assert run.per_object_us(("decode", "store"), 1000) is None
    assert run.gc_summary() == "1000.0 in the phases that finished"


def test_the_cpu_clock_counts_a_busy_span_and_not_an_idle_one(tmp_path: Path) -> None:
    # started and idle, then busy for 0.4 s of CPU when told, then idle again; the files
    # mark the phases, so a slow start on a loaded machine cannot move the busy part out
    # of the measured span
    ready, go, done = (tmp_path / name for name in ("ready", "go", "done"))
    program = (
        "import os, sys, time\n"
        "ready, go, done = sys.argv[1:]\n"
        "open(ready, 'w').close()\n"
        "while not os.path.exists(go): time.sleep(0.02)\n"
        "end = time.process_time() + 0.4\n"
        "while time.process_time() < end: pass\n"
        "open(done, 'w').close()\n"
        "time.sleep(30)\n"
    )
    command = [sys.executable, "-c", program, str(ready), str(go), str(done)]
    child = Child("burner", command, tmp_path / "burner.log")

    def wait_for(marker: Path) -> None:
        deadline = time.monotonic() + 30
        while not marker.exists():
            assert time.monotonic() < deadline, f"the child never wrote {marker.name}"
            time.sleep(0.01)

    try:
        wait_for(ready)
        clock = CpuClock([child])
        began = time.time()
        time.sleep(0.4)
        idle_until = time.time()
        go.touch()
        wait_for(done)
        time.sleep(0.2)
        ended = time.time()
        time.sleep(0.05)
        clock.stop()
        idle = clock.used(child, began + 0.1, idle_until)
        busy = clock.used(child, idle_until, ended)
        assert idle is not None and idle < 0.1
        assert busy is not None and 0.35 <= busy < 0.6
        assert clock.used(child, began, time.time() + 10) is None  # not sampled that far
        assert clock.used(child, None, ended) is None
    finally:
        child.stop()


def test_the_report_shows_the_cpu_of_the_runs_that_have_it() -> None:
    cold = SinkRun(0.0, 1.0, 2.0, None, None, None, 10, sink_cpu=0.8, source_cpu=0.1)
    warm = SinkRun(0.0, 1.0, 2.0, None, None, None, 10)
    assert cpu_text(cold, warm) == "cold 0.8, 0.1"
    assert cpu_text(None, None) is None

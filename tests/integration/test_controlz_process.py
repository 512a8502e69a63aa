"""What ControlZ reads of the process, and what it hides."""

from __future__ import annotations

import gc
import os

import pytest

import pilothouse
from pilothouse.admin.controlz import process


@pytest.mark.parametrize(
    ("name", "secret"),
    [("PILOTHOUSE_WEBHOOK_KEY", True), ("AWS_SECRET_ACCESS_KEY", True), ("GITHUB_TOKEN", True),
     ("DB_PASSWORD", True), ("MYSQLPASSWORD", True), ("http.auth", True), ("api-key", True),
     ("SESSION_ID", True), ("HOME", False), ("PATH", False), ("KEYBOARD", False),
     ("MONKEY_BUSINESS", False), ("AUTHOR", False), ("PILOTHOUSE_XDS_ADDRESS", False)],
)  # fmt: skip
def test_looks_secret(name: str, secret: bool) -> None:
    assert process.looks_secret(name) is secret


def test_environment_hides_secret_values() -> None:
    shown = process.environment({"HOME": "/root", "API_TOKEN": "s3cr3t", "A_KEY": "k"})
    assert shown == {
        "variables": [
            {"name": "API_TOKEN", "value": "<redacted>", "redacted": True},
            {"name": "A_KEY", "value": "<redacted>", "redacted": True},
            {"name": "HOME", "value": "/root", "redacted": False},
        ]
    }


def test_arguments_hide_secret_pairs_and_values_of_secret_flags() -> None:
    argv = ["pilothouse", "serve", "--sink-meta", "authorization=Bearer abc",
            "--webhook-key", "/etc/key.pem", "--token=xyz", "--config", "mesh"]  # fmt: skip
    assert process.redacted_arguments(argv) == [
        "pilothouse", "serve", "--sink-meta", "authorization=<redacted>",
        "--webhook-key", "<redacted>", "--token=<redacted>", "--config", "mesh",
    ]  # fmt: skip


def test_memory_and_process_figures_are_this_processes() -> None:
    memory = process.memory()
    assert memory["residentBytes"] > 10 * 1024 * 1024
    assert memory["peakResidentBytes"] >= memory["residentBytes"]
    assert memory["gc"]["thresholds"] == list(gc.get_threshold())
    assert len(memory["gc"]["generations"]) == 3
    assert memory["tracemalloc"] == {"tracing": False}
    facts = process.process(fallback_start=0.0)
    assert facts["pid"] == os.getpid()
    assert facts["openFiles"] > 2 and facts["threads"] >= 1
    assert 0 < facts["uptimeSeconds"] < 24 * 3600
    assert facts["cpuUserSeconds"] > 0


def test_a_collection_reports_what_it_freed() -> None:
    class Cycle:
        other: object

    first, second = Cycle(), Cycle()
    first.other, second.other = second, first
    del first, second
    assert process.collect_garbage()["collected"] >= 2


def test_version_names_pilothouse_python_and_libraries() -> None:
    facts = process.version()
    assert facts["version"] == pilothouse.__version__
    assert facts["libraries"]["grpcio"] == "1.85.1"

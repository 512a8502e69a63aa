"""Durations and percentages as Istio accepts them."""

from __future__ import annotations

from google.protobuf.duration_pb2 import Duration

from pilothouse.config.validation.report import Report

_NANOS_PER_MS = 1_000_000
_NANOS_PER_S = 1_000_000_000


def duration_nanos(duration: Duration) -> int:
    return duration.seconds * _NANOS_PER_S + duration.nanos


def format_duration(duration: Duration) -> str:
    nanos = duration_nanos(duration)
    return f"{nanos / _NANOS_PER_S:g}s"


def check_duration(duration: Duration, path: str, report: Report) -> None:
    """A set duration must be at least 1 ms and a whole number of milliseconds (Istio's rule)."""
    nanos = duration_nanos(duration)
    if nanos < _NANOS_PER_MS:
        report.error(path, f"duration {format_duration(duration)} must be at least 1ms")
    elif nanos % _NANOS_PER_MS:
        report.error(
            path, f"duration {format_duration(duration)} must be a whole number of milliseconds"
        )


def check_whole_percent(value: int, path: str, report: Report) -> None:
    """An integer percentage in 0..100."""
    if not 0 <= value <= 100:
        report.error(path, f"percentage {value} must be in 0..100")


def check_fractional_percent(value: float, path: str, report: Report) -> None:
    """A ``Percent`` value: 0, or 0.0001..100 (Envoy's finest granularity is one in a million)."""
    if value < 0 or value > 100 or 0 < value < 0.0001:
        report.error(path, f"percentage {value:g} must be 0 or in 0.0001..100")


def check_non_negative(value: int, path: str, report: Report) -> None:
    if value < 0:
        report.error(path, f"value {value} must not be negative")

"""Running a validator on a spec written the way users write YAML, and asserting findings."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from google.protobuf.json_format import ParseDict
from google.protobuf.message import Message

from pilothouse.config.validation import Report

M = TypeVar("M", bound=Message)


def run(
    validator: Callable[[M, Report], None],
    message_type: type[M],
    spec: Mapping[str, Any],
    *,
    namespace: str = "default",
    name: str = "example",
) -> Report:
    """Parse ``spec`` (camelCase keys, proto3 JSON mapping) and validate it."""
    message = ParseDict(dict(spec), message_type())
    report = Report(namespace=namespace, name=name)
    validator(message, report)
    return report


def describe(report: Report) -> str:
    return "\n".join(str(finding) for finding in report.findings) or "(no findings)"


def assert_error(report: Report, path: str, fragment: str) -> None:
    matching = [f for f in report.errors if f.path == path and fragment in f.message]
    assert matching, (
        f"expected an error at {path!r} containing {fragment!r}; got:\n{describe(report)}"
    )


def assert_warning(report: Report, path: str, fragment: str) -> None:
    matching = [f for f in report.warnings if f.path == path and fragment in f.message]
    assert matching, (
        f"expected a warning at {path!r} containing {fragment!r}; got:\n{describe(report)}"
    )


def assert_clean(report: Report) -> None:
    assert not report.findings, f"expected no findings; got:\n{describe(report)}"


def assert_no_errors(report: Report) -> None:
    assert report.ok, f"expected no errors; got:\n{describe(report)}"

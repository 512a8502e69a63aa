"""Counts of webhook outcomes, labelled the way istiod's ``galley_validation_*`` metrics are.

- ``galley_validation_passed``: allowed after validation, by kind;
- ``galley_validation_failed``: by kind and reason (``invalid_config``, ``unknown_type``,
  ``yaml_decode_error``, and ``unsupported_operation`` for operations allowed unseen);
- ``galley_validation_http_error``: refused requests, by HTTP status.

:class:`ValidationStats` is owned by one server and updated from its event loop only;
:meth:`ValidationStats.snapshot` hands out a frozen :class:`ValidationCounts` for
exposition.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from pilothouse.webhook.review import Outcome, ReviewResult

PASSED_METRIC: Final = "galley_validation_passed"
FAILED_METRIC: Final = "galley_validation_failed"
HTTP_ERROR_METRIC: Final = "galley_validation_http_error"


@dataclass(frozen=True, slots=True)
class ValidationCounts:
    """The counters at one moment."""

    passed: Mapping[str, int]
    """kind → count"""
    failed: Mapping[tuple[str, str], int]
    """(kind, reason) → count"""
    http_error: Mapping[int, int]
    """HTTP status → count"""

    @property
    def total_passed(self) -> int:
        return sum(self.passed.values())

    @property
    def total_failed(self) -> int:
        return sum(self.failed.values())

    @property
    def total_http_errors(self) -> int:
        return sum(self.http_error.values())


class ValidationStats:
    """Running counters fed with every :class:`ReviewResult` a server sends."""

    def __init__(self) -> None:
        self._passed: dict[str, int] = {}
        self._failed: dict[tuple[str, str], int] = {}
        self._http_error: dict[int, int] = {}

    def record(self, result: ReviewResult) -> None:
        if result.outcome is Outcome.PASSED:
            self._passed[result.kind] = self._passed.get(result.kind, 0) + 1
        elif result.outcome is Outcome.FAILED:
            label = (result.kind, result.reason)
            self._failed[label] = self._failed.get(label, 0) + 1
        else:
            self._http_error[result.status] = self._http_error.get(result.status, 0) + 1

    def snapshot(self) -> ValidationCounts:
        return ValidationCounts(
            passed=MappingProxyType(dict(self._passed)),
            failed=MappingProxyType(dict(self._failed)),
            http_error=MappingProxyType(dict(self._http_error)),
        )

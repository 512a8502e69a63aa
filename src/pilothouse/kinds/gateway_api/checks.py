"""The Gateway API's shared field rules: names, hostnames, durations, ports and the
references every kind uses, each a check that reports errors at a field path."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final, Protocol

from pilothouse.config.validation.report import Report

SECTION_NAME: Final = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)
"""A listener or rule name (``SectionName``)."""
HOSTNAME: Final = re.compile(
    r"^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)
"""A ``Hostname``: a DNS name, optionally with one leading ``*.`` label."""
DURATION: Final = re.compile(r"^([0-9]{1,5}(h|m|s|ms)){1,4}$")
"""A Gateway API ``Duration`` (GEP-2257): up to four ``<number><unit>`` parts."""
GROUP: Final = re.compile(r"^$|^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
KIND_NAME: Final = re.compile(r"^[a-zA-Z]([-a-zA-Z0-9]*[a-zA-Z0-9])?$")
NAMESPACE: Final = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_UNITS_MS: Final = {"h": 3_600_000, "m": 60_000, "s": 1_000, "ms": 1}
_DURATION_PART: Final = re.compile(r"([0-9]{1,5})(ms|h|m|s)")


def duration_ms(text: str) -> int:
    """Milliseconds of a valid Gateway API duration."""
    return sum(int(n) * _UNITS_MS[unit] for n, unit in _DURATION_PART.findall(text))


def check_pattern(
    value: str, pattern: re.Pattern[str], path: str, what: str, report: Report, limit: int = 253
) -> None:
    if len(value) > limit:
        report.error(path, f"{what} {value!r} is longer than {limit} characters")
    elif not pattern.match(value):
        report.error(path, f"{what} {value!r} is not valid (must match {pattern.pattern})")


def check_required(value: str, path: str, report: Report) -> bool:
    if not value:
        report.error(path, "required")
        return False
    return True


def check_max(items: Sequence[object], limit: int, path: str, report: Report) -> None:
    if len(items) > limit:
        report.error(path, f"must have at most {limit} items (has {len(items)})")


def check_one_of(value: str, allowed: Sequence[str], path: str, report: Report) -> None:
    if value not in allowed:
        report.error(path, f"unsupported value {value!r}: must be one of {', '.join(allowed)}")


def check_port(port: int, path: str, report: Report) -> None:
    if not 1 <= port <= 65535:
        report.error(path, f"port {port} must be between 1 and 65535")


def check_hostname(value: str, path: str, report: Report) -> None:
    check_pattern(value, HOSTNAME, path, "hostname", report)


def check_duration(value: str, path: str, report: Report) -> None:
    if value and not DURATION.match(value):
        report.error(path, f"duration {value!r} is not valid (e.g. 10s, 1m30s, 500ms)")


def check_section_name(value: str, path: str, report: Report) -> None:
    check_pattern(value, SECTION_NAME, path, "name", report)


class ObjectRef(Protocol):
    """A group/kind/name/namespace reference (any of the Gateway API's)."""

    group: str
    kind: str
    name: str
    namespace: str


def check_reference(ref: ObjectRef, path: str, report: Report) -> None:
    """``group``, ``kind``, ``name`` and ``namespace`` of a reference."""
    check_pattern(ref.group, GROUP, f"{path}.group", "group", report)
    if ref.kind:
        check_pattern(ref.kind, KIND_NAME, f"{path}.kind", "kind", report, limit=63)
    if check_required(ref.name, f"{path}.name", report) and len(ref.name) > 253:
        report.error(f"{path}.name", "name is longer than 253 characters")
    if ref.namespace:
        check_pattern(ref.namespace, NAMESPACE, f"{path}.namespace", "namespace", report, 63)


def check_unique(names: Sequence[str], path: str, field: str, report: Report) -> None:
    """Each non-empty value of ``field`` at most once in the list at ``path``."""
    seen: set[str] = set()
    for index, name in enumerate(names):
        if name and name in seen:
            report.error(f"{path}[{index}].{field}", f"{field} {name!r} must be unique")
        seen.add(name)

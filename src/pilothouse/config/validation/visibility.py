"""``exportTo``: which namespaces may see a ServiceEntry, VirtualService or DestinationRule.

Entries are ``.`` (the object's own namespace), ``*`` (every namespace) or a namespace
name; ServiceEntries may also say ``~`` (no namespace at all).
"""

from __future__ import annotations

from collections.abc import Sequence

from pilothouse.config.validation.hosts import is_dns_label
from pilothouse.config.validation.report import Report

PRIVATE = "."
PUBLIC = "*"
NONE = "~"


def check_export_to(
    entries: Sequence[str],
    path: str,
    report: Report,
    *,
    allow_none: bool = False,
    selector_scoped: bool = False,
) -> None:
    """Check an exportTo list; ``selector_scoped`` is a DestinationRule with a workload selector."""
    if not entries:
        return
    seen: dict[str, int] = {}
    for index, entry in enumerate(entries):
        entry_path = f"{path}[{index}]"
        key = report.namespace if entry == PRIVATE else entry
        if key in seen:
            if entry != key or entries[seen[key]] != key:
                report.error(
                    entry_path,
                    f"duplicate exportTo entry: '.' and {report.namespace!r} name the same "
                    "namespace",
                )
            else:
                report.error(entry_path, f"duplicate exportTo entry {entry!r}")
            continue
        if entry == NONE and allow_none:
            seen[key] = index
            continue
        if key != PUBLIC and not is_dns_label(key):
            allowed = "'.', '*', '~'" if allow_none else "'.', '*'"
            report.error(
                entry_path, f"exportTo entry {entry!r} is not {allowed} or a namespace name"
            )
            continue
        seen[key] = index
    if PUBLIC in seen and len(entries) > 1:
        report.error(path, "'*' exports to every namespace and cannot be combined with others")
    if NONE in seen and len(entries) > 1:
        report.error(path, "'~' exports to no namespace and cannot be combined with others")
    if selector_scoped and seen:
        if report.namespace not in seen:
            report.error(
                path,
                "a DestinationRule with a workloadSelector can only be exported to its own "
                "namespace ('.')",
            )
        elif len(seen) > 1:
            report.error(
                path,
                "a DestinationRule with a workloadSelector cannot have several exportTo entries",
            )

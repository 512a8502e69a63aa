"""How long pilothouse's file watcher took to see each churn event, read from its log.

pilothouse logs one ``config update`` line per changed object, stamped to the
millisecond (UTC wall clock). The first such line for a service's churned
WorkloadEntry after an event was written (and before the next event of that
service) is when the server saw the event; the difference from the write's
wall-clock time is the file watcher's share of the event's latency.
"""

from __future__ import annotations

import bisect
import datetime
import re
from collections.abc import Mapping, Sequence

from bench.churn_events import ChurnEvent

CONFIG_UPDATE = re.compile(
    r'^(\S+Z) \w+ serve config update key="WorkloadEntry [^/"]+/svc-(\d+)-0"', re.MULTILINE
)
STAMP_SLACK = 0.001
"""Log stamps are truncated to the millisecond: one may read up to 1 ms before the write."""


def config_updates(log: str, offset: int = 0) -> dict[int, list[float]]:
    """Per service, the wall times of its churned WorkloadEntry's config updates, in order."""
    seen: dict[int, list[float]] = {}
    for found in CONFIG_UPDATE.finditer(log, offset):
        try:
            stamp = datetime.datetime.fromisoformat(found.group(1)).timestamp()
        except ValueError:
            continue
        seen.setdefault(int(found.group(2)), []).append(stamp)
    for stamps in seen.values():
        stamps.sort()
    return seen


def watch_latencies(
    events: Sequence[ChurnEvent], updates: Mapping[int, Sequence[float]]
) -> list[float | None]:
    """Per event, in order: seconds from its write to the server's update (None: not found)."""
    following: dict[int, float] = {}
    """Per service: the wall time of the event after the one being matched."""
    out: list[float | None] = []
    for event in reversed(events):
        stamps = updates.get(event.service, ())
        start = event.wall - STAMP_SLACK
        index = bisect.bisect_left(stamps, start)
        limit = following.get(event.service, float("inf"))
        found = index < len(stamps) and stamps[index] < limit
        out.append(max(0.0, stamps[index] - event.wall) if found else None)
        following[event.service] = start
    out.reverse()
    return out

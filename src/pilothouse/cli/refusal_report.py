"""Refused xDS connections, as ``proxy-status`` shows them: from each replica's
``/debug/refusals``, a table of reasons when no proxy is connected, else a one-line
footer.

A replica that does not serve ``/debug/refusals`` (an older pilothouse, istiod) is
simply left out: the refusals are an aid to finding out why nothing is connected, never
a reason for ``proxy-status`` to fail.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urlsplit

from pilothouse.cli.admin_client import ReplicaAnswer
from pilothouse.cli.columns import age, table, timestamp

PATH: Final = "/debug/refusals"


@dataclass(frozen=True, slots=True)
class ReasonRow:
    """One reason on one replica."""

    replica: str
    reason: str
    count: int
    last_at: float | None
    last_peer: str
    last_node: str
    last_message: str


def reason_rows(answers: Sequence[ReplicaAnswer]) -> list[ReasonRow]:
    """Every replica's refusal reasons, most refusals first."""
    rows: list[ReasonRow] = []
    for answer in answers:
        body = answer.body if answer.ok else None
        reasons = body.get("reasons") if isinstance(body, dict) else None
        if not isinstance(reasons, dict):
            continue
        replica = urlsplit(answer.url).netloc
        for reason, seen in reasons.items():
            if not isinstance(seen, Mapping):
                continue
            rows.append(
                ReasonRow(
                    replica,
                    str(reason),
                    _int(seen.get("count")),
                    timestamp(seen.get("lastTime")),
                    str(seen.get("lastPeer") or "-"),
                    str(seen.get("lastNodeId") or "-"),
                    str(seen.get("lastMessage") or ""),
                )
            )
    rows.sort(key=lambda row: (-row.count, row.reason, row.replica))
    return rows


def reasons_table(rows: Sequence[ReasonRow], now: float) -> str:
    """``REASON COUNT LAST PEER NODE REPLICA MESSAGE``: the latest refusal of each."""
    lines = [
        [
            row.reason,
            str(row.count),
            _ago(row.last_at, now),
            row.last_peer,
            row.last_node,
            row.replica,
            row.last_message,
        ]
        for row in rows
    ]
    return table(["REASON", "COUNT", "LAST", "PEER", "NODE", "REPLICA", "MESSAGE"], lines)


def footer(rows: Sequence[ReasonRow], now: float) -> str:
    """One line: each reason's count over all replicas, and its latest peer and age."""
    totals: dict[str, list[Any]] = {}
    for row in rows:
        total = totals.setdefault(row.reason, [0, None, "-"])
        total[0] += row.count
        if row.last_at is not None and (total[1] is None or row.last_at > total[1]):
            total[1], total[2] = row.last_at, row.last_peer
    parts = [
        f"{reason} {count} (last {_ago(last_at, now)}, {peer})"
        for reason, (count, last_at, peer) in sorted(totals.items(), key=lambda i: -i[1][0])
    ]
    return "refused: " + ", ".join(parts) + "\n"


def _ago(at: float | None, now: float) -> str:
    return f"{age(now - at)} ago" if at is not None else "-"


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


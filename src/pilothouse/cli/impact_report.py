"""A change's impact, asked of running servers and printed: ``analyze --impact`` and
``apply --dry-run --admin``.

The candidate objects are POSTed to ``/debug/impact`` on every replica given
(:mod:`pilothouse.admin.impact`; a ``serve --workers N`` replica merges its workers'
answers itself, :mod:`pilothouse.cli.worker_debug`), and the answers are merged
(:mod:`pilothouse.cli.impact_merge`): each replica knows only the proxies connected to
it. The table has one row per proxy the change would push: the types whose resources
would change and how many resources would be added, changed and removed (all types
together); ``-o json|yaml`` prints the merged answer whole.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final, TextIO

import yaml

from pilothouse.admin.impact import MAX_TIMEOUT
from pilothouse.cli.admin_client import ReplicaAnswer, ask_all
from pilothouse.cli.impact_merge import merged

PATH: Final = "/debug/impact"
COLUMNS: Final = ("PROXY", "TYPES", "ADDED", "CHANGED", "REMOVED")


@dataclass(frozen=True, slots=True)
class Asked:
    """The merged answer and the replicas that could not give theirs."""

    answer: dict[str, Any]
    problems: tuple[str, ...]


async def ask_impact(
    urls: Sequence[str], text: str, *, namespace: str, timeout: float
) -> list[ReplicaAnswer]:
    """POST ``text`` to every replica's ``/debug/impact`` at once (their order kept)."""
    bound = min(timeout, MAX_TIMEOUT)  # the server's own bound on its computation
    query = {"namespace": namespace, "timeout": f"{bound:g}"}
    answers = await ask_all(urls, PATH, timeout=bound + 5.0, data=text.encode(), params=query)
    return [_an_object(answer) for answer in answers]


def _an_object(answer: ReplicaAnswer) -> ReplicaAnswer:
    """``answer``, or a problem when a replica answered 200 with JSON that is no object."""
    if not answer.ok or isinstance(answer.body, dict):
        return answer
    return replace(answer, problem=f"{answer.url}{PATH} did not answer a JSON object")


def gathered(answers: Sequence[ReplicaAnswer]) -> Asked:
    """The replicas' answers merged, and why some are missing."""
    problems = [a.problem for a in answers if not a.ok]
    problems += [
        f"{a.url}: the answer lacks workers {a.missing_workers}"
        for a in answers
        if a.ok and a.missing_workers
    ]
    return Asked(merged((a.url, a.body) for a in answers if a.ok), tuple(problems))


def rows(answer: Mapping[str, Any]) -> list[tuple[str, ...]]:
    """One row per proxy pushed: its name, the types that change, the counts summed."""
    found = []
    for proxy in answer.get("proxies") or ():
        types: Mapping[str, Mapping[str, Any]] = proxy.get("types") or {}
        changing = [
            name
            for name, diff in types.items()
            if diff.get("addedCount") or diff.get("changedCount") or diff.get("removedCount")
        ]
        totals = [
            sum(int(diff.get(count) or 0) for diff in types.values())
            for count in ("addedCount", "changedCount", "removedCount")
        ]
        found.append((str(proxy.get("proxy", "")), ",".join(changing) or "-", *map(str, totals)))
    return found


def render(answer: Mapping[str, Any], output: str, out: TextIO) -> None:
    """Print the merged answer: a table (with a summary line above it), JSON or YAML."""
    if output == "json":
        out.write(json.dumps(answer, indent=2) + "\n")
        return
    if output == "yaml":
        out.write(yaml.safe_dump(dict(answer), sort_keys=False))
        return
    table = rows(answer)
    changing = sum(1 for row in table if row[1] != "-")
    out.write(
        f"{len(table)} of {answer.get('connected', 0)} connected proxies would be pushed,"
        f" {changing} with resources that change\n"
    )
    if not answer.get("complete", True):
        out.write(f"(not complete: {answer.get('skipped', 0)} proxies not reached in time)\n")
    for key in answer.get("unchanged") or ():
        out.write(f"unchanged: {key}\n")
    if not table:
        return
    widths = [max(len(row[i]) for row in [COLUMNS, *table]) for i in range(len(COLUMNS))]
    for row in [COLUMNS, *table]:
        line = "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        out.write(line.rstrip() + "\n")

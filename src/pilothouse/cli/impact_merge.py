"""Several answers of ``/debug/impact`` as one: those of a replica's workers
(:mod:`pilothouse.cli.worker_debug`) or of several replicas
(:mod:`pilothouse.cli.impact_report`). Each knows only the proxies connected to it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def merged(answers: Iterable[tuple[str, Mapping[str, Any]]]) -> dict[str, Any]:
    """Several answers of ``/debug/impact`` (each with who gave it: a replica's URL or a
    worker's index) as one: every proxy, each marked with ``source``; the figures summed;
    complete only if every answer is."""
    out: dict[str, Any] = {
        "changed": [],
        "unchanged": [],
        "connected": 0,
        "pushed": 0,
        "complete": True,
        "skipped": 0,
        "seconds": 0.0,
        "proxies": [],
        "failed": [],
    }
    for source, answer in answers:
        for field in ("changed", "unchanged"):
            out[field] = sorted({*out[field], *(answer.get(field) or ())})
        for field in ("connected", "pushed", "skipped"):
            out[field] += int(answer.get(field) or 0)
        out["complete"] = bool(out["complete"] and answer.get("complete", True))
        out["seconds"] = max(out["seconds"], float(answer.get("seconds") or 0.0))
        out["failed"] += list(answer.get("failed") or ())
        out["proxies"] += [
            {**proxy, "source": proxy.get("source", source)}
            for proxy in answer.get("proxies") or ()
            if isinstance(proxy, dict)
        ]
    out["proxies"].sort(key=lambda proxy: str(proxy.get("proxy", "")))
    return out

"""The push service's plain counters, read by ``/metrics`` when it is scraped.

The push service (:mod:`pilothouse.push.service`) counts what came in and what it
pushed; the discovery server's counters extend these with what its streams report.
istiod's metric names are in the comments.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class PushCounters:
    """What the push service counts."""

    push_triggers: dict[str, int] = field(default_factory=dict)  # pilot_push_triggers{type}
    inbound_updates: dict[str, int] = field(default_factory=dict)  # pilot_inbound_updates{type}
    full_pushes: int = 0
    eds_pushes: int = 0
    """Pushes without a new PushContext that carried endpoint changes."""
    secret_pushes: int = 0
    """Pushes without a new PushContext that carried SDS secret changes."""
    connections_queued: int = 0
    context_builds: int = 0
    push_failures: int = 0
    """Connections closed with INTERNAL because generating or scoping their push raised."""

"""What a simulated proxy has seen: the log of responses, and what its reject hook is shown.

What it holds and counts per type is the client engine's (``ClientWatch`` in
``xds/protocol/client_watch``); ``HeldResource`` and ``TypeCounters`` are
re-exported from there for the load generator's callers.
"""

from __future__ import annotations

from dataclasses import dataclass

from pilothouse.protocol.client_watch import HeldResource, TypeCounters

__all__ = ["HeldResource", "ReceivedResource", "TypeCounters", "XdsEvent"]


@dataclass(frozen=True, slots=True)
class XdsEvent:
    """One response as the proxy saw it."""

    at: float
    type_url: str
    version: str
    """SotW ``version_info`` or delta ``system_version_info``."""
    names: tuple[str, ...]
    removed: tuple[str, ...] = ()
    nonce: str = ""
    accepted: bool = True
    error: str | None = None


@dataclass(frozen=True, slots=True)
class ReceivedResource:
    """What the ``reject`` hook is shown: one resource of a response, still encoded."""

    type_url: str
    name: str
    version: str
    body: bytes

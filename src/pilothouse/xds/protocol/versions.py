"""Deterministic push versions and nonces, and the rule that versions only go forward.

``VersionSequence`` mints SotW ``version_info`` strings in Istio's shape
(``<RFC3339 time>/<counter>``, the time passed in by the caller) and
``NonceSequence`` mints nonces unique on a stream.  Both are frozen values:
``next`` returns the new string and the advanced sequence.

``check_version_advance`` enforces that versions per type never go backwards on a
session.  It compares the counters of versions minted here; versions in any other
format (content hashes, say) are not ordered and pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime


class VersionRegression(ValueError):
    """A caller tried to send an older version than one already sent for the type."""


@dataclass(frozen=True)
class VersionSequence:
    """Push versions ``<time>/<n>`` with ``n`` strictly increasing."""

    counter: int = 0

    def next(self, now: float) -> tuple[str, VersionSequence]:
        counter = self.counter + 1
        stamp = datetime.fromtimestamp(now, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        return f"{stamp}/{counter}", VersionSequence(counter)


@dataclass(frozen=True)
class NonceSequence:
    """Nonces ``<prefix><n>`` with ``n`` strictly increasing: unique on one stream."""

    prefix: str = ""
    counter: int = 0

    def next(self) -> tuple[str, NonceSequence]:
        counter = self.counter + 1
        return f"{self.prefix}{counter}", NonceSequence(self.prefix, counter)


def version_ordinal(version: str) -> int | None:
    """The counter of a version minted by ``VersionSequence``, else None."""
    _, slash, tail = version.rpartition("/")
    if slash and tail.isdigit():
        return int(tail)
    return None


def check_version_advance(type_url: str, previous: str, version: str) -> None:
    """Raise ``VersionRegression`` if ``version`` is older than ``previous``."""
    before = version_ordinal(previous)
    after = version_ordinal(version)
    if before is not None and after is not None and after < before:
        raise VersionRegression(
            f"{type_url}: version {version!r} is older than {previous!r} already sent"
        )

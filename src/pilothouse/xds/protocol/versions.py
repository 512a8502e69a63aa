"""Push versions and nonces, and the rule that versions only go forward on a stream.

A push version looks like istiod's (RFC 3339 time, a slash, a counter) with microseconds::

    2025-06-01T12:34:56.123456Z/42

- The time part is UTC with a fixed width, so versions sort as plain strings in the order
  they were issued.
- Each version's time is strictly later than the previous one's: if the wall clock stands
  still or goes back, :class:`PushVersions` moves on by one microsecond from its last
  version instead. So versions from one issuer strictly increase, whatever the clock does.
- The counter says how many versions this issuer has issued (:func:`version_ordinal`).

A nonce is ``<version>/<stream token>-<n>``: the version it was sent with, a short random
token fixed per stream, and a per-stream counter — unique on its stream, and across
streams with overwhelming probability.

:func:`check_version_advance` enforces that versions per type never go backwards on a
session. It compares the counters of versions minted here; versions in any other format
(content hashes, say) are not ordered and pass.

The wall clock is handed in (``time.time`` unless told otherwise), so tests and the
protocol state machines run on a clock of their own.
"""

from __future__ import annotations

import functools
import secrets
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"


class VersionRegression(ValueError):
    """A caller tried to send an older version than one already sent for the type."""


def format_version(micros: int, counter: int) -> str:
    """The version string for a UTC time in microseconds since the epoch and a counter."""
    stamp = (_EPOCH + timedelta(microseconds=micros)).strftime(_FORMAT)
    return f"{stamp}/{counter}"


def version_time(version: str) -> datetime:
    """The time part of a push version, as an aware UTC datetime."""
    stamp, _, _ = version.partition("/")
    return datetime.strptime(stamp, _FORMAT).replace(tzinfo=UTC)


@functools.lru_cache(maxsize=256)
def version_ordinal(version: str) -> int | None:
    """The counter of a version minted by :class:`PushVersions`, else None (remembered
    for the last few hundred versions: every response sent checks its version against
    the one before, and a fan-out sends one version to every proxy)."""
    _, slash, tail = version.rpartition("/")
    if slash and tail.isdigit():
        return int(tail)
    return None


def check_version_advance(type_url: str, previous: str, version: str) -> None:
    """Raise :class:`VersionRegression` if ``version`` is older than ``previous``."""
    before = version_ordinal(previous)
    after = version_ordinal(version)
    if before is not None and after is not None and after < before:
        raise VersionRegression(
            f"{type_url}: version {version!r} is older than {previous!r} already sent"
        )


class PushVersions:
    """Issues push versions that only increase (see the module docstring for the format)."""

    def __init__(self, wall_clock: Callable[[], float] = time.time) -> None:
        self._wall_clock = wall_clock
        self._last_micros: int | None = None
        self._count = 0
        self._last: str | None = None

    @property
    def last(self) -> str | None:
        """The most recent version issued, or None before the first."""
        return self._last

    def next(self) -> str:
        """A new version, greater (as a string) than every version issued before it."""
        micros = round(self._wall_clock() * 1_000_000)
        if self._last_micros is not None and micros <= self._last_micros:
            micros = self._last_micros + 1
        self._last_micros = micros
        self._count += 1
        self._last = format_version(micros, self._count)
        return self._last


class NonceSource:
    """Nonces for one stream, each prefixed with the push version it goes out with."""

    def __init__(self, token: str | None = None) -> None:
        self._token = nonce_token(token)
        self._count = 0

    @property
    def token(self) -> str:
        return self._token

    def next(self, version: str) -> str:
        """A nonce unique on this stream, carrying ``version``."""
        self._count += 1
        return f"{version}/{self._token}-{self._count}"


def nonce_token(token: str | None) -> str:
    """``token``, or a random one when None, checked for use in a nonce
    (``<version>/<token>-<count>``): non-empty and without ``/``."""
    chosen = secrets.token_hex(4) if token is None else token
    if not chosen or "/" in chosen:
        raise ValueError("a nonce token must be non-empty and contain no '/'")
    return chosen


def nonce_version(nonce: str) -> str:
    """The push version a nonce from :class:`NonceSource` was derived from."""
    version, sep, _ = nonce.rpartition("/")
    if not sep:
        raise ValueError(f"not a pilothouse nonce: {nonce!r}")
    return version

"""The warning a proxy's NACK leaves in the server log, once per rejected response.

A request carrying ``error_detail`` is the proxy saying it rejected a response and
kept its last good config. :class:`NackLog` (one per connection) writes one warning
for it with the proxy's node id, the type, the nonce, the error Envoy sent and, when
EnvoyFilters patch that type for the proxy, their ``ns/name`` (the patch is the first
suspect). Envoy repeats the rejected nonce with the error on its later requests for
the type (a subscription change, a reconnecting watch): only the first is logged, as
each type's nonces only move forward. A proxy NACKing every push in a loop is limited
by a token bucket: ``burst`` warnings at once, then ``rate`` a second; the NACKs
dropped meanwhile are counted in the next warning that is written.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from pilothouse.protocol.messages import NackError
from pilothouse.protocol.type_urls import short_name
from pilothouse.xds.server.token_bucket import TokenBucket

log = logging.getLogger("pilothouse.xds.nack")

NACK_LOG_BURST = 5
"""Warnings one connection may write at once."""
NACK_LOG_RATE = 1.0 / 60.0
"""Warnings a second one connection may write once its burst is spent."""


class NackLog:
    """The NACK warnings of one connection (see the module docstring)."""

    __slots__ = ("_bucket", "_burst", "_logged", "_node_id", "_rate", "_unlogged")

    def __init__(
        self, node_id: str, *, rate: float = NACK_LOG_RATE, burst: int = NACK_LOG_BURST
    ) -> None:
        self._node_id = node_id
        self._rate = rate
        self._burst = burst
        self._bucket: TokenBucket | None = None
        """Made at the first NACK (with that NACK's time), so a stream never NACKing
        carries none."""
        self._logged: dict[str, str] = {}
        """Per type: the nonce of the last NACK seen, logged or not."""
        self._unlogged = 0
        """NACKs seen and not logged since the last warning (over the rate)."""

    def reidentify(self, node_id: str) -> None:
        self._node_id = node_id

    def nacked(
        self,
        type_url: str,
        nonce: str,
        error: NackError,
        now: float,
        envoy_filters: Callable[[], list[str]],
    ) -> bool:
        """The proxy NACKed response ``nonce`` of ``type_url`` at ``now``; warn unless
        that nonce was seen already or the rate is spent. ``envoy_filters`` names the
        EnvoyFilters patching the type for this proxy (asked only when warning).
        Returns whether a warning was written."""
        if self._logged.get(type_url) == nonce:
            return False
        self._logged[type_url] = nonce
        if self._bucket is None:
            self._bucket = TokenBucket(self._rate, self._burst, now)
        if not self._bucket.take(now):
            self._unlogged += 1
            return False
        named = envoy_filters()
        patched = f"; patched by EnvoyFilter {', '.join(named)}" if named else ""
        dropped = (
            f" ({self._unlogged} earlier NACKs from this proxy not logged)"
            if self._unlogged
            else ""
        )
        self._unlogged = 0
        log.warning(
            "proxy %s rejected %s (nonce %s): code %d: %s%s%s",
            self._node_id,
            short_name(type_url),
            nonce or "(none)",
            error.code,
            error.message,
            patched,
            dropped,
            extra={"node_id": self._node_id, "type_url": type_url, "envoy_filters": named},
        )
        return True

"""JSON Web Key Sets fetched from RequestAuthentication ``jwksUri``s, for inlining.

pilothouse fetches each key set itself and the listeners carry it inline
(``local_jwks``), so proxies need no route to the issuer. :class:`JwksResolver` is the
lookup the PushContext reads (``resolver(uri)``: the last good key set, or None), and a
component with ``run()`` / ``close()``:

- until a URI's first fetch succeeds, the lookup answers :attr:`placeholder`: the public
  half of a key made at start whose private half is thrown away, so that tokens are
  refused rather than let through unchecked (Envoy refuses an empty key set);
- a URI is fetched as soon as it is first looked up, then every ``refresh`` seconds
  (istiod's default: 20 minutes); after a failure it is tried again with backoff, and
  the last good key set stays in use meanwhile (the failure is logged);
- a key set that changed calls ``on_change(uri)``: the server then pushes the proxies
  whose RequestAuthentications name the URI;
- what is kept is a key set, never whatever the URL answered: the body must be JSON with
  a ``keys`` list (at most :data:`MAX_BYTES`, no redirects followed), and only the
  public members of each key are kept (private RSA/EC members and symmetric ``k`` are
  dropped), so neither an internal page reached through a crafted ``jwksUri``
  (CVE-2026-41413) nor a private key (CVE-2026-31837) ever reaches a proxy.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import random
import time
from collections.abc import Callable
from typing import Any, Final

import aiohttp
from cryptography.hazmat.primitives.asymmetric import ec

from pilothouse.backoff import Backoff

log = logging.getLogger("pilothouse.jwks")

MAX_BYTES: Final = 1 << 20
REFRESH_SECONDS: Final = 20 * 60.0
TIMEOUT_SECONDS: Final = 5.0
PUBLIC_MEMBERS: Final = frozenset(
    {"kty", "kid", "use", "alg", "key_ops", "n", "e", "crv", "x", "y", "x5c", "x5t", "x5u"}
)
PUBLIC_MEMBERS_BY_TYPE: Final = {"RSA": {"n", "e"}, "EC": {"crv", "x", "y"}, "OKP": {"crv", "x"}}


class JwksError(ValueError):
    """What a jwksUri answered is not a usable key set."""


def public_key_set(body: bytes) -> str:
    """The key set in ``body`` with public members only, as compact sorted JSON."""
    try:
        document = json.loads(body)
    except ValueError as error:
        raise JwksError(f"not JSON: {error}") from None
    keys = document.get("keys") if isinstance(document, dict) else None
    if not isinstance(keys, list):
        raise JwksError('not a key set: no "keys" list')
    public: list[dict[str, Any]] = []
    for key in keys:
        if not isinstance(key, dict):
            continue
        needed = PUBLIC_MEMBERS_BY_TYPE.get(str(key.get("kty")))
        if needed is None or not needed <= key.keys():
            continue  # symmetric ("oct") or unknown keys are never relayed
        public.append({k: v for k, v in key.items() if k in PUBLIC_MEMBERS})
    if not public:
        raise JwksError("no usable public key")
    return json.dumps({"keys": public}, sort_keys=True, separators=(",", ":"))


def _placeholder_key_set() -> str:
    key = ec.generate_private_key(ec.SECP256R1()).public_key().public_numbers()
    public = {
        "kty": "EC",
        "crv": "P-256",
        "kid": "pilothouse-unfetched",
        "x": _b64(key.x.to_bytes(32, "big")),
        "y": _b64(key.y.to_bytes(32, "big")),
    }
    return json.dumps({"keys": [public]}, sort_keys=True, separators=(",", ":"))


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class JwksResolver:
    """The key sets of the jwksUris looked up so far, kept fresh in the background."""

    def __init__(
        self,
        on_change: Callable[[str], None],
        *,
        refresh: float = REFRESH_SECONDS,
        timeout: float = TIMEOUT_SECONDS,
        backoff: Backoff | None = None,
        rng: random.Random | None = None,
        fetch: bool = True,
    ) -> None:
        """``fetch`` False: nothing is ever fetched (no outbound request at all); every
        URI answers the placeholder, so its tokens are refused, and says so once."""
        self._on_change = on_change
        self._fetch_enabled = fetch
        self._refresh = refresh
        self._timeout = timeout
        self._backoff = backoff or Backoff(1.0, 60.0)
        self._rng = rng or random.Random()
        self._held: dict[str, str] = {}
        self._due: dict[str, float] = {}
        self._failures: dict[str, int] = {}
        self._wake = asyncio.Event()
        self._closed = False
        self.placeholder = _placeholder_key_set()
        """A key set that verifies no token: its private key no longer exists."""

    def __call__(self, uri: str) -> str:
        """The last good key set of ``uri`` (the placeholder before the first); asks for
        it if new."""
        if uri not in self._due:
            if not self._fetch_enabled:
                self._due[uri] = float("inf")
                log.warning(
                    "JWKS fetching is off (PILOTHOUSE_JWKS_FETCH=false): tokens checked "
                    "against %s are refused; give the keys inline with jwks",
                    uri,
                    extra={"jwks_uri": uri},
                )
                return self.placeholder
            self._due[uri] = 0.0
            self._wake.set()
        return self._held.get(uri, self.placeholder)

    def fetched(self, uri: str) -> str | None:
        """The last good key set of ``uri``, None before the first (asks for nothing)."""
        return self._held.get(uri)

    @property
    def uris(self) -> frozenset[str]:
        return frozenset(self._due)

    async def run(self) -> None:
        timeout = aiohttp.ClientTimeout(total=self._timeout)
        async with aiohttp.ClientSession(timeout=timeout) as session:
            while not self._closed:
                now = time.monotonic()
                due = [uri for uri, at in self._due.items() if at <= now]
                if due:
                    await asyncio.gather(*(self._fetch(session, uri) for uri in due))
                    continue
                self._wake.clear()
                wait = min(
                    min(self._due.values(), default=now + self._refresh), now + self._refresh
                ) - now
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), max(wait, 0.01))

    def close(self) -> None:
        self._closed = True
        self._wake.set()

    async def _fetch(self, session: aiohttp.ClientSession, uri: str) -> None:
        try:
            async with session.get(uri, allow_redirects=False) as response:
                if response.status != 200:
                    raise JwksError(f"HTTP status {response.status}")
                body = await response.content.read(MAX_BYTES + 1)
                if len(body) > MAX_BYTES:
                    raise JwksError(f"larger than {MAX_BYTES} bytes")
            keys = public_key_set(body)
        except Exception as problem:  # one URI's fault never reaches the server's tasks
            if not isinstance(problem, (aiohttp.ClientError, TimeoutError, JwksError)):
                log.exception("fetching JWKS from %s failed", uri, extra={"jwks_uri": uri})
            failures = self._failures[uri] = self._failures.get(uri, 0) + 1
            delay = self._backoff.delay(failures, self._rng)
            self._due[uri] = time.monotonic() + delay
            kept = "keeping the last good key set" if uri in self._held else "no key set yet"
            log.warning(
                "cannot fetch JWKS from %s: %s (%s; next try in %.0f s)",
                uri,
                problem or type(problem).__name__,
                kept,
                delay,
                extra={"jwks_uri": uri},
            )
            return
        self._failures.pop(uri, None)
        self._due[uri] = time.monotonic() + self._refresh
        if self._held.get(uri) != keys:
            self._held[uri] = keys
            log.info("JWKS fetched from %s", uri, extra={"jwks_uri": uri})
            self._on_change(uri)

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
- a URI leads only where :class:`~pilothouse.security.jwks_addresses.JwksAddressPolicy`
  allows (no loopback, private, link-local... address, nor this host's own, unless
  opted in with ``PILOTHOUSE_JWKS_ALLOWED_HOSTS``), checked on the addresses the host
  resolves to and on every redirect (:mod:`pilothouse.security.jwks_fetch`); a refused
  URI is treated as one that cannot be fetched, and logged once per URI and reason,
  naming the RequestAuthentications that use it;
- what is kept is a key set, never whatever the URL answered: the body must be JSON with
  a ``keys`` list (at most :data:`MAX_BYTES`), and every key is checked as a key
  (:mod:`pilothouse.config.json_web_key`): a bad one is dropped and logged once, the
  good ones of the same set are kept, and only their public members are relayed. So
  neither an internal page reached through a crafted ``jwksUri`` (CVE-2026-41413), nor
  a private key (CVE-2026-31837), nor a key Envoy cannot read (which would make it
  reject the listener) ever reaches a proxy.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import random
import time
from collections.abc import Callable, Sequence
from typing import Final

import aiohttp
from cryptography.hazmat.primitives.asymmetric import ec

from pilothouse.backoff import Backoff
from pilothouse.config.json_web_key import BadKey, CheckedKeySet, relayable_key_set
from pilothouse.security.jwks_addresses import JwksAddressPolicy, UriRefused
from pilothouse.security.jwks_fetch import FetchFailed, fetch_jwks

log = logging.getLogger("pilothouse.jwks")

MAX_BYTES: Final = 1 << 20
REFRESH_SECONDS: Final = 20 * 60.0
TIMEOUT_SECONDS: Final = 5.0


class JwksError(ValueError):
    """What a jwksUri answered is not a usable key set."""


def checked_key_set(body: bytes) -> CheckedKeySet:
    """The keys of ``body`` that may be relayed, and those dropped; JwksError when none
    may."""
    try:
        document = json.loads(body)
    except ValueError as error:
        raise JwksError(f"not JSON: {error}") from None
    try:
        checked = relayable_key_set(document)
    except BadKey as bad:
        raise JwksError(str(bad)) from None
    if not checked.kept:
        reasons = "; ".join(str(d) for d in checked.dropped[:3]) or "the set is empty"
        raise JwksError(f"no usable public key ({reasons})")
    return checked


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
        policy: JwksAddressPolicy | None = None,
        named_by: Callable[[str], Sequence[str]] | None = None,
    ) -> None:
        """``fetch`` False: nothing is ever fetched (no outbound request at all); every
        URI answers the placeholder, so its tokens are refused, and says so once.
        ``policy`` says where a URI may lead (default: no loopback, private... address,
        nothing opted in); ``named_by(uri)`` names the RequestAuthentications that use a
        URI, for the log."""
        self._on_change = on_change
        self._fetch_enabled = fetch
        self._refresh = refresh
        self._timeout = timeout
        self._backoff = backoff or Backoff(1.0, 60.0)
        self._rng = rng or random.Random()
        self._policy = policy or JwksAddressPolicy()
        self._named_by = named_by or _nobody
        self._held: dict[str, str] = {}
        self._due: dict[str, float] = {}
        self._failures: dict[str, int] = {}
        self._told: set[tuple[str, str]] = set()
        """(uri, what) already logged as a refusal or a dropped key."""
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
        while not self._closed:
            now = time.monotonic()
            due = [uri for uri, at in self._due.items() if at <= now]
            if due:
                await asyncio.gather(*(self._fetch(uri) for uri in due))
                continue
            self._wake.clear()
            wait = (
                min(min(self._due.values(), default=now + self._refresh), now + self._refresh) - now
            )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), max(wait, 0.01))

    def close(self) -> None:
        self._closed = True
        self._wake.set()

    async def _fetch(self, uri: str) -> None:
        try:
            body = await fetch_jwks(uri, self._policy, timeout=self._timeout, max_bytes=MAX_BYTES)
            checked = checked_key_set(body)
        except Exception as problem:  # one URI's fault never reaches the server's tasks
            self._failed(uri, problem)
            return
        self._failures.pop(uri, None)
        self._due[uri] = time.monotonic() + self._refresh
        keys = checked.text
        if self._held.get(uri) != keys:
            self._held[uri] = keys
            users = self._users(uri)
            for dropped in checked.dropped:
                self._tell_once(
                    uri,
                    f"key {dropped} / {users}",
                    "JWKS from %s: %s dropped: %s (used by %s; the other keys are kept)",
                    uri,
                    f"keys[{dropped.index}] kid {dropped.kid!r}",
                    dropped.reason,
                    users,
                )
            log.info("JWKS fetched from %s", uri, extra={"jwks_uri": uri})
            self._on_change(uri)

    def _failed(self, uri: str, problem: Exception) -> None:
        expected = (aiohttp.ClientError, TimeoutError, JwksError, FetchFailed, UriRefused)
        if not isinstance(problem, expected):
            log.exception("fetching JWKS from %s failed", uri, extra={"jwks_uri": uri})
        failures = self._failures[uri] = self._failures.get(uri, 0) + 1
        delay = self._backoff.delay(failures, self._rng)
        self._due[uri] = time.monotonic() + delay
        kept = "keeping the last good key set" if uri in self._held else "no key set yet"
        if isinstance(problem, UriRefused):
            users = self._users(uri)
            self._tell_once(
                uri,
                f"refused {problem} / {users}",
                "JWKS from %s is not fetched: %s (used by %s; %s, tokens refused until then)",
                uri,
                problem,
                users,
                kept,
            )
            return
        log.warning(
            "cannot fetch JWKS from %s: %s (%s; next try in %.0f s)",
            uri,
            problem or type(problem).__name__,
            kept,
            delay,
            extra={"jwks_uri": uri},
        )

    def _tell_once(self, uri: str, what: str, message: str, *args: object) -> None:
        """A warning the first time ``what`` happens to ``uri`` (``what`` names the rules
        using it, so a new rule is told too); debug afterwards."""
        first = (uri, what) not in self._told
        self._told.add((uri, what))
        log.log(logging.WARNING if first else logging.DEBUG, message, *args,
                extra={"jwks_uri": uri})  # fmt: skip

    def _users(self, uri: str) -> str:
        try:
            names = list(self._named_by(uri))
        except Exception:  # naming is for the log only; it never stops a fetch
            log.exception("naming the users of %s failed", uri, extra={"jwks_uri": uri})
            names = []
        return ", ".join(names) if names else "no RequestAuthentication now"


def _nobody(_uri: str) -> Sequence[str]:
    return ()

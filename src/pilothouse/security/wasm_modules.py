"""The proxy-wasm modules WasmPlugins name, fetched once, checked, and kept by digest.

:class:`WasmModules` is the lookup the PushContext reads (``modules(url, sha256)``: the
module once fetched and checked, None until then) and a component with ``run()`` /
``close()``:

- ``file://`` URLs are read from pilothouse's own filesystem; ``http://`` and
  ``https://`` URLs are fetched where the JWKS fetcher may go and no further
  (:class:`~pilothouse.security.jwks_addresses.JwksAddressPolicy`, checked on the
  resolved addresses and on every redirect: no loopback, private or link-local address
  unless opted in with ``PILOTHOUSE_WASM_ALLOWED_HOSTS``). ``oci://`` is never fetched
  (validation refuses it);
- a module is fetched once per (url, sha256) and kept by its digest: a second URL whose
  ``sha256`` names a module already held is not fetched at all;
- what is kept is a Wasm binary, never whatever the URL answered: it must start with
  the Wasm magic ``\\0asm``, be at most :data:`MAX_BYTES`, and hash to the ``sha256``
  the plugin gives (when it gives one). A module that fails any of these is not kept:
  the failure is logged (a warning the first time for each URL and reason), counted in
  :attr:`fetches` by result (``pilothouse_wasm_module_fetches_total``), and tried again
  with backoff; meanwhile the plugin keeps the last good module it had (the push
  context's rule), or is not served;
- a module that arrives calls ``on_change(url)``: the server then pushes the proxies of
  the WasmPlugins naming the URL;
- the modules kept are bounded by a byte budget (``PILOTHOUSE_WASM_CACHE_BYTES``): when
  one arrives past it, modules are dropped least recently used first, among those no
  served WasmPlugin names (``referenced()``: the digests the current push context
  serves) and not just arrived (a module is safe until its first lookup, at most
  :data:`ARRIVAL_GRACE` seconds, so that it reaches the next push context). A dropped
  module is fetched again when a plugin names it again. Modules still served are never
  dropped: past the budget with only those, a warning says so (once, until the modules
  fit again) and :attr:`over_budget` is set.

:meth:`WasmModules.state` is all of that at one moment (modules and bytes kept, the
budget, drops, whether over it, fetches by result), what ``/metrics`` exposes.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import random
import time
from collections import OrderedDict
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final
from urllib.parse import unquote, urlsplit

import aiohttp

from pilothouse.backoff import Backoff
from pilothouse.config.validation.wasm_plugin import module_scheme
from pilothouse.security.jwks_addresses import JwksAddressPolicy, UriRefused
from pilothouse.security.jwks_fetch import FetchFailed, fetch_jwks

log = logging.getLogger("pilothouse.wasm")

MAX_BYTES: Final = 16 << 20
"""The largest module kept (it travels inline in every ECDS response naming it)."""
TIMEOUT_SECONDS: Final = 30.0
"""istiod's ``http_uri`` timeout for a remote module."""
WASM_MAGIC: Final = b"\0asm"
CACHE_BYTES: Final = 256 * 1024 * 1024
"""The default byte budget of the modules kept (``XdsSettings.wasm_cache_bytes``)."""
ARRIVAL_GRACE: Final = 60.0
"""Seconds a module that arrived is never dropped while no lookup has returned it yet."""

OK: Final = "ok"
CHECKSUM_MISMATCH: Final = "checksum_mismatch"
NOT_WASM: Final = "not_wasm"
FETCH_FAILURE: Final = "fetch_failure"
REFUSED: Final = "refused"
RESULTS: Final = (OK, CHECKSUM_MISMATCH, NOT_WASM, FETCH_FAILURE, REFUSED)
"""The ``result`` label values of ``pilothouse_wasm_module_fetches_total``."""


@dataclass(frozen=True, slots=True)
class WasmModule:
    """A fetched and checked module: compared by its SHA-256 digest alone."""

    digest: str
    body: bytes = field(compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class WasmCacheState:
    """The modules kept and the fetches so far, at one moment (for ``/metrics``)."""

    entries: int
    """Modules kept."""
    bytes_held: int
    budget: int
    evictions: int
    """Modules dropped to keep within the budget, since start."""
    over_budget: bool
    """Past the budget with only modules still served (or just arrived)."""
    fetches: dict[str, int]
    """Fetches by result (:data:`RESULTS`), since start."""


class ModuleRefused(ValueError):
    """What a URL answered is not the module asked for; ``result`` says why."""

    def __init__(self, result: str, message: str) -> None:
        super().__init__(message)
        self.result = result


def checked_module(body: bytes, sha256: str) -> WasmModule:
    """``body`` as a module, or ModuleRefused: not Wasm, too large, or not ``sha256``."""
    if len(body) > MAX_BYTES:
        raise ModuleRefused(NOT_WASM, f"larger than {MAX_BYTES} bytes")
    if not body.startswith(WASM_MAGIC):
        raise ModuleRefused(NOT_WASM, "not a Wasm binary (no \\0asm magic)")
    digest = hashlib.sha256(body).hexdigest()
    if sha256 and digest != sha256:
        raise ModuleRefused(
            CHECKSUM_MISMATCH, f"module has sha256 {digest}, the plugin wants {sha256}"
        )
    return WasmModule(digest, body)


class WasmModules:
    """The modules asked for so far, fetched in the background."""

    def __init__(
        self,
        on_change: Callable[[str], None],
        *,
        timeout: float = TIMEOUT_SECONDS,
        backoff: Backoff | None = None,
        rng: random.Random | None = None,
        policy: JwksAddressPolicy | None = None,
        budget: int = CACHE_BYTES,
        referenced: Callable[[], Collection[str]] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._on_change = on_change
        self.budget = budget
        """Bytes of modules kept, at most, but for modules served (see the module)."""
        self._referenced = referenced or frozenset
        self._clock = clock
        self._timeout = timeout
        self._backoff = backoff or Backoff(1.0, 60.0)
        self._rng = rng or random.Random()
        self._policy = policy or JwksAddressPolicy()
        self._by_digest: OrderedDict[str, WasmModule] = OrderedDict()
        """The modules kept, least recently used first."""
        self._arrived: dict[str, float] = {}
        """Digest → when it arrived, until a lookup first returns it."""
        self.bytes_held = 0
        """The bytes of the modules kept."""
        self.evictions = 0
        """Modules dropped to keep within the budget."""
        self.over_budget = False
        """Past the budget with only modules still served (or just arrived)."""
        self._held: dict[tuple[str, str], str] = {}
        """(url, sha256) → the digest of the module fetched for it."""
        self._due: dict[tuple[str, str], float] = {}
        self._failures: dict[tuple[str, str], int] = {}
        self._told: set[tuple[str, str]] = set()
        self.fetches: dict[str, int] = dict.fromkeys(RESULTS, 0)
        """Fetches by result, for ``pilothouse_wasm_module_fetches_total``."""
        self.problems: dict[tuple[str, str], str] = {}
        """(url, sha256) → why its last fetch failed (cleared by a good one)."""
        self._wake = asyncio.Event()
        self._closed = False

    def __call__(self, url: str, sha256: str) -> WasmModule | None:
        """The module of ``url`` with ``sha256`` (empty: any), None while there is none;
        asks for it if new."""
        wanted = (url, sha256)
        digest = self._held.get(wanted)
        if digest is None and sha256 in self._by_digest:
            digest = self._held[wanted] = sha256
        if digest is not None:
            self._by_digest.move_to_end(digest)
            self._arrived.pop(digest, None)
            return self._by_digest[digest]
        if wanted not in self._due:
            self._due[wanted] = 0.0
            self._wake.set()
        return None

    async def run(self) -> None:
        while not self._closed:
            now = time.monotonic()
            due = [w for w, at in self._due.items() if at <= now and w not in self._held]
            if due:
                await asyncio.gather(*(self._fetch(url, sha256) for url, sha256 in due))
                continue
            self._wake.clear()
            waiting = [at for w, at in self._due.items() if w not in self._held]
            wait = min(waiting, default=now + 3600.0) - now
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), max(wait, 0.01))

    def close(self) -> None:
        self._closed = True
        self._wake.set()

    def state(self) -> WasmCacheState:
        """The modules kept, the budget and the fetches, now."""
        return WasmCacheState(
            entries=len(self._by_digest),
            bytes_held=self.bytes_held,
            budget=self.budget,
            evictions=self.evictions,
            over_budget=self.over_budget,
            fetches=dict(self.fetches),
        )

    async def _fetch(self, url: str, sha256: str) -> None:
        try:
            body = await self._read(url)
            module = checked_module(body, sha256)
        except Exception as problem:  # one URL's fault never reaches the server's tasks
            self._failed(url, sha256, problem)
            return
        self.fetches[OK] += 1
        self._failures.pop((url, sha256), None)
        self.problems.pop((url, sha256), None)
        self._held[(url, sha256)] = module.digest
        if module.digest not in self._by_digest:
            self._by_digest[module.digest] = module
            self.bytes_held += len(module.body)
            self._arrived[module.digest] = self._clock()
        self._by_digest.move_to_end(module.digest)
        log.info("Wasm module fetched from %s (sha256 %s)", url, module.digest,
                 extra={"wasm_url": url})  # fmt: skip
        self._keep_within_budget()
        self._on_change(url)

    def _keep_within_budget(self) -> None:
        """Drop the least recently used modules nothing serves until the rest fit."""
        if self.bytes_held > self.budget:
            now = self._clock()
            safe = set(self._referenced())
            safe.update(d for d, at in self._arrived.items() if now - at < ARRIVAL_GRACE)
            for digest in [d for d in self._by_digest if d not in safe]:
                if self.bytes_held <= self.budget:
                    break
                self._drop(digest)
        fits = self.bytes_held <= self.budget
        if not fits and not self.over_budget:
            log.warning(
                "Wasm modules hold %d bytes, over the budget of %d "
                "(PILOTHOUSE_WASM_CACHE_BYTES), all served: kept",
                self.bytes_held,
                self.budget,
                extra={"bytes": self.bytes_held},
            )
        self.over_budget = not fits

    def _drop(self, digest: str) -> None:
        module = self._by_digest.pop(digest)
        self._arrived.pop(digest, None)
        self.bytes_held -= len(module.body)
        self.evictions += 1
        for wanted in [w for w, held in self._held.items() if held == digest]:
            del self._held[wanted]
            self._due.pop(wanted, None)  # fetched again only when named again
        log.info(
            "Wasm module %s dropped (no served WasmPlugin names it; %d bytes kept)",
            digest,
            self.bytes_held,
            extra={"digest": digest},
        )

    async def _read(self, url: str) -> bytes:
        scheme = module_scheme(url)
        if scheme == "file":
            path = Path(unquote(urlsplit(url).path))
            return await asyncio.to_thread(_read_file, path)
        if scheme in ("http", "https"):
            return await fetch_jwks(url, self._policy, timeout=self._timeout, max_bytes=MAX_BYTES)
        raise UriRefused(f"scheme {scheme} is not fetched (pilothouse has no registry client)")

    def _failed(self, url: str, sha256: str, problem: Exception) -> None:
        wanted = (url, sha256)
        if isinstance(problem, ModuleRefused):
            result = problem.result
        elif isinstance(problem, UriRefused):
            result = REFUSED
        else:
            result = FETCH_FAILURE
            expected = (aiohttp.ClientError, TimeoutError, FetchFailed, OSError)
            if not isinstance(problem, expected):
                log.exception("fetching the Wasm module %s failed", url, extra={"wasm_url": url})
        self.fetches[result] += 1
        reason = f"{result}: {problem or type(problem).__name__}"
        self.problems[wanted] = reason
        failures = self._failures[wanted] = self._failures.get(wanted, 0) + 1
        delay = self._backoff.delay(failures, self._rng)
        self._due[wanted] = time.monotonic() + delay
        first = (url, reason) not in self._told
        self._told.add((url, reason))
        log.log(
            logging.WARNING if first else logging.DEBUG,
            "Wasm module %s is not served: %s (the plugin keeps its last good module, if"
            " any; next try in %.0f s)",
            url,
            reason,
            delay,
            extra={"wasm_url": url, "result": result},
        )


def _read_file(path: Path) -> bytes:
    with path.open("rb") as file:
        body = file.read(MAX_BYTES + 1)
    if len(body) > MAX_BYTES:
        raise ModuleRefused(NOT_WASM, f"larger than {MAX_BYTES} bytes")
    return body

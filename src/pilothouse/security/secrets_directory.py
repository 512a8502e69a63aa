"""The secrets directory (``--secrets DIR``): gateway credentials from files, followed.

One credential per name, the files of :mod:`pilothouse.security.credential_files`
(``<name>.crt`` + ``<name>.key`` [+ ``<name>-cacert.crt``]), served over SDS as
``kubernetes://<name>`` and ``kubernetes://<name>-cacert`` (istiod's names for a
Kubernetes Secret; the directory stands for one namespace's Secrets).

The directory is watched the way the file source watches config (``watchfiles``,
debounced), and also looked at every ``poll`` seconds (a listing and a stat per file:
that finds what an event missed, and a directory replaced as a whole). A credential is
read and parsed again only when the stat of one of its files moved (or when a file was
so recent at the last read that a coarse timestamp could hide a second change).

- A credential's two parts, its key pair (``.crt`` + ``.key``) and its CA certificates
  (``-cacert.crt``), are judged apart: a garbage ``-cacert.crt`` never holds back a
  valid new pair, nor a half-written pair new CA certificates.
- A part whose files are valid replaces what was served, and the listener is told its
  SDS name (the gateways that hold it are pushed, without a restart).
- A half-written or invalid part is refused: the error is logged naming the file, and
  the last good version of that part stays served (and is named in the log line), or
  nothing is served for it. A refusal is logged once per content: the same bad bytes
  again (rewritten, or read again) make no new line, different bad bytes do.
- A part whose files are all gone is no longer served (proxies keep what they hold,
  as with a deleted Kubernetes Secret).
- The directory missing or unreadable is *unavailable*, not empty: every credential
  stays, and the directory is looked at every ``poll`` seconds until it is back.

The flat directory has no namespaces, so istiod's "same namespace as the proxy" rule
cannot be read from it: who may read these credentials is decided by the SDS
generator (any verified identity, or only those of one namespace when
``sds.credentials_namespace`` is set).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Generic, TypeVar

from pilothouse.security.credential_files import (
    CA_SUFFIX,
    InvalidCredential,
    KeyPair,
    credential_files,
    credential_names,
    read_ca_certificates,
    read_key_pair,
)

log = logging.getLogger("pilothouse.security.secrets")

Listener = Callable[[frozenset[str]], None]
"""Told what changed: ``<name>`` for a key pair, ``<name>-cacert`` for CA certificates
(served as ``kubernetes://<name>`` and ``kubernetes://<name>-cacert``)."""


PAIR: Final = "key pair"
CA: Final = "CA certificates"
FILES: Final = "files"
"""The parts of a credential a refusal can concern (``FILES``: a fault reading both)."""

_Part = TypeVar("_Part")


@dataclass(frozen=True, slots=True)
class Loaded(Generic[_Part]):
    """A part of a credential being served, and when its files were read."""

    value: _Part
    loaded_at: float


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a part's files are refused, and a digest of the bytes refused."""

    problem: str
    content: str


class SecretsDirectory:
    """The credentials of one directory, kept current; reads are plain lookups."""

    def __init__(
        self,
        directory: Path,
        *,
        debounce: float = 0.1,
        poll: float = 0.5,
        force_polling: bool | None = None,
    ) -> None:
        self.directory = directory.resolve()
        self._debounce = debounce
        self._poll = poll
        self._force_polling = force_polling
        self._pairs: dict[str, Loaded[KeyPair]] = {}
        self._cas: dict[str, Loaded[tuple[str, ...]]] = {}
        self._problems: dict[tuple[str, str], Refusal] = {}
        """(credential name, part) → its refusal now (logged once per content)."""
        self._stamps: dict[str, tuple[Stamps, int]] = {}
        """What each credential's files looked like when last read, and when (in ns):
        files unchanged since are not read and parsed again."""
        self._listeners: list[Listener] = []
        self._synced = False
        self._available: bool | None = None
        self._stop = asyncio.Event()

    # -- what SDS reads ---------------------------------------------------------------

    def key_pair(self, name: str) -> KeyPair | None:
        loaded = self._pairs.get(name)
        return None if loaded is None else loaded.value

    def ca_certificates(self, name: str) -> tuple[str, ...] | None:
        loaded = self._cas.get(name)
        return None if loaded is None else loaded.value

    def names(self) -> frozenset[str]:
        """The credential names served now (a key pair, CA certificates or both)."""
        return frozenset(self._pairs) | frozenset(self._cas)

    def problems(self) -> dict[str, str]:
        """Credential name → why some of its files are refused now (``; ``-joined when
        both parts are); the last good version of a refused part is served."""
        found: dict[str, list[str]] = {}
        for (name, _), refusal in sorted(self._problems.items()):
            found.setdefault(name, []).append(refusal.problem)
        return {name: "; ".join(problems) for name, problems in found.items()}

    def on_change(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def has_synced(self) -> bool:
        return self._synced

    # -- lifecycle --------------------------------------------------------------------

    def load(self) -> frozenset[str]:
        """Read every credential now; returns what changed (``<name>``, ``<name>-cacert``)
        and tells the listeners. The directory unreadable changes nothing."""
        try:
            files = os.listdir(self.directory)
        except OSError as problem:
            self._lost(problem.strerror or type(problem).__name__)
            self._synced = True
            return frozenset()
        if self._available is False:
            log.info("secrets directory %s is available again", self.directory)
        self._available = True
        changed: set[str] = set()
        known = self.names() | {name for name, _ in self._problems}
        for name in sorted(credential_names(files) | known):
            try:
                changed |= self._reload(name)
            except Exception as exc:  # a fault of one credential stays with it
                log.debug("reading credential %s failed", name, exc_info=True)
                why = f"cannot be read ({type(exc).__name__}: {exc})"
                self._refuse(name, FILES, InvalidCredential(self.directory / name, why))
        self._synced = True
        if changed:
            for listener in list(self._listeners):
                try:
                    listener(frozenset(changed))
                except Exception:  # a listener's fault must not stop following files
                    log.exception("a listener of changed credentials failed")
        return frozenset(changed)

    async def run(self) -> None:
        """Load, then follow the directory until :meth:`close`."""
        self.load()
        while not self._stop.is_set():
            if self._available:
                await self._follow()
            else:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), self._poll)
                if not self._stop.is_set():
                    self.load()

    def close(self) -> None:
        self._stop.set()

    async def _follow(self) -> None:
        """Watch the directory until it is gone or replaced (then :meth:`run` looks
        again) or the source is closed."""
        from watchfiles import awatch

        armed = _identity(self.directory)
        try:
            batches = awatch(
                self.directory,
                debounce=max(1, int(self._debounce * 1000)),
                step=50,
                stop_event=self._stop,
                rust_timeout=max(1, int(self._poll * 1000)),
                yield_on_timeout=True,
                force_polling=self._force_polling,
                recursive=False,
                ignore_permission_denied=True,
            )
            async with contextlib.aclosing(batches):
                async for _changes in batches:
                    # Every batch, also the empty one every ``poll`` seconds: a look costs
                    # a listing and a stat per file (files whose stat did not move are not
                    # read again), and it finds what no event reported: a change before
                    # the watcher ran, or one a polling watcher's whole-second timestamps
                    # hid.
                    self.load()
                    if not self._available or _identity(self.directory) != armed:
                        return
        except Exception as exc:
            log.warning(
                "watching secrets directory %s failed (%s); looking at it again",
                self.directory,
                type(exc).__name__,
            )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), self._poll)
            self.load()

    # -- one credential ---------------------------------------------------------------

    def _reload(self, name: str) -> set[str]:
        """Read credential ``name`` again if its files changed; the SDS names of its parts
        whose content changed."""
        stamps = _stamps(credential_files(name, self.directory))
        seen = self._stamps.get(name)
        if seen is not None and seen[0] == stamps and _settled(stamps, seen[1]):
            return set()
        self._stamps[name] = (stamps, time.time_ns())
        changed = self._reload_part(name, PAIR, read_key_pair, self._pairs, name)
        changed |= self._reload_part(name, CA, read_ca_certificates, self._cas, name + CA_SUFFIX)
        self._problems.pop((name, FILES), None)
        return changed

    def _reload_part(
        self,
        name: str,
        part: str,
        read: Callable[[str, Path], _Part | None],
        served: dict[str, Loaded[_Part]],
        sds_name: str,
    ) -> set[str]:
        """One part of ``name`` read again: ``{sds_name}`` when what is served changed."""
        try:
            value = read(name, self.directory)
        except InvalidCredential as invalid:
            self._refuse(name, part, invalid)
            return set()
        self._problems.pop((name, part), None)
        previous = served.get(name)
        if value is None:
            if previous is not None:
                del served[name]
                log.info("credential %s: its %s removed; no longer served", name, part)
            return set()  # proxies keep what they hold; nothing new to push
        if previous is not None and previous.value == value:
            return set()
        served[name] = Loaded(value, time.time())
        log.info("credential %s loaded (its %s)", name, part, extra={"part": part})
        return {sds_name}

    def _refuse(self, name: str, part: str, invalid: InvalidCredential) -> None:
        refusal = Refusal(str(invalid), invalid.content)
        if self._problems.get((name, part)) == refusal:
            return  # these bad bytes were reported already
        self._problems[(name, part)] = refusal
        previous: Loaded[KeyPair] | Loaded[tuple[str, ...]] | None = None
        if part == PAIR:
            previous = self._pairs.get(name)
        elif part == CA:
            previous = self._cas.get(name)
        if part == FILES:
            kept = "keeping what is served for it"
        elif previous is None:
            kept = f"no {part} served for it until it is fixed"
        else:
            when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(previous.loaded_at))
            kept = f"keeping the last good one (loaded {when})"
        log.error(
            "credential %s refused (its %s): %s; %s",
            name,
            part,
            refusal.problem,
            kept,
            extra={"file": str(invalid.file), "part": part},
        )

    def _lost(self, reason: str) -> None:
        if self._available is False:
            return
        self._available = False
        log.error(
            "secrets directory %s is unavailable (%s); keeping its %d credential(s)",
            self.directory,
            reason,
            len(self.names()),
        )


Stamps = tuple[tuple[int, int, int, int] | None, ...]
"""Per file of a credential: (device, inode, size, mtime in ns), None when missing."""


def _stamps(files: tuple[Path, ...]) -> Stamps:
    found: list[tuple[int, int, int, int] | None] = []
    for path in files:
        try:
            seen = os.stat(path)  # through symlinks (a Kubernetes Secret volume's ..data)
        except OSError:
            found.append(None)
            continue
        found.append((seen.st_dev, seen.st_ino, seen.st_size, seen.st_mtime_ns))
    return tuple(found)


RACY_NS = 100_000_000
"""A file changed less than this before it was read may change again without its
stamp moving (timestamps are coarse): such a file is read again next time (git's
"racy clean" rule)."""


def _settled(stamps: Stamps, read_at: int) -> bool:
    """Whether every file's stamp was old enough when read to prove it unchanged."""
    return all(s is None or s[3] < read_at - RACY_NS for s in stamps)


def _identity(directory: Path) -> tuple[int, int] | None:
    """The directory's device and inode (another pair: it was replaced); None if gone."""
    try:
        seen = os.stat(directory)
    except OSError:
        return None
    return (seen.st_dev, seen.st_ino)

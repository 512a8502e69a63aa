"""The local token issuer's public keys, as the TLS port trusts them by default.

``pilothouse token`` keeps an issuer in a directory (:mod:`.token_issuer`): its name in
``issuer`` and its public keys in ``jwks.json``. ``serve`` trusts that issuer without a
``--jwt-issuer`` flag (``auth.local_issuer_dir``; empty turns it off). The directory may
not hold an issuer yet when ``serve`` starts (``pilothouse workload entry configure``
creates it on first use), and it may be made anew with another key, so the two small
files are read again whenever a token names an issuer that is not configured explicitly
(tokens come with certificate requests, not with every xDS message) and parsed again
when their bytes changed (not their times: a file made anew within a clock tick keeps
its time). Only the public files are read: the private key never concerns ``serve``.

A directory without the files is no issuer (tokens naming one are rejected as from an
untrusted issuer); files that do not parse are logged once per change and trusted for
nothing.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path

import jwt

from pilothouse.security.token_issuer import ISSUER_FILE, JWKS_FILE

log = logging.getLogger("pilothouse.security")

_Stamp = tuple[bytes, bytes]


@dataclass(frozen=True, slots=True)
class _Read:
    stamp: _Stamp
    name: str
    keys: jwt.PyJWKSet | None


class LocalIssuerKeys:
    """The key set of the issuer in ``directory``, for tokens whose ``iss`` is its name."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._read: _Read | None = None

    def keyset(self, issuer: str) -> jwt.PyJWKSet | None:
        """The issuer's keys when ``issuer`` is the local issuer's name, else None."""
        current = self._current()
        if current is None or current.keys is None or current.name != issuer:
            return None
        return current.keys

    def describe(self) -> str:
        """For a log line at start: the issuer's name and directory, or that it is absent."""
        current = self._current()
        if current is None:
            return f"no token issuer in {self.directory} yet (trusted once one is created)"
        if current.keys is None:
            return f"the token issuer in {self.directory} cannot be read"
        return f"token issuer {current.name!r} in {self.directory}"

    def _current(self) -> _Read | None:
        issuer_file, jwks_file = self.directory / ISSUER_FILE, self.directory / JWKS_FILE
        try:
            stamp = (issuer_file.read_bytes(), jwks_file.read_bytes())
        except FileNotFoundError:
            self._read = None
            return None
        except OSError as problem:
            if self._read is None or self._read.keys is not None:  # once, not per token
                log.warning("local token issuer %s cannot be read: %s", self.directory, problem)
            self._read = _Read((b"", b""), "", None)
            return self._read
        if self._read is None or self._read.stamp != stamp:
            self._read = _parse(stamp, issuer_file, jwks_file)
        return self._read


def _parse(stamp: _Stamp, issuer_file: Path, jwks_file: Path) -> _Read:
    try:
        name = stamp[0].decode("utf-8").strip()
    except UnicodeDecodeError:
        name = ""
    if not name:
        log.warning("local token issuer: %s holds no issuer name", issuer_file)
        return _Read(stamp, "", None)
    try:
        keys = jwt.PyJWKSet.from_dict(json.loads(stamp[1]))
    except (ValueError, jwt.PyJWKSetError, jwt.InvalidKeyError) as problem:
        log.warning("local token issuer: %s is not a usable JWKS (%s)", jwks_file, problem)
        return _Read(stamp, "", None)
    return _Read(stamp, name, keys)

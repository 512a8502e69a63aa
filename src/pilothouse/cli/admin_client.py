"""Asking several pilothouse replicas the same debug question over HTTP.

``proxy-status`` and ``proxy-config`` read ``/debug/syncz`` and ``/debug/config_dump``
from every replica given with ``--admin`` (each replica knows only its own streams, as
istiod's do), all at once. Each answer is a :class:`ReplicaAnswer`: the parsed JSON, or
why there is none in words a user can act on (cannot connect, timed out, 403 with the
server's reason, 404, not JSON). Nothing here raises for a replica's fault.

Admin addresses are ``http://host:port``, ``https://host:port`` or ``host:port``; the
default is ``settings.admin.address`` (``PILOTHOUSE_ADMIN_ADDRESS``), the same address
``pilothouse serve`` listens on.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import aiohttp

from pilothouse.cli.partial_answer import PARTIAL
from pilothouse.environment import from_environment
from pilothouse.settings import Settings


class BadAdminAddress(ValueError):
    """An ``--admin`` value that is not ``[http(s)://]host:port``."""


@dataclass(frozen=True, slots=True)
class ReplicaAnswer:
    """One replica's answer: ``status`` and ``body`` when it answered, ``problem`` (a
    sentence) when it could not be read; ``status`` 0 when nothing came back."""

    url: str
    status: int = 0
    body: Any = None
    problem: str = ""
    missing_workers: str = ""
    """For a ``serve --workers N`` replica: the workers whose part is missing from the
    answer, as the server names them (header ``Pilothouse-Workers-Missing``)."""

    @property
    def ok(self) -> bool:
        return self.status == 200 and not self.problem


def admin_url(value: str) -> str:
    """``value`` as ``http(s)://host:port`` with no path; raises BadAdminAddress."""
    text = value.strip()
    if "://" not in text:
        text = f"http://{text}"
    parts = urlsplit(text)
    try:
        port = parts.port
    except ValueError:
        port = None
    if parts.scheme not in ("http", "https") or not parts.hostname or port is None:
        raise BadAdminAddress(
            f"--admin {value!r}: expected http://host:port or host:port "
            "(a proxy name goes before --admin)"
        )
    if parts.path not in ("", "/") or parts.query:
        raise BadAdminAddress(f"--admin {value!r}: give the address only, without a path")
    return f"{parts.scheme}://{parts.netloc}"


def default_admin_url() -> str:
    """The admin address ``pilothouse serve`` uses here (settings and environment);
    raises SettingsError for a bad ``PILOTHOUSE_*`` variable."""
    return admin_url(Settings().with_overrides(from_environment()).admin.address)


async def ask_all(
    urls: Sequence[str],
    path: str,
    *,
    timeout: float = 10.0,
    data: bytes | None = None,
    params: Mapping[str, str] | None = None,
) -> list[ReplicaAnswer]:
    """GET ``path`` (POST ``data`` when given, with the query ``params``) from every
    replica at once; answers in the order of ``urls``."""
    limits = aiohttp.ClientTimeout(total=timeout)
    method = "GET" if data is None else "POST"
    async with aiohttp.ClientSession(timeout=limits) as session:
        asked = (_ask(session, method, url, path, data, params) for url in urls)
        return list(await asyncio.gather(*asked))


async def _ask(
    session: aiohttp.ClientSession,
    method: str,
    url: str,
    path: str,
    data: bytes | None,
    params: Mapping[str, str] | None,
) -> ReplicaAnswer:
    try:
        async with session.request(method, url + path, data=data, params=params) as response:
            text = await response.text(errors="replace")
            status = response.status
            missing = response.headers.get(PARTIAL, "")
    except TimeoutError:
        return ReplicaAnswer(url, problem=f"cannot reach {url}: no answer in time")
    except aiohttp.ClientError as failure:
        return ReplicaAnswer(url, problem=f"cannot reach {url}: {_reason(failure)}")
    try:
        body = json.loads(text)
    except ValueError:
        body = None
    if status == 200 and body is None:
        return ReplicaAnswer(url, status, problem=f"{url}{path} did not answer JSON")
    if status != 200:
        said = body.get("error") if isinstance(body, dict) else None
        detail = said if isinstance(said, str) else text.strip()[:200] or f"HTTP {status}"
        return ReplicaAnswer(url, status, body, problem=f"{url}: {detail}")
    return ReplicaAnswer(url, status, body, missing_workers=missing)


def _reason(failure: aiohttp.ClientError) -> str:
    if isinstance(failure, aiohttp.ClientConnectorError):
        code = failure.os_error.errno
        return os.strerror(code) if code else str(failure.os_error)
    return str(failure) or type(failure).__name__

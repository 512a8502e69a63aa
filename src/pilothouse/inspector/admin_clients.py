"""The two admin APIs the inspector reads, over HTTP: pilothouse's and an Envoy's.

:class:`PilothouseAdmin` reads ``/debug/acked`` (the connected proxies, and what one of
them acknowledged); :class:`EnvoyAdmin` reads ``/config_dump?include_eds``. Anything
that keeps an answer from being read (no connection, a timeout, a status other than
200, a body that is not the JSON expected) is an :class:`Unreachable` naming the URL (or,
when nothing listens, the address) and the reason, with what to check; a proxy
pilothouse does not know is :class:`NotConnected`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import aiohttp

ACKED_PATH: Final = "/debug/acked"
CONFIG_DUMP_PATH: Final = "/config_dump?include_eds"
CHECK_SERVE: Final = "is pilothouse serve running with its admin API there? check --admin"
CHECK_ENVOY: Final = (
    "is the proxy's Envoy running with its admin API there? "
    "check --envoy-admin or the proxy's ENVOY_ADMIN_ADDRESS metadata"
)


class InspectionFailed(RuntimeError):
    """The inspection could not be made; the message says why."""


class Unreachable(InspectionFailed):
    """An admin API did not give a readable answer."""


class NotConnected(InspectionFailed):
    """pilothouse has no such proxy connected."""


def base_url(address: str) -> str:
    """``http://host:port`` for ``host:port`` or a URL (a trailing ``/`` dropped)."""
    address = address.strip().rstrip("/")
    return address if "://" in address else f"http://{address}"


@dataclass(frozen=True, slots=True)
class ConnectedProxy:
    """One entry of pilothouse's ``/debug/acked`` list."""

    proxy_id: str
    node_id: str
    envoy_admin: str | None
    """``host:port`` from the proxy's ``ENVOY_ADMIN_ADDRESS`` metadata, if it has one."""

    def named(self, wanted: str) -> bool:
        """Whether ``wanted`` is this proxy's node id or ``pod.namespace``."""
        return wanted in (self.node_id, self.proxy_id)


class PilothouseAdmin:
    """pilothouse's admin API at ``address``."""

    def __init__(self, session: aiohttp.ClientSession, address: str) -> None:
        self.url = base_url(address)
        self._session = session

    async def proxies(self) -> list[ConnectedProxy]:
        body = await _get_json(self._session, self.url + ACKED_PATH, check=CHECK_SERVE)
        entries = body.get("proxies") if isinstance(body, Mapping) else None
        if not isinstance(entries, list):
            raise Unreachable(f"{self.url}{ACKED_PATH}: no 'proxies' list in the answer")
        found = []
        for entry in entries:
            if isinstance(entry, Mapping):
                admin = entry.get("envoyAdmin")
                found.append(
                    ConnectedProxy(
                        str(entry.get("proxyID", "")),
                        str(entry.get("nodeID", "")),
                        admin if isinstance(admin, str) and admin else None,
                    )
                )
        return found

    async def acked(self, node_id: str) -> dict[str, dict[str, str]]:
        """``{type_url: {name: digest}}`` of what the proxy ``node_id`` ACKed."""
        url = self.url + ACKED_PATH
        body = await _get_json(
            self._session, url, {"proxyID": node_id}, not_found=node_id, check=CHECK_SERVE
        )
        if not isinstance(body, Mapping) or not all(
            isinstance(digests, Mapping) for digests in body.values()
        ):
            raise Unreachable(f"{url}: the answer is not {{type_url: {{name: digest}}}}")
        return {str(t): {str(n): str(d) for n, d in ds.items()} for t, ds in body.items()}


class EnvoyAdmin:
    """An Envoy's admin API at ``address``."""

    def __init__(self, session: aiohttp.ClientSession, address: str) -> None:
        self.url = base_url(address)
        self._session = session

    async def config_dump(self) -> Mapping[str, Any]:
        body = await _get_json(self._session, self.url + CONFIG_DUMP_PATH, check=CHECK_ENVOY)
        if not isinstance(body, Mapping):
            raise Unreachable(f"{self.url}{CONFIG_DUMP_PATH}: the answer is not a JSON object")
        return body


async def _get_json(
    session: aiohttp.ClientSession,
    url: str,
    query: Mapping[str, str] | None = None,
    *,
    not_found: str | None = None,
    check: str,
) -> Any:
    try:
        async with session.get(url, params=query) as response:
            text = await response.text()
            if response.status == 404 and not_found is not None:
                raise NotConnected(f"proxy {not_found!r}: {_reason(text)} ({url})")
            if response.status != 200:
                raise Unreachable(f"{url}: HTTP {response.status}: {_reason(text)}")
            return json.loads(text)
    except aiohttp.ClientConnectorError as problem:
        address = f"{problem.host}:{problem.port}"
        raise Unreachable(
            f"cannot connect to {address}: {_refusal(problem.os_error)} ({check})"
        ) from None
    except TimeoutError:
        raise Unreachable(f"{url}: no answer within the timeout ({check})") from None
    except (aiohttp.ClientError, UnicodeDecodeError) as problem:
        raise Unreachable(f"{url}: {type(problem).__name__}: {problem}".rstrip(": ")) from None
    except json.JSONDecodeError as problem:
        raise Unreachable(f"{url}: the answer is not JSON ({problem})") from None


def _refusal(error: OSError) -> str:
    """``connection refused`` rather than ``Connect call failed ('127.0.0.1', 1)``."""
    if error.errno:
        return os.strerror(error.errno).lower()
    return str(error) or type(error).__name__


def _reason(text: str) -> str:
    """The ``error`` of pilothouse's JSON error shape, else the body's start."""
    try:
        body = json.loads(text)
    except ValueError:
        body = None
    if isinstance(body, Mapping) and isinstance(body.get("error"), str):
        return str(body["error"])
    return text.strip()[:200] or "(empty body)"

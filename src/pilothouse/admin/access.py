"""Who may use the admin API and ControlZ: clients on this host, and no other web page.

Both change a running control plane, so a request is refused with 403 unless:

- it comes from a loopback address (``127.0.0.0/8``, ``::1``), whatever address the
  server listens on (the admin port often listens widely for probes and metrics);
  ``PILOTHOUSE_ADMIN_ALLOW_REMOTE=true`` lifts this rule;
- its ``Host`` header names this server (:class:`~pilothouse.boundary.host_names.ServerNames`:
  ``localhost``, a loopback address, this server's own address or host name, or a
  configured name). A web page whose own name an attacker points at 127.0.0.1 (DNS
  rebinding) sends its own name and is refused. This rule holds with or without
  ``allow_remote``. On the admin port and ControlZ the Host check in front of every page
  (:mod:`pilothouse.boundary.host_check`) answers such a request 421 first; this one stays
  for a policy used without it, and on the admin API it also refuses ``xds-rest`` (a name
  of the admin port for Envoy's REST polls only).

Always, with or without ``allow_remote``, a request that changes something (any method
but GET, HEAD and OPTIONS) and carries an ``Origin`` header must come from a page of this
same server: a browser adds ``Origin`` to every cross-site POST, and a form or a
``fetch(..., {mode: "no-cors"})`` from another site could otherwise make it. curl and
other tools send no ``Origin`` and are not affected.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from aiohttp import web
from aiohttp.typedefs import Middleware
from yarl import URL

from pilothouse.boundary.contain import ErrorRenderer
from pilothouse.boundary.host_names import Handler, ServerNames, ip_of

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
OPEN_HINT = "set PILOTHOUSE_ADMIN_ALLOW_REMOTE=true to allow it"


def is_loopback(address: str | None) -> bool:
    ip = ip_of(address) if address else None
    return ip is not None and ip.is_loopback


def _host_and_port(authority: str) -> tuple[str, int | None]:
    try:
        url = URL(f"http://{authority}")
    except ValueError:
        return "", None
    return (url.host or "").lower(), url.explicit_port


@dataclass(frozen=True, slots=True)
class AccessPolicy:
    """Loopback only unless ``allow_remote``; foreign ``Host`` names and cross-site
    writes never."""

    allow_remote: bool = False
    names: ServerNames = field(default_factory=ServerNames.of_this_host)

    def refusal(self, request: web.Request) -> str | None:
        """Why ``request`` is refused, or None when it may go on."""
        if not self.allow_remote and not is_loopback(request.remote):
            return (
                f"{request.path} answers only clients on this host; "
                f"{request.remote or 'this client'} is not ({OPEN_HINT})"
            )
        foreign = self.names.refusal(request)
        if foreign is not None:
            return foreign
        if request.method not in SAFE_METHODS:
            origin = request.headers.get("Origin")
            if origin is not None and not self._same_origin(origin, request):
                return (
                    f"cross-site request refused: Origin {origin!r} is not this server "
                    f"({request.host})"
                )
        return None

    @staticmethod
    def _same_origin(origin: str, request: web.Request) -> bool:
        if origin == "null":
            return False
        try:
            url = URL(origin)
        except ValueError:
            return False
        if url.host is None:
            return False
        host, port = _host_and_port(request.host)
        own_port = port if port is not None else (443 if request.secure else 80)
        return url.host.lower() == host and url.port == own_port

    def guard(self, render: ErrorRenderer, handler: Handler) -> Handler:
        """``handler`` behind this policy: a refused request gets ``render(403, why)``."""

        async def guarded(request: web.Request) -> web.StreamResponse:
            refused = self.refusal(request)
            if refused is not None:
                return render(403, refused)
            return await handler(request)

        return guarded

    def middleware(self, render: ErrorRenderer) -> Middleware:
        """The same check for every request of an application."""

        @web.middleware
        async def check(request: web.Request, handler: Handler) -> web.StreamResponse:
            return await self.guard(render, handler)(request)

        return check

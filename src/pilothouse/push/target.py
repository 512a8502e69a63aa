"""What push/ knows of a connection: the narrow target the xDS server offers.

push/ never imports the server: it chooses, queues and pushes *targets*. A target is
what the pipeline reads to choose it (:class:`ProxyWatches`: who its proxy is and what
it watches) and what the push service hands a push to (:class:`PushTarget`): the
planned push (:mod:`pilothouse.push.proxy_push`), a failure that ends its stream, a
future (or a :class:`~pilothouse.push.signal.Signal`, which spares the loop's hop)
resolved once what it was handed is written, and one resolved once its proxy has
answered (ACKed or NACKed) what it was sent. The server's ``Connection`` is one;
the push service's tests use an in-memory one.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Protocol

from pilothouse.push.proxy import ProxyIdentity
from pilothouse.push.proxy_push import ProxyPush
from pilothouse.push.signal import Waited


class ProxyWatches(Hashable, Protocol):
    """What the pipeline reads of a connection to choose it for a push."""

    @property
    def id(self) -> str: ...

    @property
    def proxy(self) -> ProxyIdentity: ...

    def watched_types(self) -> list[str]:
        """The type URLs (or MCP-over-xDS type names) the connection watches."""
        ...

    def watches_any_host(self, hostnames: frozenset[str]) -> bool:
        """Whether any watched EDS cluster has its host among ``hostnames``."""
        ...

    def watches_secrets(self, names: frozenset[str]) -> bool:
        """Whether the connection watches any of the SDS secrets ``names``."""
        ...


class PushTarget(ProxyWatches, Protocol):
    """One connected stream, as the push service drives it."""

    @property
    def failure(self) -> str | None:
        """Why the stream is ending with INTERNAL; None while it is healthy."""
        ...

    def watches_hosts(self, hostnames: frozenset[str]) -> frozenset[str]:
        """The watched EDS cluster names whose host is one of ``hostnames``."""
        ...

    def reidentify(self, proxy: ProxyIdentity) -> None:
        """The proxy is now ``proxy`` (its Pod changed): generate for it from now on."""
        ...

    def push(self, planned: ProxyPush, now: float) -> None:
        """Generate and queue what ``planned`` names, in make-before-break order."""
        ...

    def fail(self) -> None:
        """End the stream with INTERNAL: pilothouse failed serving it."""
        ...

    def when_written(self) -> Waited | None:
        """Resolved once everything queued so far is written (or the writer stops); None
        when there is nothing to wait for."""
        ...

    def when_answered(self) -> Waited | None:
        """Resolved once the proxy has answered (ACK or NACK) every response sent so far
        (or the stream ends); None when nothing is unanswered."""
        ...

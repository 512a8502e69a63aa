"""``serve --write-status``: the Gateway API's status, written back to Kubernetes or etcd.

After each new push context, the status of every Gateway API object (what
``/debug/gateway_apiz`` shows) is merged into that object's ``status`` through the
``k8s://`` or ``etcd://`` source that holds it, with ``lastTransitionTime`` set at the
write. An object is written only when its status changed since it was last written, so
a push that changes nothing writes nothing; a status write changes no object's content,
so it causes no push. Statuses of objects from files stay on ``/debug/gateway_apiz``.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sequence
from typing import Protocol

from pilothouse.admin.gateway_api_view import current_statuses
from pilothouse.config.model import ConfigKey
from pilothouse.kinds.gateway_api.status import Status, stamped
from pilothouse.xds.server.debug_view import DebugView, rfc3339


class StatusTarget(Protocol):
    """A source that can write a status into the objects it holds (``k8s://``, ``etcd://``)."""

    def publish_status(self, key: ConfigKey, status: Status) -> bool: ...


class GatewayApiStatusWriter:
    """Writes changed Gateway API statuses to the sources holding the objects."""

    def __init__(
        self, view: DebugView, sources: Sequence[StatusTarget], interval: float = 0.5
    ) -> None:
        self._view = view
        self._sources = tuple(sources)
        self._interval = interval
        self._written: dict[ConfigKey, Status] = {}
        self._version: str | None = None
        self._stop = asyncio.Event()

    def write_changed(self) -> list[ConfigKey]:
        """Write what changed since the last write (nothing while the push context is the
        one already written); the keys written."""
        if not self._view.ready():
            return []
        version = self._view.context.version
        if version == self._version:
            return []
        self._version = version
        now = rfc3339(time.time())
        written: list[ConfigKey] = []
        for key, status in current_statuses(self._view).items():
            if self._written.get(key) == status:
                continue
            if any(source.publish_status(key, stamped(status, now)) for source in self._sources):
                self._written[key] = status
                written.append(key)
        return written

    async def run(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), self._interval)
            self.write_changed()

    def close(self) -> None:
        self._stop.set()

"""A controller's status written into an object kept in etcd (``serve --write-status``).

As on Kubernetes, the status a controller computes (the Gateway API's conditions) is
merged into the ``status`` of the stored object: its fields replace the stored ones of
the same name, the others stay. One transaction per object, guarded by the mod
revision the value was read at: a write that meets a newer value writes nothing (the
event bringing that value decides again). Nothing is written when the stored status
already says the same (:func:`same_status`: condition times aside), so a server that
restarts, or a second replica computing the same status, writes nothing.

The ``etcd://`` source (:mod:`pilothouse.sources.etcd`) tells a status-only change from
a change of the object: the first keeps the object as it was (no event, so no push).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import aetcd

TIME_FIELD = "lastTransitionTime"


def _untimed(value: Any) -> Any:
    """``value`` without the conditions' ``lastTransitionTime`` anywhere in it."""
    if isinstance(value, dict):
        return {k: _untimed(v) for k, v in value.items() if k != TIME_FIELD}
    if isinstance(value, list):
        return [_untimed(v) for v in value]
    return value


def same_status(stored: Any, wanted: Mapping[str, Any]) -> bool:
    """Whether the ``stored`` status already holds every field of ``wanted`` (condition
    times aside)."""
    if not isinstance(stored, dict):
        return not wanted
    return all(_untimed(stored.get(name)) == _untimed(value) for name, value in wanted.items())


def with_status(value: bytes, status: Mapping[str, Any]) -> bytes | None:
    """The stored ``value`` with ``status`` merged into its ``status``; None when the value
    is not a JSON object or already says so."""
    try:
        data = json.loads(value)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(data, dict) or same_status(data.get("status"), status):
        return None
    stored = data.get("status")
    data["status"] = {**(stored if isinstance(stored, dict) else {}), **status}
    return json.dumps(data, separators=(",", ":"), sort_keys=True, default=str).encode()


async def write_status(client: aetcd.Client, key: bytes, status: Mapping[str, Any]) -> bool:
    """Merge ``status`` into the object stored at ``key``, unless it is gone, already says
    so, or changed between the read and the write; whether it was written."""
    got = await client.get(key)
    if got is None:
        return False
    value = with_status(got.value, status)
    if value is None:
        return False
    unchanged = client.transactions.mod(key) == got.mod_revision
    done, _ = await client.transaction(
        compare=[unchanged], success=[client.transactions.put(key, value)], failure=[]
    )
    return bool(done)

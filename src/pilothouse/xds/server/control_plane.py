"""Which replica answered: the identity every discovery response carries.

istiod sets ``control_plane.identifier`` to the JSON
``{"Component":"istiod","ID":<pod name>,"Info":<build info>}`` (on its syncz answers),
and ``istioctl proxy-status`` reads the ``ID`` to name the istiod a proxy is connected
to. pilothouse sets the same shape on every response it sends, with ``Component``
``pilothouse`` and the replica's name as ``ID``: ``PILOTHOUSE_REPLICA_ID`` when set,
else ``<hostname>:<xDS port>``, which stays the same for the life of the process and
tells replicas on one host apart. The field is encoded once
(:func:`~pilothouse.xds.protocol.wire.control_plane_field`).
"""

from __future__ import annotations

import json
import socket
from dataclasses import dataclass, field
from typing import Final

from pilothouse import __version__
from pilothouse.xds.protocol.wire import ControlPlaneField, control_plane_field

COMPONENT: Final = "pilothouse"


def replica_name(configured: str, xds_port: int, hostname: str | None = None) -> str:
    """``configured`` when set, else ``<hostname>:<xds_port>``."""
    if configured:
        return configured
    return f"{hostname if hostname is not None else socket.gethostname()}:{xds_port}"


@dataclass(frozen=True)
class ControlPlaneIdentity:
    """A replica's name and build, and their encodings."""

    replica: str
    version: str = __version__
    identifier: str = field(init=False)
    """The JSON sent as ``control_plane.identifier``."""
    encoded: ControlPlaneField = field(init=False)
    """``identifier`` encoded for SotW and delta responses."""

    def __post_init__(self) -> None:
        identifier = json.dumps(
            {"Component": COMPONENT, "ID": self.replica, "Info": {"version": self.version}},
            separators=(",", ":"),
        )
        object.__setattr__(self, "identifier", identifier)
        object.__setattr__(self, "encoded", control_plane_field(identifier))


def parse_identifier(identifier: str) -> str:
    """The replica (``ID``) named by a ``control_plane.identifier``; istiod's JSON
    parses the same way. Text that is not that JSON is returned as it is."""
    try:
        parsed = json.loads(identifier)
    except ValueError:
        return identifier
    replica = parsed.get("ID") if isinstance(parsed, dict) else None
    return replica if isinstance(replica, str) else identifier

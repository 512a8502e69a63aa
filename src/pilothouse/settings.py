"""Settings: every knob pilothouse has, in one typed, frozen object passed to whoever needs it.

Defaults equal istiod's where istiod has one. Values come from command-line flags and
``PILOTHOUSE_*`` environment variables (flags win); nothing reads the environment
anywhere else.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

ENV_PREFIX = "PILOTHOUSE_"
_FLOATS = frozenset(
    {
        "file_debounce",
        "debounce_after",
        "debounce_max",
        "drain_seconds",
        "rest_refresh_delay",
        "mcp_max_wait",
        "mcp_quiesce",
    }
)
_TUPLES = frozenset({"config_sources", "sink_meta"})
_INTS = frozenset({"push_throttle", "max_receive_bytes"})
_BOOLS = frozenset({"eds_debounce", "accept_mcp_sources"})
_STRINGS = frozenset(
    {
        "default_namespace",
        "log_level",
        "xds_address",
        "admin_address",
        "webhook_address",
        "webhook_cert",
        "webhook_key",
        "mesh_file",
        "role",
        "mcp_sink_address",
    }
)


@dataclass(frozen=True, slots=True)
class Settings:
    """All of pilothouse's knobs."""

    config_dirs: tuple[Path, ...] = ()
    """Directories served by file sources; empty means ``./mesh`` when it exists."""
    default_namespace: str = "default"
    """Namespace given to objects whose metadata has none."""
    file_debounce: float = 0.1
    """Seconds of quiet before a changed file is reloaded."""
    log_level: str = "info"
    xds_address: str = "127.0.0.1:15010"
    """host:port of the plaintext xDS gRPC server (istiod's 15010)."""
    admin_address: str = "127.0.0.1:15014"
    """host:port of the HTTP server for /ready, REST xDS and debug (istiod's 15014)."""
    webhook_address: str = "127.0.0.1:15017"
    """host:port of the HTTPS validation webhook (only with a certificate and key)."""
    webhook_cert: str = ""
    """PEM certificate for the webhook; the webhook is off without one."""
    webhook_key: str = ""
    """PEM private key for the webhook."""
    config_sources: tuple[str, ...] = ()
    """Extra config source addresses (fs:///dir, xds://host:port, mcp://host:port)."""
    mesh_file: str = ""
    """An Istio mesh config file (MeshConfig YAML or the istio ConfigMap)."""
    role: str = "all"
    """``all`` serves proxies and config; ``config-server`` serves config only (MCP)."""
    accept_mcp_sources: bool = False
    """Serve MCP ResourceSink so that sources can dial in (reverse mode)."""
    mcp_sink_address: str = ""
    """Dial out to this MCP ResourceSink and serve config over that stream."""
    sink_meta: tuple[str, ...] = ()
    """``k=v`` pairs sent as gRPC metadata on the dial-out stream."""
    mcp_max_wait: float = 1.0
    """MCP default snapshot group: longest wait before publishing, seconds (Galley: 1 s)."""
    mcp_quiesce: float = 0.5
    """MCP default snapshot group: quiet time before publishing, seconds (Galley: 0.5 s)."""
    debounce_after: float = 0.1
    """PILOT_DEBOUNCE_AFTER: quiet time before a push, seconds."""
    debounce_max: float = 10.0
    """PILOT_DEBOUNCE_MAX: longest a push waits for quiet, seconds."""
    eds_debounce: bool = True
    """PILOT_ENABLE_EDS_DEBOUNCE: debounce endpoint-only pushes too."""
    push_throttle: int = 0
    """PILOT_PUSH_THROTTLE: concurrent pushes; 0 means min(15 + 5 x cores, 100)."""
    max_receive_bytes: int = 4 * 1024 * 1024
    """Largest request accepted on an xDS stream."""
    rest_refresh_delay: float = 1.0
    """How often REST-mode proxies are told to poll for EDS/RDS (match their bootstrap)."""
    drain_seconds: float = 5.0
    """How long SIGTERM waits for streams to close before stopping hard."""

    def with_overrides(self, values: Mapping[str, Any]) -> Settings:
        known = {f.name for f in fields(self)}
        unknown = set(values) - known
        if unknown:
            raise ValueError(f"unknown settings: {', '.join(sorted(unknown))}")
        return replace(self, **{k: v for k, v in values.items() if v is not None})

    def effective_config_dirs(self) -> tuple[Path, ...]:
        if self.config_dirs:
            return self.config_dirs
        mesh = Path("mesh")
        return (mesh,) if mesh.is_dir() else ()


def from_environment(environ: Mapping[str, str] = os.environ) -> dict[str, Any]:
    """Settings named by ``PILOTHOUSE_*`` variables, converted to their field types."""
    out: dict[str, Any] = {}
    for name, value in environ.items():
        if not name.startswith(ENV_PREFIX):
            continue
        field_name = name[len(ENV_PREFIX) :].lower()
        if field_name == "config_dirs":
            out[field_name] = tuple(Path(p) for p in value.split(os.pathsep) if p)
        elif field_name in _TUPLES:
            out[field_name] = tuple(p.strip() for p in value.split(",") if p.strip())
        elif field_name in _FLOATS:
            out[field_name] = float(value)
        elif field_name in _INTS:
            out[field_name] = int(value)
        elif field_name in _BOOLS:
            out[field_name] = value.strip().lower() in ("1", "true", "yes", "on")
        elif field_name in _STRINGS:
            out[field_name] = value
    return out

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
        elif field_name == "file_debounce":
            out[field_name] = float(value)
        elif field_name in ("default_namespace", "log_level"):
            out[field_name] = value
    return out

"""sovereign's own virtualenv, kept apart from the project's ``.venv``.

sovereign (PyPI; Atlassian's Python Envoy control plane) brings FastAPI, pydantic,
gunicorn and uvicorn at versions of its own, so it lives in
``<project>/.bench/sovereign-venv`` (git-ignored), created with ``python -m venv`` on
first use and reused while it holds the pinned version. The pin includes sovereign's
``orjson`` and ``httptools`` extras: its fastest JSON encoder and HTTP parser, so
that the baseline is sovereign at its best.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Final

SOVEREIGN_VERSION: Final = "0.32.12"
REQUIREMENT: Final = f"sovereign[orjson,httptools]=={SOVEREIGN_VERSION}"
VENV_PATH: Final = Path(".bench") / "sovereign-venv"
"""Relative to the project root."""

_PROBE: Final = (
    "import importlib.metadata as m, orjson, httptools, uvloop; print(m.version('sovereign'))"
)


class VenvFailed(RuntimeError):
    """The venv could not be created or sovereign could not be installed."""


def installed_version(venv: Path) -> str | None:
    """The sovereign version installed in ``venv`` (with its extras), or None."""
    python = venv / "bin" / "python"
    if not python.exists():
        return None
    done = subprocess.run(
        [str(python), "-c", _PROBE], capture_output=True, text=True, timeout=60, check=False
    )
    if done.returncode != 0:
        return None
    return done.stdout.strip() or None


def ensure_venv(venv: Path, timeout: float = 240.0) -> float:
    """Make ``venv`` hold the pinned sovereign; seconds spent installing (0: reused)."""
    if installed_version(venv) == SOVEREIGN_VERSION:
        return 0.0
    began = time.monotonic()
    venv.parent.mkdir(parents=True, exist_ok=True)
    steps = (
        [sys.executable, "-m", "venv", str(venv)],
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", REQUIREMENT],
    )
    for argv in steps:
        left = timeout - (time.monotonic() - began)
        try:
            done = subprocess.run(
                argv, capture_output=True, text=True, timeout=max(left, 1.0), check=False
            )
        except subprocess.TimeoutExpired:
            raise VenvFailed(f"{' '.join(argv)}: not done in {timeout:.0f} s") from None
        if done.returncode != 0:
            raise VenvFailed(f"{' '.join(argv)} failed:\n{done.stderr[-2000:]}")
    found = installed_version(venv)
    if found != SOVEREIGN_VERSION:
        raise VenvFailed(f"{venv} holds sovereign {found}, not {SOVEREIGN_VERSION}")
    return time.monotonic() - began

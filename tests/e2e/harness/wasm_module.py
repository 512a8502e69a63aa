"""The proxy-wasm module the WasmPlugin tests serve: assembled from its WAT when Debian's
``wat2wasm`` (package ``wabt``, installed by ``make wabt``) is on the PATH, else the
checked-in bytes, whose sha256 is checked here so a stale or damaged copy fails loudly."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path
from typing import Final

HERE: Final = Path(__file__).resolve().parents[1] / "wasm"
WAT: Final = HERE / "add_header.wat"
CHECKED_IN: Final = HERE / "add_header.wasm"
CHECKED_IN_SHA256: Final = "5c397b9ee1a2ea5988abf166adda4246bff29ed0ba254f4bd2b4a1c04005cc02"
HEADER: Final = ("x-wasm", "pilothouse")
"""The response header the module adds."""


def add_header_module(workdir: Path) -> tuple[bytes, str]:
    """The module's bytes, and where they came from (``wat2wasm`` or ``checked-in``)."""
    tool = shutil.which("wat2wasm")
    if tool is not None:
        out = workdir / "add_header.wasm"
        subprocess.run([tool, str(WAT), "-o", str(out)], check=True, timeout=30)
        return out.read_bytes(), "wat2wasm"
    body = CHECKED_IN.read_bytes()
    assert hashlib.sha256(body).hexdigest() == CHECKED_IN_SHA256, "checked-in module changed"
    return body, "checked-in"


def with_header_value(module: bytes, value: str) -> bytes:
    """The same module adding ``value`` instead (same length: the data segment is
    rewritten in place)."""
    old = HEADER[1].encode()
    assert len(value) == len(old) and module.count(old) == 1
    return module.replace(old, value.encode())

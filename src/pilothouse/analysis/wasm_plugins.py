"""A WasmPlugin's module can be fetched and checked: a remote (http or https) module has
a sha256 to check it against (PH0121), and a file module exists (PH0122).

The file is looked for where the analysis runs: ``pilothouse analyze`` over files looks
on the machine it runs on (the server's, when it is run there), and ``serve`` (so
``analyze --admin``) on the server's own filesystem, which is where pilothouse reads
modules from (:mod:`pilothouse.security.wasm_modules`). An ``oci://`` URL never gets
here: validation refuses it (IST0106, pilothouse has no registry client). Selectors
that select nothing are :mod:`.selectors`', ``targetRefs`` :mod:`.gateway_targets`'.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from pilothouse.analysis.mesh_view import MeshView
from pilothouse.analysis.messages import (
    WASM_PLUGIN_MODULE_FILE_NOT_FOUND,
    WASM_PLUGIN_WITHOUT_SHA256,
    Message,
    about,
)
from pilothouse.config.validation.wasm_plugin import module_scheme

REMOTE_SCHEMES = frozenset({"http", "https"})


def module_path(url: str) -> Path:
    """The file a ``file://`` URL names, as the module fetcher reads it."""
    return Path(unquote(urlsplit(url).path))


def analyze(view: MeshView) -> Iterator[Message]:
    for plugin in view.of_kind("WasmPlugin"):
        spec: Any = plugin.spec
        scheme = module_scheme(spec.url)
        if scheme in REMOTE_SCHEMES and not spec.sha256:
            yield about(plugin, WASM_PLUGIN_WITHOUT_SHA256, spec.url, path="spec.url")
        elif scheme == "file" and not module_path(spec.url).is_file():
            yield about(
                plugin, WASM_PLUGIN_MODULE_FILE_NOT_FOUND, module_path(spec.url), path="spec.url"
            )

"""WasmPlugin objects and proxies for the unit tests, from YAML-shaped specs."""

from __future__ import annotations

import datetime
import hashlib
from typing import Any

from google.protobuf.json_format import ParseDict

from pilothouse.api.istio.extensions.v1alpha1.wasm_pb2 import WasmPlugin
from pilothouse.config.model import Config
from pilothouse.push.proxy import ProxyIdentity, parse_node
from pilothouse.security.wasm_modules import WasmModule

MODULE = b"\0asm\x01\0\0\0"
"""The smallest valid Wasm binary (magic and version): enough where nothing runs it."""
MODULE_SHA = hashlib.sha256(MODULE).hexdigest()


def plugin(name: str = "p", namespace: str = "shop", version: str = "1", **spec: Any) -> Config:
    """A WasmPlugin ``namespace/name`` (url ``file:///m.wasm`` unless given)."""
    spec.setdefault("url", "file:///m.wasm")
    return Config(
        "WasmPlugin",
        name,
        namespace,
        ParseDict(spec, WasmPlugin()),
        resource_version=version,
        creation_time=datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC),
    )


def sidecar(namespace: str = "shop", **labels: str) -> ProxyIdentity:
    meta: dict[str, Any] = {"LABELS": labels} if labels else {}
    return parse_node(f"sidecar~10.0.0.1~pod.{namespace}~{namespace}.svc.cluster.local", meta)


def router(namespace: str = "shop", **labels: str) -> ProxyIdentity:
    meta: dict[str, Any] = {"LABELS": labels} if labels else {}
    return parse_node(f"router~10.0.0.2~gw.{namespace}~{namespace}.svc.cluster.local", meta)


def every_module(url: str, sha256: str) -> WasmModule | None:
    """A module lookup that has every module (the test module, whatever the url)."""
    return WasmModule(MODULE_SHA, MODULE)

"""WasmPlugin: where the module is, its checksum, its VM environment and traffic match,
checked as istiod checks them, plus the one rule pilothouse adds: an OCI image cannot
be served (pilothouse has no registry client).

:func:`module_scheme` reads a plugin's ``url`` the way istiod does (no scheme: an OCI
image); the module fetcher uses the same reading.
"""

from __future__ import annotations

import re
from typing import Final
from urllib.parse import urlsplit

from pilothouse.api.istio.extensions.v1alpha1.wasm_pb2 import EnvValueSource, WasmPlugin
from pilothouse.config.validation.policy_target import check_policy_target
from pilothouse.config.validation.ports import port_number_ok
from pilothouse.config.validation.report import Report

SCHEMES: Final = frozenset({"file", "http", "https", "oci"})
"""The schemes Istio accepts in ``url`` (besides none, which means ``oci``)."""
SERVED_SCHEMES: Final = frozenset({"file", "http", "https"})
"""The schemes pilothouse fetches modules from."""
MAX_PULL_SECRET: Final = 253
MAX_NAME: Final = 256
_SCHEME: Final = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
_SHA256: Final = re.compile(r"^[a-f0-9]{64}$")
_BAD_ESCAPE: Final = re.compile(r"%(?![0-9A-Fa-f]{2})")


def module_scheme(url: str) -> str:
    """The scheme of ``url`` in lower case; ``oci`` when it has none (istiod's default)."""
    found = _SCHEME.match(url)
    return found.group(1).lower() if found else "oci"


def validate_wasm_plugin(spec: WasmPlugin, report: Report) -> None:
    """istiod's ``ValidateWasmPlugin``: one of selector/targetRef/targetRefs, a parsable
    ``url`` of a known scheme, a 64-digit lowercase hex ``sha256``, length limits on
    ``imagePullSecret``, ``pluginName`` and env names, unique env names whose ``value``
    is only set for INLINE, match ports in 1-65535. pilothouse refuses ``oci://`` (and a
    URL without a scheme): it fetches no image from a registry."""
    check_policy_target(
        spec.selector if spec.HasField("selector") else None,
        spec.target_ref if spec.HasField("target_ref") else None,
        spec.target_refs,
        report,
    )
    _check_url(spec.url, report)
    if spec.sha256 and not _SHA256.match(spec.sha256):
        report.error("spec.sha256", "sha256 field must match [a-f0-9]{64} pattern")
    if len(spec.image_pull_secret) > MAX_PULL_SECRET:
        report.error(
            "spec.imagePullSecret",
            f"imagePullSecret field must be at most {MAX_PULL_SECRET} characters long",
        )
    if len(spec.plugin_name) > MAX_NAME:
        report.error(
            "spec.pluginName", f"pluginName field must be at most {MAX_NAME} characters long"
        )
    _check_env(spec, report)
    for i, selector in enumerate(spec.match):
        for j, port in enumerate(selector.ports):
            if not port_number_ok(port.number):
                report.error(
                    f"spec.match[{i}].ports[{j}].number",
                    f"port {port.number} is out of range (1-65535)",
                )


def _check_url(url: str, report: Report) -> None:
    if not url:
        report.error("spec.url", "url field needs to be set")
        return
    if any(c.isspace() or ord(c) < 0x20 for c in url) or _BAD_ESCAPE.search(url):
        report.error("spec.url", f"failed to parse url {url!r}")
        return
    scheme = module_scheme(url)
    if scheme not in SCHEMES:
        report.error("spec.url", f"url contains unsupported scheme: {scheme}")
        return
    if scheme not in SERVED_SCHEMES:
        report.error(
            "spec.url",
            f"{url!r} is an OCI image: pilothouse has no registry client and cannot serve"
            " it; serve the module from file:// or http(s):// with its sha256",
        )
        return
    parts = urlsplit(url)
    if scheme == "file" and not parts.path:
        report.error("spec.url", f"file url {url!r} names no file")
    elif scheme != "file" and not parts.hostname:
        report.error("spec.url", f"{scheme} url {url!r} names no host")


def _check_env(spec: WasmPlugin, report: Report) -> None:
    seen: set[str] = set()
    for i, env in enumerate(spec.vm_config.env):
        path = f"spec.vmConfig.env[{i}]"
        if not env.name:
            report.error(f"{path}.name", "an environment variable needs a name")
            continue
        if len(env.name) > MAX_NAME:
            report.error(f"{path}.name", f"name must be at most {MAX_NAME} characters long")
        if env.name in seen:
            report.error(f"{path}.name", f"duplicate env {env.name!r}")
        seen.add(env.name)
        if env.value_from != EnvValueSource.INLINE and env.value:
            report.error(f"{path}.value", "value may only be set when valueFrom is INLINE")

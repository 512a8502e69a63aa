"""What ``pilothouse bootstrap`` applies of ProxyConfig, and where it reads it from.

A bootstrap is written for one proxy: its namespace (from the node id), its labels
(``--label``) and its pod's annotations (``--annotation``, of which
``proxy.istio.io/config`` counts). The ProxyConfig objects come from ``--config`` paths
(files or directories of Istio YAML, like ``serve --config``; other kinds are ignored) and
MeshConfig ``defaultConfig`` and ``rootNamespace`` from ``--mesh``. The effective settings
(:func:`~pilothouse.kinds.proxy_config.effective_settings`) are applied as Envoy's
``--concurrency`` (printed with ``--envoy-args``) and ``ISTIO_META_*`` variables as node
metadata (the variable's name without the prefix, as istio-agent does). Other variables
and ``image`` are accepted and named as not applied: pilothouse starts neither the
proxy's container nor its process.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from pilothouse.config.load import Loader
from pilothouse.config.mesh import MeshSettings
from pilothouse.config.meshconfig import MeshConfigError, load_mesh_config
from pilothouse.config.model import Config
from pilothouse.config.proxy_defaults import (
    ANNOTATION,
    ProxyDefaultsError,
    parse_proxy_config_annotation,
)
from pilothouse.config.validation.report import Severity
from pilothouse.kinds.proxy_config import (
    KIND,
    ProxySettings,
    effective_settings,
    ignored_namespace_wide,
    settings_of_mesh_proxy_config,
)
from pilothouse.kinds.table import SCHEMAS
from pilothouse.sources.fs_tree import RootUnavailable, scan_tree

METADATA_PREFIX: Final = "ISTIO_META_"
"""Environment variables with this prefix become node metadata (without it)."""


class ProxyConfigInputError(ValueError):
    """A ``--config``, ``--mesh`` or ``--annotation`` input that cannot be used."""


@dataclass(frozen=True, slots=True)
class AppliedProxyConfig:
    """The effective settings of the proxy, and what to tell the user about them."""

    settings: ProxySettings
    notes: tuple[str, ...] = ()

    def envoy_args(self) -> tuple[str, ...]:
        """Envoy's command-line arguments the settings imply: ``--concurrency N`` for a
        positive N (0 or unset: Envoy's own default, one worker per core, as istio-agent
        passes no flag then)."""
        concurrency = self.settings.concurrency
        if concurrency is not None and concurrency > 0:
            return ("--concurrency", str(concurrency))
        return ()

    def node_metadata(self, written: Mapping[str, Any]) -> tuple[dict[str, str], tuple[str, ...]]:
        """Node metadata from the ``ISTIO_META_*`` variables (one the bootstrap already
        ``written`` keeps the bootstrap's value), and notes on every variable left out."""
        metadata: dict[str, str] = {}
        notes: list[str] = []
        for name in sorted(self.settings.environment):
            value = self.settings.environment[name]
            key = name.removeprefix(METADATA_PREFIX)
            if key == name or not key:
                notes.append(f"environment variable {name}: not applied by a bootstrap")
            elif key in written:
                notes.append(f"environment variable {name}: ignored; the bootstrap sets {key}")
            else:
                metadata[key] = value
        return metadata, tuple(notes)


def read_applied(
    config_paths: Sequence[Path],
    mesh_file: Path | None,
    annotations: Mapping[str, str],
    namespace: str,
    labels: Mapping[str, str],
) -> AppliedProxyConfig:
    """The proxy's effective ProxyConfig from the given inputs; ProxyConfigInputError
    names the file, object or annotation that cannot be used."""
    notes: list[str] = []
    root_namespace = MeshSettings().root_namespace
    mesh_default: ProxySettings | None = None
    if mesh_file is not None:
        try:
            loaded = load_mesh_config(mesh_file.read_text(encoding="utf-8"), str(mesh_file))
        except (OSError, UnicodeDecodeError, MeshConfigError) as problem:
            raise ProxyConfigInputError(f"--mesh {mesh_file}: {problem}") from None
        root_namespace = loaded.mesh.root_namespace
        notes.extend(w for w in loaded.warnings if "defaultConfig" in w)
        if loaded.message.HasField("default_config"):
            mesh_default = settings_of_mesh_proxy_config(
                loaded.message.default_config, "meshConfig.defaultConfig"
            )
    annotation: ProxySettings | None = None
    if ANNOTATION in annotations:
        try:
            message, dropped = parse_proxy_config_annotation(annotations[ANNOTATION])
        except ProxyDefaultsError as problem:
            raise ProxyConfigInputError(f"--annotation {problem}") from None
        annotation = settings_of_mesh_proxy_config(message, f"annotation {ANNOTATION}")
        notes.extend(f"{ANNOTATION}: {name}: accepted; not applied" for name in dropped)
    configs = _proxy_configs(config_paths)
    notes.extend(
        f"ProxyConfig {c.namespace}/{c.name}: {message}"
        for c, message in ignored_namespace_wide(configs)
    )
    settings = effective_settings(
        configs, namespace, labels, root_namespace, mesh_default, annotation
    )
    if settings.image_type is not None:
        notes.append(f"image {settings.image_type}: accepted; not applied by a bootstrap")
    return AppliedProxyConfig(settings, tuple(notes))


def _proxy_configs(paths: Sequence[Path]) -> list[Config]:
    """Every ProxyConfig in ``paths``; an unreadable path or a rejected ProxyConfig is an
    error (the settings would silently differ), problems of other kinds are not."""
    loader = Loader(SCHEMAS, source="bootstrap", skip_plain=True)
    found: list[Config] = []
    for path in paths:
        try:
            files = scan_tree(path).files if path.is_dir() else [str(path)]
        except RootUnavailable as gone:
            raise ProxyConfigInputError(f"--config {path}: {gone.reason}") from None
        for file in files:
            try:
                result = loader.load_bytes(Path(file).read_bytes(), file)
            except OSError as unreadable:
                reason = unreadable.strerror or str(unreadable)
                raise ProxyConfigInputError(f"--config {file}: {reason}") from None
            for problem in result.problems:
                if problem.severity is Severity.ERROR and (
                    problem.key is None or problem.key.kind == KIND.name
                ):
                    where = f"{problem.file}:{problem.line}" if problem.line else problem.file
                    raise ProxyConfigInputError(f"--config {where}: {problem.message}")
            found.extend(c for c in result.configs if c.kind == KIND.name)
    return found

"""What ``pilothouse bootstrap`` applies of ProxyConfig, and where it reads it from.

A bootstrap is written for one proxy: its namespace (from the node id), its labels
(``--label``) and its pod's annotations (``--annotation``, of which
``proxy.istio.io/config`` counts). The ProxyConfig objects come from ``--config`` paths and
``--config-source`` addresses (:mod:`pilothouse.cli.bootstrap_inputs`) and
MeshConfig ``defaultConfig`` and ``rootNamespace`` from ``--mesh``. The effective settings
(:func:`~pilothouse.kinds.proxy_config.effective_settings`) are applied as Envoy's
``--concurrency`` (printed with ``--envoy-args``) and ``ISTIO_META_*`` variables as node
metadata (the variable's name without the prefix, as istio-agent does). Other variables
and ``image`` are accepted and named as not applied: pilothouse starts neither the
proxy's container nor its process.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from pilothouse.cli.bootstrap_inputs import BootstrapInputError, configs_in_paths
from pilothouse.config.mesh import MeshSettings
from pilothouse.config.meshconfig import MeshConfigError, load_mesh_config
from pilothouse.config.model import Config
from pilothouse.config.proxy_defaults import (
    ANNOTATION,
    ProxyDefaultsError,
    parse_proxy_config_annotation,
)
from pilothouse.kinds.proxy_config import (
    KIND,
    ProxySettings,
    effective_settings,
    ignored_namespace_wide,
    settings_of_mesh_proxy_config,
)

METADATA_PREFIX: Final = "ISTIO_META_"
"""Environment variables with this prefix become node metadata (without it)."""


class ProxyConfigInputError(BootstrapInputError):
    """A ``--config``, ``--mesh`` or ``--annotation`` input that cannot be used."""


@dataclass(frozen=True, slots=True)
class AppliedProxyConfig:
    """The effective settings of the proxy, and what to tell the user about them."""

    settings: ProxySettings
    notes: tuple[str, ...] = ()
    root_namespace: str = field(default_factory=lambda: MeshSettings().root_namespace)
    """The mesh's root namespace (``--mesh`` ``rootNamespace``), whose objects apply to
    every proxy."""

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
    *,
    configs: Sequence[Config] | None = None,
) -> AppliedProxyConfig:
    """The proxy's effective ProxyConfig from the given inputs (the ProxyConfig objects
    among ``configs``, else those in ``config_paths``); ProxyConfigInputError (or
    :class:`~pilothouse.cli.bootstrap_inputs.BootstrapInputError`) names the file,
    object or annotation that cannot be used."""
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
    if configs is None:
        configs = configs_in_paths(config_paths)
    configs = [c for c in configs if c.kind == KIND.name]
    notes.extend(
        f"ProxyConfig {c.namespace}/{c.name}: {message}"
        for c, message in ignored_namespace_wide(configs)
    )
    settings = effective_settings(
        configs, namespace, labels, root_namespace, mesh_default, annotation
    )
    if settings.image_type is not None:
        notes.append(f"image {settings.image_type}: accepted; not applied by a bootstrap")
    return AppliedProxyConfig(settings, tuple(notes), root_namespace)

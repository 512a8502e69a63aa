"""`pilothouse validate PATH...`: check Istio config files offline, as the server would.

Exit status: 0 when every object is valid (warnings allowed), 1 when anything is
invalid, 2 on usage errors (such as a path that does not exist). Whatever goes wrong
with one file (unreadable, not text, or a failure inside the loader) is a problem line
for that file, never a traceback.

Real manifests mix Istio config with Kubernetes objects: those (Service, Deployment,
Namespace, ConfigMap, any apiVersion outside Istio's groups) are counted as skipped, and
Services and Deployments get istioctl's checks as warnings
(:mod:`pilothouse.cli.manifest_checks`); ``--strict-kinds`` makes them errors again.
One object defined more than once (in one API version or several, across files) is one
error that names every place. With ``--mesh FILE``, the providers Telemetry objects name
are checked against that mesh config's ``extensionProviders`` (an unknown one is an
error naming the field).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from pilothouse.cli.manifest_checks import manifest_findings
from pilothouse.config.documents import MAX_BYTES, internal_error
from pilothouse.config.load import Loader, LoadResult, Problem, printable
from pilothouse.config.meshconfig import MeshConfigError, load_mesh_config
from pilothouse.config.model import Config, ConfigKey
from pilothouse.config.telemetry_providers import MeshTelemetry
from pilothouse.config.validation.proxyless_grpc import analyze_proxyless_grpc
from pilothouse.config.validation.report import Report, Severity
from pilothouse.config.validation.telemetry import check_telemetry_providers
from pilothouse.kinds import telemetry
from pilothouse.kinds.proxy_config import ignored_namespace_wide
from pilothouse.kinds.table import SCHEMAS
from pilothouse.settings import Settings
from pilothouse.sources.fs_tree import RootUnavailable, reason_of, scan_tree

log = logging.getLogger("pilothouse.validate")

EXIT_VALID = 0
EXIT_INVALID = 1
EXIT_USAGE = 2


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "validate",
        help="validate Istio config files or directories",
        description="Validate Istio YAML/JSON files the way pilothouse would load them.",
    )
    parser.add_argument(
        "paths", nargs="+", metavar="PATH", help="files or directories; - for stdin"
    )
    parser.add_argument("-o", "--output", choices=("text", "json"), default="text")
    parser.add_argument(
        "-n",
        "--namespace",
        default=Settings.default_namespace,
        help="namespace for objects that name none (as serve's PILOTHOUSE_DEFAULT_NAMESPACE)",
    )
    parser.add_argument(
        "--strict-kinds",
        action="store_true",
        help="objects that are not Istio config (Service, Deployment, other apiVersions)"
        " are errors instead of being skipped",
    )
    parser.add_argument(
        "--mesh",
        metavar="FILE",
        help="a mesh config (MeshConfig YAML or the istio ConfigMap): Telemetry providers"
        " are checked against its extensionProviders",
    )
    parser.set_defaults(run=run)


def _files(paths: list[str]) -> tuple[list[str], list[str], list[Problem]]:
    """The files to read, the paths that do not exist, and folders that cannot be read."""
    files: list[str] = []
    missing: list[str] = []
    unreadable: list[Problem] = []
    for raw in paths:
        if raw == "-":
            files.append("-")
            continue
        path = Path(raw)
        if path.is_dir():
            try:
                tree = scan_tree(path)
            except RootUnavailable as gone:
                message = f"cannot read the directory: {gone.reason}"
                unreadable.append(Problem(Severity.ERROR, raw, None, message))
                continue
            files.extend(tree.files)
            for folder, reason in sorted(tree.unreadable.items()):
                message = f"cannot read the directory: {reason}"
                unreadable.append(Problem(Severity.ERROR, folder, None, message))
        elif path.exists():
            files.append(str(path))
        else:
            missing.append(raw)
    return files, missing, unreadable


def _load_file(loader: Loader, file: str, stdin: TextIO) -> LoadResult:
    """One file (``-`` for standard input) loaded; never raises."""
    name = "<stdin>" if file == "-" else file
    try:
        if file == "-":
            binary = getattr(stdin, "buffer", None)
            if binary is None:
                return loader.load_text(stdin.read(), name)
            data = binary.read(MAX_BYTES + 1)
        else:
            with open(file, "rb") as handle:
                data = handle.read(MAX_BYTES + 1)
    except OSError as exc:
        return _failed(name, f"cannot read the file: {reason_of(exc)}")
    except Exception as exc:
        log.debug("reading %s failed", name, exc_info=True)
        return _failed(name, internal_error("this file", exc))
    if len(data) > MAX_BYTES:
        return _failed(name, f"file larger than {MAX_BYTES} bytes")
    try:
        return loader.load_bytes(data, name)
    except Exception as exc:  # the loader never raises; if it does, only this file fails
        log.debug("loading %s failed", name, exc_info=True)
        return _failed(name, internal_error("this file", exc))


def _failed(file: str, message: str) -> LoadResult:
    return LoadResult(problems=(Problem(Severity.ERROR, file, None, message),), unreadable=True)


@dataclass(frozen=True, slots=True)
class Outcome:
    """What ``validate`` found over its paths."""

    valid: int
    problems: list[Problem]
    skipped: Counter[str]
    """Objects that are not Istio config, by kind."""


def validate_paths(
    paths: list[str],
    namespace: str,
    stdin: TextIO,
    *,
    strict_kinds: bool = False,
    mesh: MeshTelemetry | None = None,
) -> Outcome:
    """Load every file; the valid objects, the problems and what was skipped."""
    loader = Loader(
        SCHEMAS, default_namespace=namespace, source="validate", skip_plain=not strict_kinds
    )
    places: dict[ConfigKey, list[tuple[str, str]]] = {}
    loaded: dict[ConfigKey, Config] = {}
    skipped: Counter[str] = Counter()
    files, _, problems = _files(paths)
    for file in files:
        result = _load_file(loader, file, stdin)
        problems.extend(result.problems)
        for raw in result.skipped:
            skipped[str(raw.data.get("kind"))] += 1
            findings = manifest_findings(raw.data)
            key = _key_of(raw.data, namespace) if findings else None
            for path, message in findings:
                line = raw.line_of(path)
                problems.append(Problem(Severity.WARNING, raw.file, line, message, key))
        for config, version in zip(result.configs, result.api_versions, strict=True):
            places.setdefault(config.key, []).append((str(config.origin), version))
            loaded.setdefault(config.key, config)
    for key, found in places.items():
        if len(found) > 1:
            problems.append(_duplicate(key, found, loaded[key]))
    for ignored, message in ignored_namespace_wide(loaded.values()):
        origin = ignored.origin
        problems.append(Problem(Severity.WARNING, origin.file, origin.line, message, ignored.key))
    if mesh is not None:
        problems.extend(_provider_problems(loaded.values(), mesh))
    try:
        for key, finding in analyze_proxyless_grpc(loaded.values()):
            origin = loaded[key].origin
            message = f"{finding.path}: {finding.message}"
            problems.append(Problem(finding.severity, origin.file, origin.line, message, key))
    except Exception as exc:
        log.debug("the proxyless gRPC analysis failed", exc_info=True)
        problems.append(Problem(Severity.ERROR, None, None, internal_error("the config", exc)))
    return Outcome(len(loaded), problems, skipped)


def _provider_problems(configs: Iterable[Config], mesh: MeshTelemetry) -> list[Problem]:
    """The Telemetry objects' providers checked against the mesh config's."""
    found: list[Problem] = []
    for config in configs:
        if config.kind != telemetry.KIND.name:
            continue
        report = Report(config.namespace, config.name)
        check_telemetry_providers(config.spec, mesh, report)  # type: ignore[arg-type]
        origin = config.origin
        for finding in report.findings:
            message = f"{finding.path}: {finding.message}"
            found.append(Problem(finding.severity, origin.file, origin.line, message, config.key))
    return found


def _key_of(data: Mapping[str, Any], namespace: str) -> ConfigKey | None:
    """The key a skipped object's problems are shown under (``Service shop/reviews``)."""
    metadata = data.get("metadata")
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    if not isinstance(name, str) or not isinstance(metadata, Mapping):
        return None
    return ConfigKey(str(data.get("kind")), str(metadata.get("namespace") or namespace), name)


def _duplicate(key: ConfigKey, found: list[tuple[str, str]], first: Config) -> Problem:
    """One error for an object defined more than once, pinned to its second definition."""
    file, _, line = found[1][0].rpartition(":")
    versions = {version for _, version in found}
    if len(versions) == 1:
        others = ", ".join(where for where, _ in found if where != found[1][0])
        message = f"duplicate object: also defined at {others}"
    else:
        each = ", ".join(f"{version} at {where}" for where, version in found)
        message = (
            f"the same object in several API versions ({each}): they are one object,"
            " the last one applied replaces the others; keep one"
        )
    return Problem(Severity.ERROR, file, int(line) if line.isdigit() else None, message, key)


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    missing = [p for p in args.paths if p != "-" and not Path(p).exists()]
    if missing:
        for path in missing:
            print(f"pilothouse validate: {printable(path)}: no such file or directory", file=err)
        return EXIT_USAGE
    mesh = None
    if getattr(args, "mesh", None):
        try:
            text = Path(args.mesh).read_text()
            mesh = load_mesh_config(text, args.mesh).mesh.telemetry
        except (OSError, UnicodeDecodeError, MeshConfigError) as exc:
            print(f"pilothouse validate: --mesh: {exc}", file=err)
            return EXIT_USAGE
    outcome = validate_paths(
        args.paths,
        args.namespace,
        sys.stdin,
        strict_kinds=getattr(args, "strict_kinds", False),
        mesh=mesh,
    )
    valid, problems = outcome.valid, outcome.problems
    errors = [p for p in problems if p.severity is Severity.ERROR]
    skipped = sum(outcome.skipped.values())
    if args.output == "json":
        json.dump(
            {
                "valid": not errors,
                "validObjects": valid,
                "skippedObjects": skipped,
                "skippedKinds": dict(sorted(outcome.skipped.items())),
                "errors": len(errors),
                "warnings": len(problems) - len(errors),
                "problems": [p.as_dict() for p in problems],
            },
            out,
            indent=2,
        )
        out.write("\n")
    else:
        for problem in problems:
            print(problem, file=out)
        verdict = "invalid" if errors else "valid"
        kinds = ", ".join(f"{kind} {count}" for kind, count in sorted(outcome.skipped.items()))
        not_istio = f", {skipped} skipped as not Istio config ({kinds})" if skipped else ""
        print(
            f"{verdict}: {valid} valid object(s){not_istio}, {len(errors)} error(s), "
            f"{len(problems) - len(errors)} warning(s)",
            file=err,
        )
    return EXIT_INVALID if errors else EXIT_VALID

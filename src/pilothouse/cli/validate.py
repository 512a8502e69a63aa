"""`pilothouse validate PATH...`: check Istio config files offline, as the server would.

Exit status: 0 when every object is valid (warnings allowed), 1 when anything is
invalid, 2 on usage errors (such as a path that does not exist). Whatever goes wrong
with one file (unreadable, not text, or a failure inside the loader) is a problem line
for that file, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import TextIO

from pilothouse.config.documents import MAX_BYTES, internal_error
from pilothouse.config.load import Loader, LoadResult, Problem, printable
from pilothouse.config.model import Config, ConfigKey
from pilothouse.config.validation.proxyless_grpc import analyze_proxyless_grpc
from pilothouse.config.validation.report import Severity
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


def validate_paths(paths: list[str], namespace: str, stdin: TextIO) -> tuple[int, list[Problem]]:
    """Load every file; returns (number of valid objects, problems)."""
    loader = Loader(SCHEMAS, default_namespace=namespace, source="validate", skip_plain=True)
    seen: dict[ConfigKey, str] = {}
    loaded: dict[ConfigKey, Config] = {}
    valid = 0
    files, _, problems = _files(paths)
    for file in files:
        result = _load_file(loader, file, stdin)
        problems.extend(result.problems)
        for config in result.configs:
            where = f"{config.origin.file}:{config.origin.line}"
            if config.key in seen:
                problems.append(
                    Problem(
                        Severity.ERROR,
                        config.origin.file,
                        config.origin.line,
                        f"duplicate object: also defined at {seen[config.key]}",
                        config.key,
                    )
                )
                continue
            seen[config.key] = where
            loaded[config.key] = config
            valid += 1
    try:
        for key, finding in analyze_proxyless_grpc(loaded.values()):
            origin = loaded[key].origin
            message = f"{finding.path}: {finding.message}"
            problems.append(Problem(finding.severity, origin.file, origin.line, message, key))
    except Exception as exc:
        log.debug("the proxyless gRPC analysis failed", exc_info=True)
        problems.append(Problem(Severity.ERROR, None, None, internal_error("the config", exc)))
    return valid, problems


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    missing = [p for p in args.paths if p != "-" and not Path(p).exists()]
    if missing:
        for path in missing:
            print(f"pilothouse validate: {printable(path)}: no such file or directory", file=err)
        return EXIT_USAGE
    valid, problems = validate_paths(args.paths, args.namespace, sys.stdin)
    errors = [p for p in problems if p.severity is Severity.ERROR]
    if args.output == "json":
        json.dump(
            {
                "valid": not errors,
                "validObjects": valid,
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
        print(
            f"{verdict}: {valid} valid object(s), {len(errors)} error(s), "
            f"{len(problems) - len(errors)} warning(s)",
            file=err,
        )
    return EXIT_INVALID if errors else EXIT_VALID

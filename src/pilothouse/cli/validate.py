"""`pilothouse validate PATH...`: check Istio config files offline, as the server would.

Exit status: 0 when every object is valid (warnings allowed), 1 when anything is
invalid, 2 on usage errors (such as a path that does not exist).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TextIO

from pilothouse.config.load import Loader, Problem
from pilothouse.config.model import Config, ConfigKey
from pilothouse.config.validation.proxyless_grpc import analyze_proxyless_grpc
from pilothouse.config.validation.report import Severity
from pilothouse.settings import Settings
from pilothouse.sources.fs import FileSource

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


def _files(paths: list[str]) -> tuple[list[str], list[str]]:
    files: list[str] = []
    missing: list[str] = []
    for raw in paths:
        if raw == "-":
            files.append("-")
            continue
        path = Path(raw)
        if path.is_dir():
            files.extend(FileSource(path).scan())
        elif path.is_file():
            files.append(str(path))
        else:
            missing.append(raw)
    return files, missing


def validate_paths(paths: list[str], namespace: str, stdin: TextIO) -> tuple[int, list[Problem]]:
    """Load every file; returns (number of valid objects, problems)."""
    loader = Loader(default_namespace=namespace, source="validate")
    problems: list[Problem] = []
    seen: dict[ConfigKey, str] = {}
    loaded: dict[ConfigKey, Config] = {}
    valid = 0
    files, _ = _files(paths)
    for file in files:
        try:
            text = stdin.read() if file == "-" else Path(file).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            problems.append(Problem(Severity.ERROR, file, None, f"cannot read: {exc}"))
            continue
        name = "<stdin>" if file == "-" else file
        result = loader.load_text(text, name)
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
    for key, finding in analyze_proxyless_grpc(loaded.values()):
        origin = loaded[key].origin
        message = f"{finding.path}: {finding.message}"
        problems.append(Problem(finding.severity, origin.file, origin.line, message, key))
    return valid, problems


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    _, missing = _files(args.paths)
    if missing:
        for path in missing:
            print(f"pilothouse validate: {path}: no such file or directory", file=err)
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

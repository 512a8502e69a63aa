"""`pilothouse analyze [PATH...] [--store etcd://…] [--admin URL]`: istioctl analyze's
checks over a whole config set, from files, from the etcd store, or as a running
server sees its own (``/debug/analyzez``).

Each finding is one line as istioctl prints it, ``Error [IST0101] (VirtualService
bookinfo/reviews routing.yaml:12) Referenced host not found: "…"``; ``-o json|yaml``
gives the list istioctl's ``-o json`` gives. Objects that do not validate are IST0106
findings and are left out of the other checks. Exit status: 0, or 79 (istioctl's) when
a finding is at or above ``--failure-threshold`` (default Error); 2 on usage errors
(no input, a path that does not exist, a store or server that cannot be read).

``--impact FILE --admin URL`` asks instead what applying FILE would push, proxy by
proxy (:mod:`pilothouse.cli.impact`).
"""

from __future__ import annotations

import argparse
import asyncio
import fnmatch
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import aetcd

from pilothouse.admin.analysis import PATH as ANALYZEZ
from pilothouse.analysis.analyzers import ANALYZERS, analyze
from pilothouse.analysis.field_lines import pinned
from pilothouse.analysis.mesh_view import mesh_view
from pilothouse.analysis.messages import Level, Message, message_from_dict
from pilothouse.analysis.report import EXIT_CLEAN, NO_ISSUES, exit_status, render, shown
from pilothouse.analysis.schema import schema_messages
from pilothouse.cli.admin_client import BadAdminAddress, admin_url, ask_all
from pilothouse.cli.impact import run_impact
from pilothouse.cli.store_session import (
    StoreUnreachable,
    add_etcd_arguments,
    connected,
    etcd_settings,
    store_of,
)
from pilothouse.cli.validate import _files, _load_file
from pilothouse.config.load import Loader, printable
from pilothouse.config.model import Config
from pilothouse.config.problems import Problem
from pilothouse.kinds.table import SCHEMAS
from pilothouse.settings import Settings
from pilothouse.sources.etcd_client import EtcdUnavailable, list_prefix, reason

EXIT_USAGE = 2


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "analyze",
        help="find problems across Istio config (istioctl analyze's checks)",
        description="Analyze Istio config as a whole: references, selectors, conflicts.",
    )
    parser.add_argument(
        "paths", nargs="*", metavar="PATH", help="files or directories; - for stdin"
    )
    parser.add_argument(
        "--store", metavar="ADDRESS", help="analyze the objects of etcd://host:port/prefix"
    )
    parser.add_argument(
        "--admin",
        metavar="URL",
        help="print a running server's own analysis (its /debug/analyzez), e.g. localhost:15014",
    )
    parser.add_argument(
        "--impact",
        action="append",
        metavar="FILE|DIR",
        help="with --admin: which proxies applying these objects would push, and what would"
        " change for each (repeatable; - for stdin); nothing is applied",
    )
    parser.add_argument("-o", "--output", choices=("log", "json", "yaml"), default="log")
    parser.add_argument(
        "-n",
        "--namespace",
        default=Settings.default_namespace,
        help="namespace for objects that name none",
    )
    parser.add_argument(
        "--failure-threshold",
        type=Level.named,
        default=Level.ERROR,
        metavar="LEVEL",
        help="the level (Info, Warning, Error) at which the exit status is 79 (default Error)",
    )
    parser.add_argument(
        "--output-threshold",
        type=Level.named,
        default=Level.INFO,
        metavar="LEVEL",
        help="the lowest level printed (default Info)",
    )
    parser.add_argument(
        "-S",
        "--suppress",
        action="append",
        default=[],
        metavar="CODE=RESOURCE",
        help="leave out a code on a resource, e.g. 'IST0101=VirtualService bookinfo/*'"
        " (repeatable; * matches any text)",
    )
    parser.add_argument(
        "-L", "--list-analyzers", action="store_true", help="list the analyzers and exit"
    )
    parser.add_argument(
        "--request-timeout", type=float, default=10.0, metavar="SECONDS", help="per request"
    )
    add_etcd_arguments(parser)
    parser.set_defaults(run=run)


@dataclass
class Input:
    """What was read: valid objects, plain Kubernetes objects beside them, problems."""

    configs: dict[Any, Config] = field(default_factory=dict)
    plain: list[Mapping[str, Any]] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    """The files read (their objects' fields are pinned to lines)."""


def read_files(paths: Sequence[str], namespace: str, stdin: TextIO) -> Input:
    """Every object of the files and directories (``-``: standard input)."""
    loader = Loader(SCHEMAS, default_namespace=namespace, source="analyze", skip_plain=True)
    read = Input()
    files, _, unreadable = _files(list(paths))
    read.problems.extend(unreadable)
    read.files = [f for f in files if f != "-"]
    for file in files:
        result = _load_file(loader, file, stdin)
        read.problems.extend(result.problems)
        read.plain.extend(raw.data for raw in result.skipped)
        for config in result.configs:
            read.configs.setdefault(config.key, config)
    return read


async def read_store(args: argparse.Namespace) -> Input:
    """Every object kept in the etcd store ``--store``."""
    store = store_of(args.store, SCHEMAS, etcd_settings(args))
    loader = Loader(SCHEMAS, source="etcd")
    read = Input()
    async with connected(store, args.request_timeout) as client:
        listing = await list_prefix(client, store.layout.root)
    for kv in listing.kvs:
        if store.layout.is_reserved(kv.key):
            continue
        stored = store.layout.decode(loader, kv.key, kv.value, kv.mod_revision)
        read.problems.extend(stored.problems)
        if stored.config is not None:
            read.configs.setdefault(stored.config.key, stored.config)
    return read


def analyze_input(read: Input, namespace: str) -> list[Message]:
    """Schema findings, then every analyzer's over the valid objects."""
    view = mesh_view(read.configs.values(), read.plain, default_namespace=namespace)
    found = [*schema_messages(read.problems), *pinned(analyze(view), read.files)]
    return sorted(found, key=Message.sort_key)


def suppressed(message: Message, rules: Sequence[str]) -> bool:
    for rule in rules:
        code, _, resource = rule.partition("=")
        if code.strip() == message.type.code and fnmatch.fnmatchcase(
            message.resource, resource.strip()
        ):
            return True
    return False


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    if args.list_analyzers:
        for analyzer in ANALYZERS:
            print(f"* {analyzer.name}:\n    {analyzer.description}", file=out)
        return EXIT_CLEAN
    if args.impact:
        if not args.admin:
            print("pilothouse analyze: --impact asks a running server: give --admin", file=err)
            return EXIT_USAGE
        return run_impact(
            args.impact, [args.admin], namespace=args.namespace,
            output="table" if args.output == "log" else args.output,
            timeout=args.request_timeout, stdin=sys.stdin, out=out, err=err,
        )  # fmt: skip
    if args.admin:
        return _remote(args, out, err)
    if not args.paths and not args.store:
        print("pilothouse analyze: give files or directories, --store or --admin", file=err)
        return EXIT_USAGE
    missing = [p for p in args.paths if p != "-" and not Path(p).exists()]
    for path in missing:
        print(f"pilothouse analyze: {printable(path)}: no such file or directory", file=err)
    if missing:
        return EXIT_USAGE
    read = read_files(args.paths, args.namespace, sys.stdin)
    if args.store:
        try:
            stored = asyncio.run(read_store(args))
        except ValueError as problem:
            print(f"pilothouse analyze: {problem}", file=err)
            return EXIT_USAGE
        except (StoreUnreachable, EtcdUnavailable, aetcd.exceptions.ClientError) as problem:
            print(f"pilothouse analyze: {reason(problem)}", file=err)
            return EXIT_USAGE
        for key, config in stored.configs.items():
            read.configs.setdefault(key, config)
        read.problems.extend(stored.problems)
    messages = [m for m in analyze_input(read, args.namespace) if not suppressed(m, args.suppress)]
    subject = " ".join([*args.paths, *([args.store] if args.store else [])])
    return _print(messages, args, subject, out, err)


def _print(
    messages: list[Message], args: argparse.Namespace, subject: str, out: TextIO, err: TextIO
) -> int:
    visible = shown(messages, args.output_threshold)
    if args.output == "log" and not visible:
        err.write(NO_ISSUES.format(subject) + "\n")
    else:
        out.write(render(visible, args.output, subject))
    return exit_status(messages, args.failure_threshold)


def _remote(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """A running server's analysis, printed and judged as a local one."""
    try:
        base = admin_url(args.admin)
    except BadAdminAddress as bad:
        print(f"pilothouse analyze: {bad}", file=err)
        return EXIT_USAGE
    url = base + ANALYZEZ
    (answer,) = asyncio.run(ask_all([base], ANALYZEZ, timeout=args.request_timeout))
    if not answer.ok:
        print(f"pilothouse analyze: cannot read {url}: {answer.problem}", file=err)
        return EXIT_USAGE
    try:
        messages = [message_from_dict(item) for item in answer.body["messages"]]
    except (ValueError, KeyError, TypeError, AttributeError) as problem:
        print(f"pilothouse analyze: cannot read {url}: {problem!r}", file=err)
        return EXIT_USAGE
    kept = [m for m in messages if not suppressed(m, args.suppress)]
    return _print(kept, args, url, out, err)

"""``pilothouse version [--remote] [--admin URL]... [-o short|json|yaml]``: istioctl's.

Without ``--remote``, the client's version (``pilothouse 0.1.0``). With it, the control
plane's too, read from ``/version`` on the admin API of each replica given with
``--admin`` (repeatable, or ``A,B``; default: the local admin address), as istioctl reads
istiod's. ``-o short`` prints ``client version: V`` and ``control plane version: V``
(distinct versions joined by commas); the default adds each replica's name and
address; ``json`` and ``yaml`` follow istioctl's shape (``clientVersion``,
``meshVersion`` with one entry per replica). A replica that cannot be read is named on
stderr and the exit status is 1.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import sys
from typing import Any, Final

import yaml

from pilothouse import __version__
from pilothouse.cli.admin_client import BadAdminAddress, ReplicaAnswer, ask_all
from pilothouse.cli.proxy_status import admin_urls, report_failures
from pilothouse.environment import SettingsError

PROG: Final = "pilothouse version"
COMPONENT: Final = "pilothouse"
VERSION_PATH: Final = "/version"


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "version",
        help="print the client's version (and the control plane's, with --remote)",
        description="The client's version; with --remote, each replica's too.",
    )
    parser.add_argument(
        "--remote", action="store_true", help="also ask the control plane for its version"
    )
    parser.add_argument(
        "--admin",
        action="append",
        metavar="URL",
        help="with --remote: admin address of a replica, http://host:port or host:port; "
        "repeat it (or give A,B) for several (default: PILOTHOUSE_ADMIN_ADDRESS, else "
        "127.0.0.1:15014)",
    )
    parser.add_argument(
        "--timeout", type=float, default=10.0, metavar="S", help="seconds per replica (10)"
    )
    parser.add_argument("-o", "--output", choices=("text", "short", "json", "yaml"))
    parser.set_defaults(run=run)


def client_version() -> dict[str, str]:
    return {"version": __version__, "pythonVersion": platform.python_version()}


def run(args: argparse.Namespace) -> int:
    if not args.remote:
        if args.admin:
            print(f"{PROG}: --admin is only read with --remote", file=sys.stderr)
            return 2
        return _show({"clientVersion": client_version()}, args.output, [])
    try:
        urls = admin_urls(args.admin)
    except (BadAdminAddress, SettingsError) as problem:
        print(f"{PROG}: {problem}", file=sys.stderr)
        return 2
    answers = asyncio.run(ask_all(urls, VERSION_PATH, timeout=args.timeout))
    failed = report_failures(PROG, answers)
    read = [a for a in answers if a.ok and isinstance(a.body, dict)]
    report = {
        "clientVersion": client_version(),
        "meshVersion": [{"Component": COMPONENT, "Admin": a.url, "Info": a.body} for a in read],
    }
    _show(report, args.output, read)
    return 1 if failed else 0


def _show(report: dict[str, Any], output: str | None, read: list[ReplicaAnswer]) -> int:
    if output == "json":
        print(json.dumps(report, indent=2))
    elif output == "yaml":
        print(yaml.safe_dump(report, sort_keys=False), end="")
    elif "meshVersion" not in report:
        print(f"pilothouse {__version__}" if output is None else f"client version: {__version__}")
    else:
        print(f"client version: {__version__}")
        versions = [str(a.body.get("version", "unknown")) for a in read]
        if output == "short":
            if versions:
                print(f"control plane version: {', '.join(dict.fromkeys(versions))}")
        else:
            for answer, version in zip(read, versions, strict=True):
                replica = answer.body.get("replica", "")
                print(f"control plane version: {version} (replica {replica} at {answer.url})")
    return 0

"""`pilothouse inspect` (module named so as not to shadow the standard `inspect`): does a
proxy hold what pilothouse sent it and it acknowledged?

``pilothouse inspect PROXY [--envoy-admin HOST:PORT]`` reads the proxy's Envoy
``/config_dump?include_eds`` and pilothouse's ``/debug/acked`` for it, and compares
them resource by resource (:mod:`pilothouse.inspector`). ``--sample N`` inspects N
connected proxies chosen at random among those whose node metadata names their Envoy
admin address (``ENVOY_ADMIN_ADDRESS``). ``--admin`` is pilothouse's admin address
(default: ``PILOTHOUSE_ADMIN_ADDRESS``, else 127.0.0.1:15014); given several times, or as
``A,B``, the proxies of every replica are inspected, each read from the replica holding
it (:class:`~pilothouse.inspector.replicas.ReplicaAdmins`). ``-n NS`` completes a bare pod
name to ``pod.NS``, as istioctl does.

Exit status: 0 SYNCED (every proxy, with ``--sample``), 1 DIVERGED (any), 2 usage
error, 3 could not inspect (pilothouse or an Envoy unreachable, the proxy not
connected; with ``--sample``: some proxy failed and none diverged).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
from typing import Final

import aiohttp

from pilothouse.cli.admin_client import BadAdminAddress
from pilothouse.cli.proxy_status import admin_urls, proxy_name
from pilothouse.environment import SettingsError
from pilothouse.inspector.admin_clients import EnvoyAdmin, InspectionFailed, PilothouseAdmin
from pilothouse.inspector.compare import Verdict
from pilothouse.inspector.inspection import Inspection, Inspector, Sample
from pilothouse.inspector.message_types import MessageTypes
from pilothouse.inspector.replicas import ReplicaAdmins
from pilothouse.inspector.report import (
    inspection_json,
    inspection_text,
    sample_json,
    sample_text,
)
from pilothouse.settings import Settings

SYNCED: Final = 0
DIVERGED: Final = 1
USAGE: Final = 2
FAILED: Final = 3


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "inspect",
        help="compare what a proxy holds with what it acknowledged",
        description="Compare what a proxy's Envoy holds (its /config_dump) with what "
        "pilothouse sent it and it acknowledged: SYNCED or DIVERGED, with the resources "
        "that differ.",
    )
    parser.add_argument(
        "proxy", nargs="?", metavar="PROXY", help="node id, or pod.namespace (Istio's proxy ID)"
    )
    parser.add_argument(
        "--envoy-admin",
        metavar="URL",
        help="the proxy's Envoy admin address (default: its ENVOY_ADMIN_ADDRESS metadata)",
    )
    parser.add_argument(
        "--sample",
        type=_positive,
        metavar="N",
        help="inspect N connected proxies chosen at random among those whose metadata "
        "names their Envoy admin address",
    )
    parser.add_argument(
        "--admin",
        action="append",
        metavar="URL",
        help="pilothouse's admin address; repeat it (or give A,B) for several replicas "
        f"(default: PILOTHOUSE_ADMIN_ADDRESS, else {Settings().admin.address})",
    )
    parser.add_argument(
        "-n", "--namespace", metavar="NS", help="the namespace of a PROXY given as a pod name"
    )
    parser.add_argument(
        "--recheck",
        type=float,
        default=1.0,
        metavar="SECONDS",
        help="look again after this long before reporting DIVERGED, so that a push on its "
        "way is not reported (default 1; 0: report the first look)",
    )
    parser.add_argument(
        "--timeout", type=float, default=10.0, metavar="SECONDS", help="per HTTP request"
    )
    parser.add_argument("-o", "--output", choices=("text", "json"), default="text")
    parser.set_defaults(run=run)


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def run(args: argparse.Namespace) -> int:
    if (args.proxy is None) == (args.sample is None):
        return _usage("give a PROXY or --sample N (not both)")
    if args.sample is not None and args.envoy_admin:
        return _usage("--envoy-admin names one proxy's Envoy; --sample reads them from metadata")
    if args.recheck < 0 or args.timeout <= 0:
        return _usage("--recheck must be 0 or more and --timeout more than 0")
    try:
        admins = admin_urls(args.admin)
    except (BadAdminAddress, SettingsError) as problem:
        return _usage(str(problem))
    if args.proxy is not None:
        args.proxy = proxy_name(args.proxy, args.namespace)
    return asyncio.run(_inspect(args, admins))


async def _inspect(args: argparse.Namespace, admins: list[str]) -> int:
    timeout = aiohttp.ClientTimeout(total=args.timeout)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        pilothouse = (
            PilothouseAdmin(session, admins[0])
            if len(admins) == 1
            else ReplicaAdmins(session, admins)
        )
        inspector = Inspector(
            pilothouse,
            lambda address: EnvoyAdmin(session, address),
            MessageTypes(),
            recheck=args.recheck,
        )
        try:
            if args.sample is not None:
                return _show_sample(await inspector.sample(args.sample, random.Random()), args)
            return _show(await inspector.inspect(args.proxy, args.envoy_admin), args)
        except InspectionFailed as problem:
            print(f"pilothouse inspect: {problem}", file=sys.stderr)
            return FAILED
        finally:
            for unread in getattr(pilothouse, "unreachable", ()):
                print(f"pilothouse inspect: warning: {unread}", file=sys.stderr)


def _show(inspection: Inspection, args: argparse.Namespace) -> int:
    if args.output == "json":
        print(json.dumps(inspection_json(inspection), indent=2))
    else:
        print(inspection_text(inspection), end="")
    return SYNCED if inspection.verdict is Verdict.SYNCED else DIVERGED


def _show_sample(sample: Sample, args: argparse.Namespace) -> int:
    if args.output == "json":
        print(json.dumps(sample_json(sample), indent=2))
    else:
        print(sample_text(sample), end="")
    if not sample.inspections and not sample.failures:
        print(
            "pilothouse inspect: no connected proxy names its Envoy admin address "
            "(node metadata ENVOY_ADMIN_ADDRESS)",
            file=sys.stderr,
        )
        return FAILED
    if any(i.verdict is Verdict.DIVERGED for i in sample.inspections):
        return DIVERGED
    return FAILED if sample.failures else SYNCED


def _usage(message: str) -> int:
    print(f"pilothouse inspect: {message}", file=sys.stderr)
    return USAGE

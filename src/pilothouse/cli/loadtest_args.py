"""The ``loadtest`` command line: its flags, and the run they ask for.

:func:`add_arguments` declares the flags; :func:`spec_from_args` checks them (addresses,
ranges, which flags go with which scenario and flavour) into a
:class:`~pilothouse.loadtest.spec.LoadSpec`, or raises :class:`UsageError` saying what
is wrong.
"""

from __future__ import annotations

import argparse
import os
import re
from typing import Final

from pilothouse.addresses import AddressError, parse_host_port
from pilothouse.loadtest.identity import ProxyFlavour
from pilothouse.loadtest.plans import EnvoyPlan, GrpcPlan, parse_types
from pilothouse.loadtest.spec import LoadSpec, Scenario, Trigger

MAX_PROXIES: Final = 100_000
MAX_PROCESSES: Final = 64
MAX_SECONDS: Final = 600.0
MAX_RATE: Final = 100.0
MAX_REPEAT: Final = 100
MAX_STREAMS_PER_CONNECTION: Final = 1000
_LABEL: Final = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


class UsageError(ValueError):
    """A flag is missing, malformed or out of range."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of ``pilothouse loadtest``."""
    parser.add_argument(
        "--server",
        action="append",
        metavar="HOST:PORT",
        help="the ADS server (required); repeat it, or separate addresses with commas, for "
        "replicas: each (re)connect picks one at random, as behind a Service VIP",
    )
    parser.add_argument("--proxies", type=int, default=100, metavar="N", help="default 100")
    parser.add_argument(
        "--processes",
        type=int,
        default=1,
        metavar="K",
        help="spread the proxies over K processes (default 1)",
    )
    parser.add_argument("--delta", action="store_true", help="delta ADS instead of SotW")
    parser.add_argument(
        "--flavour",
        choices=[flavour.value for flavour in ProxyFlavour],
        default=ProxyFlavour.SIDECAR.value,
        help="sidecar (default) or router Envoys, or proxyless grpc clients",
    )
    parser.add_argument(
        "--target",
        action="append",
        metavar="HOST:PORT",
        help="grpc flavour: a target the clients ask LDS for (repeatable)",
    )
    parser.add_argument(
        "--types",
        default="cds,eds,lds,rds",
        metavar="T,T",
        help="the xDS types each proxy asks for, of cds,eds,lds,rds (default all); "
        "convergence waits for these only. EDS needs CDS, RDS needs LDS",
    )
    parser.add_argument(
        "--namespaces",
        default="default",
        metavar="A,B,C",
        help="namespaces the proxies are spread over (default: default)",
    )
    parser.add_argument(
        "--scenario", choices=[scenario.value for scenario in Scenario], default="connect"
    )
    parser.add_argument(
        "--ramp", type=float, default=0.0, metavar="S", help="start the proxies over S seconds"
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=30.0,
        metavar="S",
        help="longest wait for convergence, at the start and after each change (default 30)",
    )
    parser.add_argument(
        "--duration", type=float, metavar="S", help="churn: how long to make changes (default 30)"
    )
    parser.add_argument(
        "--rate", type=float, metavar="R", help="churn: changes per second (default 1)"
    )
    parser.add_argument("--repeat", type=int, metavar="R", help="push: changes (default 1)")
    parser.add_argument(
        "--quiet-for",
        type=float,
        default=0.5,
        metavar="S",
        help="push/churn: seconds the fleet must see nothing before a change (default 0.5)",
    )
    parser.add_argument(
        "--trigger",
        metavar="CMD",
        help="push/churn: a shell command that makes a change (gets PILOTHOUSE_LOADTEST_CHANGE)",
    )
    parser.add_argument(
        "--trigger-file", metavar="PATH", help="push/churn: a file to write to make a change"
    )
    parser.add_argument(
        "--trigger-content",
        metavar="TEXT",
        help="what --trigger-file gets; {n} becomes the change's number",
    )
    parser.add_argument(
        "--streams-per-connection",
        type=int,
        default=100,
        metavar="N",
        help="ADS streams sharing one HTTP/2 connection (default 100)",
    )
    parser.add_argument(
        "--admin",
        metavar="HOST:PORT",
        help="the server's HTTP admin: wait for /ready, read /metrics process figures",
    )
    parser.add_argument(
        "--server-pid",
        type=int,
        metavar="PID",
        help="a local server's pid: RSS and CPU from /proc, its child processes added",
    )
    parser.add_argument("-o", "--output", choices=("text", "json"), default="text")
    parser.add_argument("--quiet", action="store_true", help="no progress display")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)


def parse_address(text: str, flag: str) -> str:
    """``HOST:PORT`` (``[v6]:PORT`` too) to dial, checked by the one address parser;
    returned as given."""
    try:
        parse_host_port(text, flag, dial=True)
    except AddressError as problem:
        raise UsageError(str(problem)) from None
    return text


def _within(value: float, low: float, high: float, flag: str, *, open_low: bool = False) -> None:
    if (value <= low if open_low else value < low) or value > high:
        bound = f"more than {low:g}" if open_low else f"at least {low:g}"
        raise UsageError(f"{flag} must be {bound} and at most {high:g}, got {value:g}")


def _only_for(args: argparse.Namespace, flag: str, scenario: Scenario, spec: Scenario) -> None:
    name = flag.lstrip("-").replace("-", "_")
    if getattr(args, name) is not None and spec is not scenario:
        raise UsageError(f"{flag} applies to --scenario {scenario.value} only")


def _trigger(args: argparse.Namespace, scenario: Scenario) -> Trigger:
    if args.trigger is not None and args.trigger_file is not None:
        raise UsageError("give --trigger or --trigger-file, not both")
    if args.trigger_content is not None and args.trigger_file is None:
        raise UsageError("--trigger-content needs --trigger-file")
    if args.trigger_file is not None and args.trigger_content is None:
        raise UsageError("--trigger-file needs --trigger-content (the text to write)")
    trigger = Trigger(args.trigger, args.trigger_file, args.trigger_content or "")
    if scenario is Scenario.CONNECT and trigger.given:
        raise UsageError("--scenario connect makes no changes: drop --trigger/--trigger-file")
    if scenario is not Scenario.CONNECT and not trigger.given:
        raise UsageError(
            f"--scenario {scenario.value} needs --trigger CMD or --trigger-file PATH "
            "--trigger-content TEXT"
        )
    if trigger.command is not None and not trigger.command.strip():
        raise UsageError("--trigger: the command is empty")
    return trigger


def _types(text: str, flavour: ProxyFlavour, targets: tuple[str, ...]) -> tuple[str, ...]:
    """``--types``, checked against the flavour's order of requests."""
    try:
        types = parse_types(text)
        if flavour is ProxyFlavour.GRPC:
            GrpcPlan(frozenset(targets), types=types)
        else:
            EnvoyPlan(types=types)
    except ValueError as problem:
        raise UsageError(f"--types: {problem}") from None
    return tuple(sorted(types))


def spec_from_args(args: argparse.Namespace) -> LoadSpec:
    """The run the flags ask for, or ``UsageError`` saying what is wrong."""
    if not args.server:
        raise UsageError("--server HOST:PORT is required")
    addresses = [part.strip() for given in args.server for part in given.split(",")]
    server = ",".join(dict.fromkeys(parse_address(part, "--server") for part in addresses))
    _within(args.proxies, 1, MAX_PROXIES, "--proxies")
    _within(args.processes, 1, MAX_PROCESSES, "--processes")
    if args.processes > args.proxies:
        raise UsageError(
            f"--processes {args.processes} is more than --proxies {args.proxies}: "
            "every process needs at least one proxy"
        )
    scenario = Scenario(args.scenario)
    flavour = ProxyFlavour(args.flavour)
    targets = tuple(parse_address(target, "--target") for target in args.target or ())
    if flavour is ProxyFlavour.GRPC and not targets:
        raise UsageError("--flavour grpc needs at least one --target HOST:PORT to ask for")
    if flavour is not ProxyFlavour.GRPC and targets:
        raise UsageError("--target applies to --flavour grpc only")
    types = _types(args.types, flavour, targets)
    namespaces = tuple(name.strip() for name in args.namespaces.split(","))
    for name in namespaces:
        if not _LABEL.match(name):
            raise UsageError(f"--namespaces: {name!r} is not a namespace name")
    _within(args.ramp, 0, MAX_SECONDS, "--ramp")
    _within(args.timeout, 0, MAX_SECONDS, "--timeout", open_low=True)
    _within(args.quiet_for, 0, MAX_SECONDS, "--quiet-for")
    for flag, only in (
        ("--duration", Scenario.CHURN),
        ("--rate", Scenario.CHURN),
        ("--repeat", Scenario.PUSH),
    ):
        _only_for(args, flag, only, scenario)
    duration = 30.0 if args.duration is None else args.duration
    rate = 1.0 if args.rate is None else args.rate
    repeat = 1 if args.repeat is None else args.repeat
    _within(duration, 0, MAX_SECONDS, "--duration", open_low=True)
    _within(rate, 0, MAX_RATE, "--rate", open_low=True)
    _within(repeat, 1, MAX_REPEAT, "--repeat")
    _within(args.streams_per_connection, 1, MAX_STREAMS_PER_CONNECTION, "--streams-per-connection")
    if args.admin is not None:
        parse_address(args.admin, "--admin")
    if args.server_pid is not None:
        if args.server_pid < 1:
            raise UsageError(f"--server-pid must be positive, got {args.server_pid}")
        if not os.path.exists(f"/proc/{args.server_pid}"):
            raise UsageError(f"--server-pid: no process {args.server_pid} (or no /proc)")
    return LoadSpec(
        server=server,
        proxies=args.proxies,
        processes=args.processes,
        delta=args.delta,
        flavour=flavour,
        targets=targets,
        namespaces=namespaces,
        scenario=scenario,
        ramp=args.ramp,
        timeout=args.timeout,
        duration=duration,
        rate=rate,
        repeat=repeat,
        quiet=args.quiet_for,
        trigger=_trigger(args, scenario),
        streams_per_connection=args.streams_per_connection,
        types=types,
    )

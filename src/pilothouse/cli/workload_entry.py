"""`pilothouse workload entry configure`: what a VM or bare-metal workload needs to join the
mesh, written into one directory (``istioctl x workload entry configure``'s job).

The workload's WorkloadGroup comes from ``-f`` files or directories, from
``--config-source`` addresses (``etcd://``, ``k8s://``, ``xds://``, ``mcp://``,
``fs://``, as ``serve`` takes them), or, with neither, is made from ``--name``,
``-n`` and ``--service-account`` (labels ``app: <name>``). ``-o DIR`` then receives:

- ``root-cert.pem``: the mesh's root, copied from the CA directory (``--ca-dir``, the
  one ``serve`` made on its first start);
- ``istio-token``: a token for the group's service account (audience ``istio-ca``,
  ``--token-duration``, an hour by default) from pilothouse's own token issuer
  (``--issuer-dir``, created on first use), which ``serve`` trusts without flags;
- ``workloadentry.yaml``: the WorkloadEntry the workload will have
  (:mod:`.workload_template`), to add to the mesh;
- ``agent.sh``: the ``pilothouse agent`` command that runs the workload's sidecar with
  these files, which is also printed as the next step.

Every input is checked before anything is written (a missing group, an unreadable or
malformed file, a missing CA, an output path that is no directory): an error names what
is wrong and leaves ``DIR`` as it was. Files are replaced when they exist.
"""

from __future__ import annotations

import argparse
import ipaddress
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from pilothouse.api.istio.networking.v1alpha3 import workload_entry_pb2, workload_group_pb2
from pilothouse.atomic_file import replace_file
from pilothouse.cli.bootstrap_files import checked_file
from pilothouse.cli.bootstrap_inputs import (
    BootstrapInputError,
    configs_from_sources,
    configs_in_paths,
)
from pilothouse.cli.tokens import parse_duration
from pilothouse.cli.workload_template import (
    AGENT_FILE,
    DEFAULT_TRUST_DOMAIN,
    ENTRY_FILE,
    ROOT_FILE,
    TOKEN_FILE,
    AgentPorts,
    Workload,
    command_line,
)
from pilothouse.config.load import Loader
from pilothouse.config.model import Config
from pilothouse.config.validation.report import Severity
from pilothouse.environment import from_environment
from pilothouse.kinds.table import SCHEMAS
from pilothouse.kinds.workload_group import KIND as WORKLOAD_GROUP
from pilothouse.security.ca_dir import ROOT_CERT
from pilothouse.security.token_issuer import KEY_FILE, TokenIssuer, TokenIssuerError
from pilothouse.settings import AuthSettings, CaSettings, Settings

PROG = "pilothouse workload entry configure"
GROUP_KINDS = frozenset({WORKLOAD_GROUP.name})


class ConfigureError(ValueError):
    """An input or the output directory cannot be used; the message says which and why."""


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    workload = commands.add_parser(
        "workload",
        help="workloads outside Kubernetes (istioctl x workload)",
        description="Workloads outside Kubernetes: VMs and bare-metal hosts.",
    )
    kinds = workload.add_subparsers(dest="workload_kind", metavar="KIND")
    kinds.required = True
    entry = kinds.add_parser("entry", help="a workload's WorkloadEntry and what it needs")
    actions = entry.add_subparsers(dest="entry_action", metavar="ACTION")
    actions.required = True
    configure = actions.add_parser(
        "configure",
        help="write a workload's root certificate, token, WorkloadEntry and agent command",
        description="Write into -o DIR what a VM or bare-metal workload of a WorkloadGroup "
        "needs: the mesh's root certificate, a token from pilothouse's token issuer, the "
        "WorkloadEntry it will have and the pilothouse agent command that runs its sidecar.",
    )
    _arguments(configure)
    configure.set_defaults(run=run)


def _arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("the WorkloadGroup")
    group.add_argument(
        "-f",
        "--file",
        action="append",
        default=[],
        type=Path,
        metavar="PATH",
        help="Istio YAML file or directory holding the group (repeatable)",
    )
    group.add_argument(
        "--config-source",
        action="append",
        default=[],
        metavar="ADDRESS",
        help="a store holding the group: etcd://, k8s://, xds://, mcp://, fs://",
    )
    group.add_argument(
        "--name",
        default="",
        help="the group's name (without -f or "
        "--config-source: a group of this name, labels app=NAME)",
    )
    group.add_argument(
        "-n",
        "--namespace",
        default="",
        help="the group's namespace (default: the group's; without a group read: default)",
    )
    group.add_argument(
        "--service-account",
        default="",
        help="the workload's account (default: the group template's, else default)",
    )
    group.add_argument("--timeout", type=float, default=10.0, help="--config-source sync, s")
    workload = parser.add_argument_group("the workload")
    workload.add_argument(
        "--address",
        required=True,
        metavar="IP",
        help="the workload's IP address (its WorkloadEntry's address)",
    )
    workload.add_argument(
        "-o",
        "--output",
        required=True,
        type=Path,
        metavar="DIR",
        help="where the files are written (created if needed)",
    )
    workload.add_argument("--trust-domain", default=DEFAULT_TRUST_DOMAIN)
    workload.add_argument(
        "--token-duration",
        default="1h",
        metavar="DURATION",
        help="how long the token lives: 3600, 90m, 1h (default 1h)",
    )
    workload.add_argument(
        "--ca-dir",
        type=Path,
        metavar="DIR",
        help=f"serve's CA directory (default PILOTHOUSE_CA_DIR, else {CaSettings.dir})",
    )
    workload.add_argument(
        "--issuer-dir",
        type=Path,
        metavar="DIR",
        help="the token issuer, created if needed (default PILOTHOUSE_AUTH_LOCAL_ISSUER_DIR, "
        f"else {AuthSettings.local_issuer_dir}: the one serve trusts)",
    )
    agent = parser.add_argument_group("the agent's command line")
    agent.add_argument(
        "--xds-address",
        action="append",
        default=[],
        metavar="HOST:PORT",
        help="pilothouse's TLS port (repeatable; default 127.0.0.1:15012)",
    )
    agent.add_argument(
        "--admin-port",
        type=int,
        default=AgentPorts.admin,
        help=f"its Envoy's admin port (default {AgentPorts.admin})",
    )
    agent.add_argument(
        "--status-port",
        type=int,
        default=AgentPorts.status,
        help=f"its /healthz/ready port (default {AgentPorts.status})",
    )


@dataclass(frozen=True, slots=True)
class Outputs:
    """Everything to write, made before anything is."""

    root: str
    token: str
    entry: str
    agent: list[list[str]]
    """The agent's command line, in lines of words."""


@dataclass(frozen=True, slots=True)
class Places:
    """Where the CA and the token issuer are: the flags, else the ``PILOTHOUSE_*``
    variables ``serve`` reads, else their defaults."""

    settings: Settings
    ca_dir: Path
    issuer_dir: Path

    @classmethod
    def of(cls, args: argparse.Namespace) -> Places:
        try:
            settings = Settings().with_overrides(from_environment())
        except ValueError as problem:
            raise ConfigureError(str(problem)) from None
        issuer = settings.auth.local_issuer_dir or AuthSettings.local_issuer_dir
        return cls(settings, args.ca_dir or Path(settings.ca.dir), args.issuer_dir or Path(issuer))

    @property
    def trusted_issuer(self) -> bool:
        """Whether ``serve``, with the same variables, trusts the issuer without flags."""
        trusted = self.settings.auth.local_issuer_dir
        return bool(trusted) and Path(trusted) == self.issuer_dir


def run(args: argparse.Namespace) -> int:
    try:
        places = Places.of(args)
        group = find_group(args, places.settings)
        workload = Workload.of_group(
            group, _address(args.address), args.service_account, args.trust_domain
        )
        outputs = prepare(args, workload, places)
        written = write(args.output, outputs)
    except ConfigureError as problem:
        print(f"{PROG}: {problem}", file=sys.stderr)
        return 1
    print(f"Wrote {', '.join(str(p) for p in written)}")
    print(f"for {workload.identity}, WorkloadEntry {workload.namespace}/{workload.entry_name}.")
    print()
    print(
        f"Next: add {args.output / ENTRY_FILE} to the mesh (copy it into serve's --config\n"
        "directory, or pilothouse apply -f it), then start the workload's agent"
        f" ({args.output / AGENT_FILE} runs this):"
    )
    print()
    print(command_line(outputs.agent))
    return 0


def find_group(args: argparse.Namespace, settings: Settings) -> Config:
    """The one WorkloadGroup the inputs and ``--name``/``-n`` pick; ConfigureError naming
    what was looked at otherwise."""
    if not args.file and not args.config_source:
        if not args.name:
            raise ConfigureError(
                "give the WorkloadGroup: -f FILE, --config-source ADDRESS, "
                "or --name (with -n and --service-account)"
            )
        return _made_group(args.name, args.namespace or "default", args.service_account)
    try:
        found = configs_in_paths(args.file, GROUP_KINDS, "-f")
        found += configs_from_sources(args.config_source, settings, args.timeout, GROUP_KINDS)
    except BootstrapInputError as problem:
        raise ConfigureError(str(problem)) from None
    where = ", ".join([*map(str, args.file), *args.config_source])
    chosen = [
        c
        for c in found
        if (not args.name or c.name == args.name)
        and (not args.namespace or c.namespace == args.namespace)
    ]
    if len(chosen) == 1:
        return chosen[0]
    names = ", ".join(sorted(f"{c.namespace}/{c.name}" for c in found)) or "none"
    if not chosen:
        what = WORKLOAD_GROUP.name
        if args.name:
            what += f" {args.namespace}/{args.name}" if args.namespace else f" {args.name}"
        elif args.namespace:
            what += f" in namespace {args.namespace}"
        raise ConfigureError(f"no {what} in {where} (WorkloadGroups there: {names})")
    raise ConfigureError(
        f"{len(chosen)} WorkloadGroups in {where} ({names}): say which with --name and -n"
    )


def _made_group(name: str, namespace: str, service_account: str) -> Config:
    spec = workload_group_pb2.WorkloadGroup(
        metadata=workload_group_pb2.WorkloadGroup.ObjectMeta(labels={"app": name}),
        template=workload_entry_pb2.WorkloadEntry(service_account=service_account or "default"),
    )
    return Config(WORKLOAD_GROUP.name, name, namespace, spec)


def _address(text: str) -> str:
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        raise ConfigureError(f"--address {text!r}: not an IP address") from None


def prepare(args: argparse.Namespace, workload: Workload, places: Places) -> Outputs:
    """The files' contents: the CA's root checked, a token minted, the entry validated."""
    if args.output.exists() and not args.output.is_dir():
        raise ConfigureError(f"-o {args.output}: exists and is not a directory")
    root_file = places.ca_dir / ROOT_CERT
    try:
        root = checked_file(str(root_file), "CA root", "certificate")
    except ValueError as problem:
        raise ConfigureError(
            f"{problem} (pilothouse serve makes its CA in {places.ca_dir} on its first start "
            "with the TLS port on: start it once, or give --ca-dir)"
        ) from None
    try:
        lifetime = parse_duration(args.token_duration)
    except ValueError as problem:
        raise ConfigureError(f"--token-duration {args.token_duration}: {problem}") from None
    entry = yaml.safe_dump(workload.entry(), sort_keys=False)
    _check_entry(entry, workload)
    token = _token(places, workload, lifetime)
    addresses = tuple(args.xds_address) or AgentPorts.xds_addresses
    ports = AgentPorts(args.admin_port, args.status_port, addresses)
    return Outputs(root, token + "\n", entry, workload.agent_command(args.output, ports))


def _check_entry(text: str, workload: Workload) -> None:
    result = Loader(SCHEMAS, source="workload").load_bytes(text.encode(), ENTRY_FILE)
    errors = [p.message for p in result.problems if p.severity is Severity.ERROR]
    if errors:
        raise ConfigureError(
            f"the WorkloadEntry for {workload.group} would not validate: {'; '.join(errors)}"
        )


def _token(places: Places, workload: Workload, lifetime: float) -> str:
    directory = places.issuer_dir
    created = not (directory / KEY_FILE).exists()
    try:
        issuer = TokenIssuer.open(directory)
        token = issuer.token(workload.namespace, workload.service_account, lifetime=lifetime)
    except TokenIssuerError as problem:
        raise ConfigureError(str(problem)) from None
    if created:
        print(f"{PROG}: created token issuer {issuer.name!r} in {directory}", file=sys.stderr)
    if not places.trusted_issuer:
        print(
            f"{PROG}: serve trusts this issuer with --local-issuer-dir {directory} or "
            f"--jwt-issuer {issuer.trust}",
            file=sys.stderr,
        )
    return token


def write(directory: Path, outputs: Outputs) -> Sequence[Path]:
    """The files, in ``directory`` (made if needed); ConfigureError if it cannot be."""
    script = "#!/bin/sh\nexec " + command_line(outputs.agent) + ' "$@"\n'
    files = (
        (ROOT_FILE, outputs.root, 0o644),
        (TOKEN_FILE, outputs.token, 0o600),
        (ENTRY_FILE, outputs.entry, 0o644),
        (AGENT_FILE, script, 0o755),
    )
    try:
        directory.mkdir(parents=True, exist_ok=True)
        for name, text, mode in files:
            replace_file(directory / name, text.encode(), mode=mode)
    except OSError as problem:
        raise ConfigureError(f"-o {directory}: {problem.strerror or problem}") from None
    return [directory / name for name, _, _ in files]

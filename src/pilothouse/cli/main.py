"""The `pilothouse` command: one subcommand per module in this package.

A process imports only the module of the subcommand it runs: importing all of them costs
about a second of CPU (`serve` alone needs a third less, `validate` a sixth of it), which
every `pilothouse` process a supervisor, a script or a test starts would pay. Help at the
top level, `--version`, no subcommand or a mistyped one (argparse's own error) parse with
:func:`index_parser`, which lists every subcommand from :data:`COMMANDS` and imports none of
their modules; any other first word that is an option, and the generated CLI reference,
build the whole parser.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any, NamedTuple

from pilothouse import __version__


def _validate() -> ModuleType:
    from pilothouse.cli import validate

    return validate


def _serve() -> ModuleType:
    from pilothouse.cli import serve

    return serve


def _bootstrap() -> ModuleType:
    from pilothouse.cli import bootstrap

    return bootstrap


def _tokens() -> ModuleType:
    from pilothouse.cli import tokens

    return tokens


def _loadtest() -> ModuleType:
    from pilothouse.cli import loadtest

    return loadtest


def _proxy_status() -> ModuleType:
    from pilothouse.cli import proxy_status

    return proxy_status


def _proxy_config() -> ModuleType:
    from pilothouse.cli import proxy_config

    return proxy_config


def _inspector() -> ModuleType:
    from pilothouse.cli import inspector

    return inspector


def _apply() -> ModuleType:
    from pilothouse.cli import apply

    return apply


def _get() -> ModuleType:
    from pilothouse.cli import get

    return get


def _delete() -> ModuleType:
    from pilothouse.cli import delete

    return delete


def _agent() -> ModuleType:
    from pilothouse.cli import agent

    return agent


def _analyze() -> ModuleType:
    from pilothouse.cli import analyze

    return analyze


def _version() -> ModuleType:
    from pilothouse.cli import version

    return version


def _workload_entry() -> ModuleType:
    from pilothouse.cli import workload_entry

    return workload_entry


Loader = Callable[[], ModuleType]


class Command(NamedTuple):
    """A subcommand as its module registers it: name, aliases and one-line help, and the
    loader of that module."""

    name: str
    aliases: tuple[str, ...]
    summary: str
    load: Loader


# Every subcommand, in the order `pilothouse --help` lists them
# (tests/unit/cli/test_main_names.py holds this to what each module's parser registers,
# and the index parser's help and errors to the whole parser's).
COMMANDS: tuple[Command, ...] = (
    Command("validate", (), "validate Istio config files or directories", _validate),
    Command("serve", (), "serve the mesh config over xDS", _serve),
    Command("bootstrap", (), "print an Envoy (or proxyless gRPC) bootstrap for a node", _bootstrap),
    Command("token", (), "a local token issuer for the CA, and service account tokens", _tokens),
    Command("loadtest", (), "point simulated proxies at an xDS server and time them", _loadtest),
    Command(
        "proxy-status",
        ("ps",),
        "sync status of the proxies connected to one or more replicas",
        _proxy_status,
    ),
    Command(
        "proxy-config",
        ("pc",),
        "a proxy's clusters, listeners, routes, endpoints or secrets",
        _proxy_config,
    ),
    Command("inspect", (), "compare what a proxy holds with what it acknowledged", _inspector),
    Command("apply", (), "write Istio objects to the config store (etcd)", _apply),
    Command("get", (), "read Istio objects from the config store (etcd)", _get),
    Command("delete", (), "delete Istio objects from the config store (etcd)", _delete),
    Command(
        "agent", (), "run the node agent: local key, SDS and xDS over Unix sockets, Envoy", _agent
    ),
    Command(
        "analyze", (), "find problems across Istio config (istioctl analyze's checks)", _analyze
    ),
    Command(
        "version",
        (),
        "print the client's version (and the control plane's, with --remote)",
        _version,
    ),
    Command("workload", (), "workloads outside Kubernetes (istioctl x workload)", _workload_entry),
)

SUBCOMMANDS: tuple[Loader, ...] = tuple(command.load for command in COMMANDS)
BY_NAME: dict[str, Loader] = {
    name: command.load for command in COMMANDS for name in (command.name, *command.aliases)
}
"""Every name and alias a subcommand's parser registers, and the module that registers it."""

# First words the index parser answers exactly as the whole parser would (it exits on them).
_INDEX_OPTIONS = frozenset({"-h", "--help", "--version"})


def _top_parser() -> tuple[argparse.ArgumentParser, argparse._SubParsersAction[Any]]:
    parser = argparse.ArgumentParser(
        prog="pilothouse",
        description="A service-mesh control plane: Istio config in, xDS and MCP out.",
    )
    parser.add_argument("--version", action="version", version=f"pilothouse {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True
    return parser, commands


def build_parser(only: Loader | None = None) -> argparse.ArgumentParser:
    """The command's parser: every subcommand, or only the one ``only`` loads."""
    parser, commands = _top_parser()
    for load in (only,) if only is not None else SUBCOMMANDS:
        load().add_parser(commands)
    return parser


def index_parser() -> argparse.ArgumentParser:
    """The top level with every subcommand named but none of their arguments: enough for
    top-level help, ``--version`` and argparse's error for a missing or unknown
    subcommand, without importing a subcommand's module."""
    parser, commands = _top_parser()
    for command in COMMANDS:
        commands.add_parser(command.name, aliases=list(command.aliases), help=command.summary)
    return parser


def _parser_for(words: Sequence[str]) -> argparse.ArgumentParser:
    if words and words[0] in BY_NAME:
        return build_parser(BY_NAME[words[0]])
    if not words or words[0] in _INDEX_OPTIONS or not words[0].startswith("-"):
        return index_parser()
    return build_parser()


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    parser = _parser_for(words)
    args = parser.parse_args(words)
    code = args.run(args)
    return int(code or 0)


if __name__ == "__main__":
    sys.exit(main())

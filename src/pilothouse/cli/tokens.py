"""`pilothouse token`: a local token issuer and the service account tokens it signs.

Without Kubernetes there is nobody to hand a workload the projected token (audience
``istio-ca``) that proves its service account to the CA. ``pilothouse token`` is that
issuer (:mod:`pilothouse.security.token_issuer`), in the spirit of ``kubectl create
token``:

- ``pilothouse token issuer`` creates the issuer on first use (``--issuer-dir``, default
  ``.pilothouse/token-issuer``, the directory ``serve`` trusts without flags:
  ``auth.local_issuer_dir``) and prints ``ISSUER=JWKS_FILE``, the value of
  ``serve --jwt-issuer`` that makes the TLS port trust an issuer kept elsewhere;
- ``pilothouse token create SA -n NS`` prints a JWT for ``system:serviceaccount:NS:SA``
  (``--audience`` repeatable, default ``istio-ca``; ``--duration``, default 1h), for
  ``bootstrap --xds-token-file`` or a certificate request.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Final

from pilothouse.security.token_issuer import (
    DEFAULT_AUDIENCE,
    DEFAULT_ISSUER,
    DEFAULT_LIFETIME,
    KEY_FILE,
    TokenIssuer,
    TokenIssuerError,
)
from pilothouse.settings import AuthSettings

DEFAULT_DIRECTORY: Final = Path(AuthSettings.local_issuer_dir)
"""Beside the CA's default directory (``.pilothouse/ca``), where ``serve`` looks for it."""
_DURATION: Final = re.compile(r"^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+(?:\.\d+)?)s)?$")


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "token",
        help="a local token issuer for the CA, and service account tokens",
        description="Create a local token issuer and mint service account tokens "
        "(sub system:serviceaccount:NS:SA, aud istio-ca) that pilothouse's TLS port "
        f"trusts: by default when the issuer is in {DEFAULT_DIRECTORY} of serve's working "
        "directory, else when serve is given --jwt-issuer with the issuer's key set.",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True
    issuer = actions.add_parser(
        "issuer",
        help="create the issuer if needed and print ISSUER=JWKS_FILE for serve --jwt-issuer",
    )
    _issuer_arguments(issuer)
    issuer.set_defaults(run=run_issuer)
    create = actions.add_parser(
        "create", help="print a token for a service account (kubectl create token)"
    )
    create.add_argument("service_account", metavar="SERVICE_ACCOUNT")
    create.add_argument("-n", "--namespace", default="default", help="default: default")
    create.add_argument(
        "--audience",
        action="append",
        default=[],
        metavar="AUDIENCE",
        help=f"the token's audience (repeatable; default {DEFAULT_AUDIENCE})",
    )
    create.add_argument(
        "--duration",
        default=f"{DEFAULT_LIFETIME:g}s",
        metavar="DURATION",
        help="how long the token lives: 3600, 3600s, 90m, 1h, 1h30m (default 1h)",
    )
    _issuer_arguments(create)
    create.set_defaults(run=run_create)


def _issuer_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--issuer-dir",
        type=Path,
        default=DEFAULT_DIRECTORY,
        metavar="DIR",
        help=f"where the issuer's key and key set live (default {DEFAULT_DIRECTORY})",
    )
    parser.add_argument(
        "--issuer-name",
        default=DEFAULT_ISSUER,
        metavar="NAME",
        help=f"the tokens' iss when the issuer is created (default {DEFAULT_ISSUER})",
    )


def run_issuer(args: argparse.Namespace) -> int:
    issuer = _opened(args)
    if issuer is None:
        return 1
    print(issuer.trust)
    return 0


def run_create(args: argparse.Namespace) -> int:
    try:
        lifetime = parse_duration(args.duration)
    except ValueError as problem:
        print(f"pilothouse token: --duration {args.duration}: {problem}", file=sys.stderr)
        return 2
    issuer = _opened(args)
    if issuer is None:
        return 1
    try:
        token = issuer.token(
            args.namespace,
            args.service_account,
            audiences=tuple(args.audience) or (DEFAULT_AUDIENCE,),
            lifetime=lifetime,
        )
    except TokenIssuerError as problem:
        print(f"pilothouse token: {problem}", file=sys.stderr)
        return 2
    print(token)
    return 0


def parse_duration(text: str) -> float:
    """Seconds in ``3600``, ``3600s``, ``90m``, ``1h``, ``1h30m``; ValueError otherwise."""
    try:
        seconds = float(text)
    except ValueError:
        found = _DURATION.match(text.strip())
        if found is None or not text.strip():
            raise ValueError("expected seconds or a duration such as 90m, 1h or 1h30m") from None
        hours, minutes, rest = found.groups()
        seconds = int(hours or 0) * 3600 + int(minutes or 0) * 60 + float(rest or 0)
    if not seconds > 0 or seconds != seconds or seconds == float("inf"):
        raise ValueError("a token's lifetime must be a positive, finite duration")
    return seconds


def _opened(args: argparse.Namespace) -> TokenIssuer | None:
    """The issuer, created first if its directory holds none (said on stderr)."""
    directory: Path = args.issuer_dir
    created = not (directory / KEY_FILE).exists()
    try:
        issuer = TokenIssuer.open(directory, args.issuer_name)
    except TokenIssuerError as problem:
        print(f"pilothouse token: {problem}", file=sys.stderr)
        return None
    if created:
        print(
            f"pilothouse token: created token issuer {issuer.name!r} in {directory};"
            f" serve trusts it when {directory} is its --local-issuer-dir (default"
            f" {DEFAULT_DIRECTORY}), else trust it with: pilothouse serve --jwt-issuer"
            f" {issuer.trust}",
            file=sys.stderr,
        )
    elif args.issuer_name != DEFAULT_ISSUER and args.issuer_name != issuer.name:
        print(
            f"pilothouse token: the issuer in {directory} is {issuer.name!r};"
            f" --issuer-name {args.issuer_name} applies only when it is created",
            file=sys.stderr,
        )
    return issuer

"""What the hand-written pages of the documentation site name exists: every
``PILOTHOUSE_*`` variable is a knob (or one the strict check lets through), every
metric a family ``/metrics`` exposes, every ``--flag`` a flag of ``pilothouse`` (of the
very command, where a code span spells the command out) or of one of the other programs
the pages run (Envoy, etcd, the test and benchmark tools), and every page asking for a
generated reference asks for one that exists."""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator
from pathlib import Path

from docsite import metrics_reference
from docsite.hooks import GENERATORS, MARKER
from pilothouse.cli.main import build_parser
from pilothouse.environment import OTHER_VARIABLES
from pilothouse.settings import knobs

DOCS = Path(__file__).resolve().parents[3] / "docs"
VARIABLE = re.compile(r"PILOTHOUSE_[A-Z0-9_]*[A-Z0-9](?![A-Z0-9_])")  # not prefixes
FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")
METRIC = re.compile(r"\b((?:pilot|pilothouse|citadel_server|istiod)_[a-z0-9_]+|istio_build)\b")
COMMAND = re.compile(r"(?:\.venv/bin/)?pilothouse ([a-z-]+)(?: ([a-z]+))?")
OTHER_PROGRAMS_FLAGS = {
    # Envoy, as pilothouse agent and the guides start it
    "--base-id", "--concurrency", "--disable-hot-restart", "--drain-strategy",
    "--drain-time-s", "--allow-unknown-static-fields", "--file-flush-interval-msec",
    "--local-address-ip-version", "--component-log-level",
    # curl, in the walkthroughs
    "--cacert", "--cert", "--resolve", "--connect-timeout", "--max-time", "--fail",
    "--silent", "--show-error", "--header", "--data", "--request", "--http2", "--insecure",
    # etcd, in the replicas guide
    "--advertise-client-urls", "--cert-file", "--client-cert-auth", "--data-dir",
    "--initial-advertise-peer-urls", "--initial-cluster", "--key-file",
    "--listen-client-urls", "--listen-peer-urls", "--max-txn-ops", "--name",
    "--trusted-ca-file", "--prefix", "--auth-token-ttl",
    # python -m http.server, mypy, pytest, bench/run_all.py and the bench scripts
    "--bind", "--strict", "--dist", "--output-sync", "--collect-only", "--only", "--old",
    "--old-src", "--baseline", "--per-node", "--settle", "--compare-with",
    # flag families written as prefixes (--etcd-..., --webhook-...)
    "--etcd-", "--webhook-",
}  # fmt: skip


def pages() -> Iterator[tuple[Path, str]]:
    for page in sorted(DOCS.rglob("*.md")):
        if "drafts" not in page.relative_to(DOCS).parts:
            yield page, page.read_text()


def code(text: str) -> list[str]:
    """The page's inline code spans and code blocks."""
    blocks = re.findall(r"```[a-z]*\n(.*?)```", text, re.S)
    spans = re.findall(r"`([^`\n]+)`", re.sub(r"```[a-z]*\n.*?```", "", text, flags=re.S))
    return spans + blocks


def commands() -> dict[tuple[str, ...], set[str]]:
    found: dict[tuple[str, ...], set[str]] = {}

    def walk(parser: argparse.ArgumentParser, words: tuple[str, ...]) -> None:
        found[words] = {flag for action in parser._actions for flag in action.option_strings}
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    walk(child, (*words, name))

    walk(build_parser(), ())
    return found


def test_the_pages_name_only_known_variables() -> None:
    known = {knob.env for knob in knobs()} | set(OTHER_VARIABLES)
    unknown = {
        (page.name, name)
        for page, text in pages()
        for name in VARIABLE.findall(text)
        if name not in known and "DEBOUNCE_AFTR" not in name  # the misspelling shown
    }
    assert unknown == set()


def test_the_pages_name_only_exposed_metrics() -> None:
    exposed = {family.name for family in metrics_reference.families()}
    unknown = set()
    for page, text in pages():
        for span in code(text):
            for name in METRIC.findall(span):
                stem = re.sub(r"_(bucket|sum|count)$", "", name)
                if not {name, stem, f"{name}_total"} & exposed:
                    unknown.add((page.name, name))
    assert unknown == set()


def test_the_pages_name_only_flags_that_exist() -> None:
    known = commands()
    every = set().union(*known.values()) | OTHER_PROGRAMS_FLAGS
    wrong = set()
    for page, text in pages():
        for span in code(text):
            wrong |= {(page.name, flag) for flag in FLAG.findall(span) if flag not in every}
            spelled = COMMAND.match(span)
            if spelled is None or "\n" in span or any(c in span for c in ("$(", "|", "&", ";")):
                continue
            words: tuple[str, ...] = (spelled.group(1),)
            if (*words, spelled.group(2)) in known:
                words = (*words, spelled.group(2))
            assert words in known, f"{page.name}: no command {' '.join(words)!r}: {span}"
            wrong |= {(page.name, f) for f in FLAG.findall(span) if f not in known[words]}
    assert wrong == set(), "a flag of another program belongs in OTHER_PROGRAMS_FLAGS"


def test_every_reference_marker_names_a_generator() -> None:
    asked = {name for _, text in pages() for name in MARKER.findall(text)}
    assert asked == set(GENERATORS)

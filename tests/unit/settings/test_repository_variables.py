"""Every PILOTHOUSE_* name the repository's code, tests, benchmarks and Makefile use is a
knob or one of the variables the strict check lets through: the test suite starts
`pilothouse serve` with its own environment, so any other name would stop those servers."""

from __future__ import annotations

import re
from pathlib import Path

from pilothouse.environment import OTHER_VARIABLES
from pilothouse.settings import knobs

ROOT = Path(__file__).resolve().parents[3]
NAME = re.compile(r"PILOTHOUSE_[A-Z0-9_]*[A-Z0-9](?![A-Z0-9_])")  # not prefixes (PILOTHOUSE_XDS_)
CHECK_TESTS = frozenset(
    {
        # the strict check's own tests write unknown and mistyped names on purpose
        ROOT / "tests" / "unit" / "settings" / "test_environment.py",
        ROOT / "tests" / "unit" / "settings" / "test_settings_tree.py",
        ROOT / "tests" / "integration" / "test_serve_settings.py",
    }
)


def used_names() -> dict[str, Path]:
    files = [ROOT / "Makefile", ROOT / "BENCHMARKS.md"]
    for folder in ("src", "tests", "bench", "demo"):
        files += sorted((ROOT / folder).rglob("*.py"))
    found: dict[str, Path] = {}
    for path in files:
        if path in CHECK_TESTS or not path.is_file():
            continue
        for name in NAME.findall(path.read_text(errors="replace")):
            found.setdefault(name, path)
    return found


def test_the_repository_uses_only_known_variables() -> None:
    known = {knob.env for knob in knobs()} | set(OTHER_VARIABLES)
    used = used_names()
    assert "PILOTHOUSE_DEBOUNCE_AFTER" in used  # the scan sees the suite's servers' settings
    where = {name: str(path.relative_to(ROOT)) for name, path in used.items()}
    assert {name: file for name, file in where.items() if name not in known} == {}

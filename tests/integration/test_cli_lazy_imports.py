"""`pilothouse SUBCOMMAND` imports no other subcommand's module, `pilothouse --help` none,
and a mistyped subcommand still gets argparse's error naming the real ones (each in a
fresh process: what a process imports can only be seen from a new one)."""

from __future__ import annotations

import subprocess
import sys


def loaded_by(words: list[str]) -> str:
    """The ``pilothouse.cli`` modules a fresh process has imported after ``main(words)``."""
    probe = (
        "import sys\n"
        "from pilothouse.cli.main import main\n"
        "try:\n"
        f"    main({words!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith('pilothouse.cli.')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    return done.stdout.strip().splitlines()[-1]


def test_top_level_help_imports_no_subcommand() -> None:
    assert loaded_by(["--help"]) == "['pilothouse.cli.main']"


def test_running_validate_imports_no_other_subcommand() -> None:
    loaded = loaded_by(["validate", "--help"])
    assert "pilothouse.cli.validate" in loaded
    for other in ("pilothouse.cli.serve'", "pilothouse.cli.agent'", "pilothouse.cli.loadtest'"):
        assert other not in loaded, loaded


def test_a_mistyped_subcommand_still_gets_argparse_s_error() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pilothouse.cli.main", "serv"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "invalid choice: 'serv'" in done.stderr and "serve" in done.stderr

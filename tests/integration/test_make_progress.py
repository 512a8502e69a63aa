"""``make install`` and ``make demo`` say what they are doing before each slow step.

``make -n -B`` prints the recipe without running it (``-B``: as on a fresh checkout), so
the order of the progress lines and the commands they announce can be read.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def recipe(target: str) -> list[str]:
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    done = subprocess.run(
        # --no-print-directory: under `make test` this make is a sub-make, which would
        # otherwise print "Entering/Leaving directory" lines around the recipe
        ["make", "--no-print-directory", "-n", "-B", target],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.splitlines()


def test_each_install_step_is_announced_before_it_runs() -> None:
    lines = recipe("demo")
    for slow in ("-m venv", "pip install -q uv"):
        (at,) = [i for i, line in enumerate(lines) if slow in line]
        assert lines[at - 1].startswith('echo "install: '), (slow, lines[at - 1])
    # the dependencies with uv, or with pip where uv cannot: one recipe line, announced above
    (at,) = [i for i, line in enumerate(lines) if "uv pip install -q" in line]
    assert "pip install -q -e" in lines[at + 1], lines[at : at + 2]
    said = [line for line in lines if line.startswith("echo")]
    assert any("about 10 s" in line and "about a minute" in line for line in said)
    assert said[-1].startswith('echo "demo: starting') and lines[-1].endswith("demo/bookinfo.py")

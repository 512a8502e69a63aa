"""The committed src/pilothouse/api is exactly what proto/generate.py makes from proto/."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
COMMITTED = REPO / "src" / "pilothouse" / "api"


def _tree(root: Path) -> dict[str, bytes]:
    return {
        path.relative_to(root).as_posix(): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts
    }


def _generate(outdir: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(REPO / "proto" / "generate.py"), str(outdir)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr


def test_committed_modules_are_fresh(tmp_path: Path) -> None:
    _generate(tmp_path)
    fresh, committed = _tree(tmp_path), _tree(COMMITTED)
    problems = [f"only in a fresh generation: {name}" for name in sorted(fresh.keys() - committed)]
    problems += [f"only in src/pilothouse/api: {name}" for name in sorted(committed.keys() - fresh)]
    problems += [
        f"differs: {name}"
        for name in sorted(fresh.keys() & committed.keys())
        if fresh[name] != committed[name]
    ]
    assert not problems, "run `make protos`:\n" + "\n".join(problems)


def test_generation_is_deterministic(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    _generate(first)
    _generate(second)
    assert _tree(first) == _tree(second)
    assert "istio/networking/v1alpha3/virtual_service_pb2.py" in _tree(first)


def test_stale_files_are_removed(tmp_path: Path) -> None:
    _generate(tmp_path)
    stale = tmp_path / "istio" / "networking" / "v1alpha3" / "removed_kind_pb2.py"
    stale.write_text("# left over from a deleted .proto\n")
    _generate(tmp_path)
    assert not stale.exists()

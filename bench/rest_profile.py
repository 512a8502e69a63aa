"""Where a server's CPU goes during a round: py-spy's collapsed stacks, summed up.

``py-spy record --format raw`` writes one line per distinct stack, frames joined by
``;`` from the outermost in, then a space and the number of samples. :func:`tally`
sums them per function: **self** is the samples where the function was on top (the
CPU it spent itself), **inclusive** the samples where it was anywhere on the stack
(counted once per stack, however deep the recursion). :func:`table` prints the top.
"""

from __future__ import annotations

import shutil
import sys
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from bench.harness.child import Child


@dataclass
class Tally:
    samples: int = 0
    own: Counter[str] = field(default_factory=Counter)
    inclusive: Counter[str] = field(default_factory=Counter)


def tally(lines: Iterable[str]) -> Tally:
    """Self and inclusive samples per frame (``function (file:line)``) of collapsed stacks."""
    result = Tally()
    for line in lines:
        stack, _, count = line.rstrip("\n").rpartition(" ")
        if not stack or not count.isdigit():
            continue
        samples = int(count)
        frames = stack.split(";")
        result.samples += samples
        result.own[frames[-1]] += samples
        for frame in set(frames):
            result.inclusive[frame] += samples
    return result


def table(found: Tally, title: str, top: int = 25, within: str = "") -> str:
    """The ``top`` frames by self and by inclusive share; ``within`` keeps inclusive rows
    whose frame holds that text (e.g. ``pilothouse/``), so the table shows the project's
    own functions rather than the event loop that calls them."""
    if not found.samples:
        return f"{title}: no samples\n"
    lines = [f"{title}: {found.samples} samples", "  self:"]
    for frame, samples in found.own.most_common(top):
        lines.append(f"    {samples / found.samples:6.1%}  {frame}")
    lines.append(f"  inclusive{f' ({within} only)' if within else ''}:")
    rows = [(f, n) for f, n in found.inclusive.most_common() if within in f][:top]
    for frame, samples in rows:
        lines.append(f"    {samples / found.samples:6.1%}  {frame}")
    return "\n".join(lines) + "\n"


def py_spy() -> str | None:
    found = shutil.which("py-spy")
    if found:
        return found
    beside = Path(sys.executable).with_name("py-spy")
    return str(beside) if beside.exists() else None


def start_recording(pid: int, seconds: float, output: Path) -> Child | None:
    """py-spy recording ``pid`` for ``seconds`` into ``output``; None without py-spy."""
    binary = py_spy()
    if binary is None:
        return None
    argv = [binary, "record", "--nonblocking", "--format", "raw", "--rate", "200",
            "--duration", str(max(int(seconds), 1)), "--pid", str(pid),
            "--output", str(output)]  # fmt: skip
    return Child("py-spy", argv, output.with_suffix(".log"))

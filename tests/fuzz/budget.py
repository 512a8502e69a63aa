"""How many cases each fuzz test runs: a small bounded share in ``make test``, thousands in
``make fuzz``.

Every fuzz test takes its Hypothesis settings from :func:`fuzz_settings` instead of
naming ``max_examples`` itself, so that one environment variable scales the whole
fuzz suite: ``PILOTHOUSE_FUZZ_EXAMPLES`` (default 60, ``make fuzz`` sets 3000).
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

DEFAULT_EXAMPLES = 60


def examples(scale: float = 1.0) -> int:
    """The case count for one test: the configured budget times ``scale`` (at least 1)."""
    raw = os.environ.get("PILOTHOUSE_FUZZ_EXAMPLES", "")
    budget = int(raw) if raw.strip().isdigit() else DEFAULT_EXAMPLES
    return max(1, int(budget * scale))


def fuzz_settings(scale: float = 1.0) -> settings:
    """Hypothesis settings for a fuzz test: no deadline (the machine is shared and noisy),
    no health checks that refuse slow or filtered generation, and the budget above."""
    return settings(
        max_examples=examples(scale),
        deadline=None,
        suppress_health_check=list(HealthCheck),
        derandomize=False,
    )

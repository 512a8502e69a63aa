"""host_problem's one-regex fast path never accepts what the label-by-label check refuses."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pilothouse.config.validation import hosts

LABELS = st.sampled_from(
    ["a", "svc", "x-1", "-a", "a-", "1", "123", "*", "a*", "", "A9", "é", "a_b", "z" * 63, "z" * 64]
)


def slow_problem(host: str, wildcard: bool) -> str | None:
    """The check without its fast path: the fast regexes made to match nothing."""
    saved = hosts._PLAIN_HOST, hosts._WILDCARD_HOST
    never = hosts.re.compile(r"(?!)")
    hosts._PLAIN_HOST = hosts._WILDCARD_HOST = never
    try:
        return hosts.host_problem(host, wildcard=wildcard)
    finally:
        hosts._PLAIN_HOST, hosts._WILDCARD_HOST = saved


@settings(max_examples=500, deadline=None)
@given(st.lists(LABELS, min_size=1, max_size=5), st.booleans(), st.booleans())
def test_fast_path_agrees(labels: list[str], trailing_dot: bool, wildcard: bool) -> None:
    host = ".".join(labels) + ("." if trailing_dot else "")
    assert hosts.host_problem(host, wildcard=wildcard) == slow_problem(host, wildcard)


def test_long_hosts_still_refused() -> None:
    host = ".".join(["a" * 63] * 5)
    assert hosts.host_problem(host) is not None

"""Host names, labels, addresses, regexes and durations: the rules every kind builds on."""

from __future__ import annotations

import pytest
from google.protobuf.duration_pb2 import Duration

from pilothouse.config.validation import Report
from pilothouse.config.validation.addresses import is_cidr, is_ip, unix_socket_problem
from pilothouse.config.validation.hosts import (
    check_namespaced_host,
    host_problem,
    host_within,
    hosts_overlap,
    is_dns_label,
)
from pilothouse.config.validation.labels import label_key_problem, label_value_problem
from pilothouse.config.validation.quantities import check_duration
from pilothouse.config.validation.regex import MAX_REGEX_LENGTH, regex_problem

from .checking import assert_clean, assert_error


@pytest.mark.parametrize(
    "host",
    [
        "reviews",
        "reviews.default.svc.cluster.local",
        "api.example.com.",
        "*",
        "*.example.com",
        "Example.COM",
        "a-b.c-d.io",
        "x" * 63 + ".com",
    ],
)
def test_valid_hosts(host: str) -> None:
    assert host_problem(host) is None


@pytest.mark.parametrize(
    ("host", "fragment"),
    [
        ("", "must not be empty"),
        ("a." * 127 + "com", "too long"),
        ("*foo.example.com", "only as the whole first label"),
        ("foo.*.com", "only as the whole first label"),
        ("*.*.com", "only as the whole first label"),
        ("foo..com", "label '' is not a DNS-1123 label"),
        ("-foo.com", "not a valid DNS name"),
        ("foo_bar.com", "not a valid DNS name"),
        ("x" * 64 + ".com", "not a valid DNS name"),
        ("10.0.0.1", "all digits"),
        ("*.", "label '' is not"),
        ("foo.com:80", "not a valid DNS name"),
    ],
)
def test_invalid_hosts(host: str, fragment: str) -> None:
    problem = host_problem(host)
    assert problem is not None and fragment in problem


def test_wildcard_can_be_forbidden() -> None:
    problem = host_problem("*.example.com", wildcard=False)
    assert problem is not None and "must not contain a wildcard" in problem


@pytest.mark.parametrize(
    ("a", "b", "overlap"),
    [
        ("a.com", "a.com", True),
        ("a.com", "b.com", False),
        ("*.com", "*.foo.com", True),
        ("*.foo.com", "a.foo.com", True),
        ("*.foo.com", "foo.com", False),
        ("*", "anything.io", True),
        ("*.bar.com", "*.foo.com", False),
    ],
)
def test_hosts_overlap(a: str, b: str, overlap: bool) -> None:
    assert hosts_overlap(a, b) is overlap
    assert hosts_overlap(b, a) is overlap


@pytest.mark.parametrize(
    ("inner", "outer", "within"),
    [
        ("a.foo.com", "*.foo.com", True),
        ("*.a.foo.com", "*.foo.com", True),
        ("*.foo.com", "a.foo.com", False),
        ("a.foo.com", "a.foo.com", True),
        ("a.bar.com", "*.foo.com", False),
        ("x.y", "*", True),
    ],
)
def test_host_within(inner: str, outer: str, within: bool) -> None:
    assert host_within(inner, outer) is within


def test_dns_label_length_limit() -> None:
    assert is_dns_label("a" * 63)
    assert not is_dns_label("a" * 64)
    assert not is_dns_label("")


@pytest.mark.parametrize(
    ("entry", "owner"),
    [
        ("*/*", "sidecar"),
        ("./*", "sidecar"),
        ("~/*", "sidecar"),
        ("istio-system/*.example.com", "sidecar"),
        ("~legacy/reviews.legacy.svc.cluster.local", "sidecar"),
        ("prod/api.example.com", "gateway"),
        ("api.example.com", "gateway"),
        ("*", "gateway"),
        ("10.1.2.3", "gateway"),
        ("./10.1.2.3", "gateway"),
    ],
)
def test_valid_namespaced_hosts(entry: str, owner: str) -> None:
    report = Report()
    check_namespaced_host(entry, "spec.x", report, owner=owner)  # type: ignore[arg-type]
    assert_clean(report)


@pytest.mark.parametrize(
    ("entry", "owner", "fragment"),
    [
        ("reviews.default.svc.cluster.local", "sidecar", "must have the form namespace/dnsName"),
        ("/foo.com", "sidecar", "must both be set"),
        ("Bad_NS/foo.com", "sidecar", "namespace 'Bad_NS'"),
        ("~/foo.com/", "sidecar", "not a valid DNS name"),
        ("ns/reviews", "sidecar", "short name 'reviews'"),
        ("ns/*foo.com", "gateway", "only as the whole first label"),
        ("~/foo.com", "gateway", "namespace '~'"),
        ("ns/10.1.2.3", "sidecar", "all digits"),
        ("foo", "gateway", "short name"),
    ],
)
def test_invalid_namespaced_hosts(entry: str, owner: str, fragment: str) -> None:
    report = Report()
    check_namespaced_host(entry, "spec.x", report, owner=owner)  # type: ignore[arg-type]
    assert_error(report, "spec.x", fragment)


@pytest.mark.parametrize(
    "key", ["app", "app.kubernetes.io/name", "version_1", "A.b-c", "example.com/x"]
)
def test_valid_label_keys(key: str) -> None:
    assert label_key_problem(key) is None


@pytest.mark.parametrize(
    ("key", "fragment"),
    [
        ("", "must not be empty"),
        ("-app", "is invalid"),
        ("app-", "is invalid"),
        ("Bad_Prefix/app", "invalid prefix"),
        ("/app", "invalid prefix"),
        ("x/", "is invalid"),
        ("a" * 64, "too long"),
        ("app name", "is invalid"),
    ],
)
def test_invalid_label_keys(key: str, fragment: str) -> None:
    problem = label_key_problem(key)
    assert problem is not None and fragment in problem


@pytest.mark.parametrize(
    ("value", "ok"),
    [("", True), ("v1", True), ("1.2.3", True), ("-v1", False), ("v 1", False), ("a" * 64, False)],
)
def test_label_values(value: str, ok: bool) -> None:
    assert (label_value_problem(value) is None) is ok


@pytest.mark.parametrize(
    ("value", "ip", "cidr"),
    [
        ("10.0.0.1", True, False),
        ("2001:db8::1", True, False),
        ("10.0.0.0/8", False, True),
        ("10.0.0.1/24", False, True),
        ("2001:db8::/32", False, True),
        ("10.0.0.0/33", False, False),
        ("10.0.0.300", False, False),
        ("example.com", False, False),
        ("10.0.0.0/8/8", False, False),
    ],
)
def test_ips_and_cidrs(value: str, ip: bool, cidr: bool) -> None:
    assert is_ip(value) is ip
    assert is_cidr(value) is cidr


@pytest.mark.parametrize(
    ("address", "fragment"),
    [
        ("unix:///var/run/app.sock", None),
        ("unix://@abstract", None),
        ("unix://", "must not be empty"),
        ("unix://relative.sock", "not an absolute path"),
        ("unix:///var/run/", "not an absolute path"),
    ],
)
def test_unix_sockets(address: str, fragment: str | None) -> None:
    problem = unix_socket_problem(address)
    if fragment is None:
        assert problem is None
    else:
        assert problem is not None and fragment in problem


@pytest.mark.parametrize("pattern", ["^/api/v[0-9]+/.*$", "(?i)foo|bar", r"\d{3}-\w+", "a*"])
def test_valid_regexes(pattern: str) -> None:
    assert regex_problem(pattern) is None


@pytest.mark.parametrize(
    ("pattern", "fragment"),
    [
        ("", "must not be empty"),
        ("foo(?=bar)", "not valid RE2"),
        (r"(a)\1", "not valid RE2"),
        ("(unclosed", "not valid RE2"),
        ("a" * (MAX_REGEX_LENGTH + 1), "costly patterns"),
    ],
)
def test_invalid_regexes(pattern: str, fragment: str) -> None:
    problem = regex_problem(pattern)
    assert problem is not None and fragment in problem


def test_regex_at_length_limit_is_fine() -> None:
    assert regex_problem("a" * MAX_REGEX_LENGTH) is None


@pytest.mark.parametrize(
    ("seconds", "nanos", "fragment"),
    [
        (1, 0, None),
        (0, 1_000_000, None),
        (0, 0, "at least 1ms"),
        (-1, 0, "at least 1ms"),
        (0, 999_999, "at least 1ms"),
        (1, 500_000, "whole number of milliseconds"),
    ],
)
def test_durations(seconds: int, nanos: int, fragment: str | None) -> None:
    report = Report()
    check_duration(Duration(seconds=seconds, nanos=nanos), "spec.d", report)
    if fragment is None:
        assert_clean(report)
    else:
        assert_error(report, "spec.d", fragment)

"""How a controller's status is merged into a value stored in etcd, and when it is the
same as the stored one (:mod:`pilothouse.sources.etcd_status`)."""

from __future__ import annotations

import json

from pilothouse.sources.etcd_status import same_status, with_status

CONDITION = {"type": "Accepted", "status": "True", "reason": "Accepted"}
STATUS = {
    "parents": [{"conditions": [{**CONDITION, "lastTransitionTime": "2026-01-01T00:00:00Z"}]}]
}


def test_the_same_status_at_another_time_is_the_same() -> None:
    later = json.loads(json.dumps(STATUS).replace("2026-01-01", "2026-02-02"))
    assert same_status(STATUS, later)
    assert same_status({**STATUS, "other": 1}, later)  # fields it does not set are not its
    assert not same_status(None, later) and not same_status("junk", later)
    assert same_status(None, {})
    rejected = {"parents": [{"conditions": [{**CONDITION, "status": "False"}]}]}
    assert not same_status(STATUS, rejected)


def test_a_status_is_merged_field_by_field_and_the_rest_kept() -> None:
    stored = {"kind": "HTTPRoute", "spec": {"a": 1}, "status": {"other": {"kept": True}}}
    merged = with_status(json.dumps(stored).encode(), STATUS)
    assert merged is not None
    assert json.loads(merged) == {**stored, "status": {"other": {"kept": True}, **STATUS}}
    assert with_status(merged, STATUS) is None  # already says so: nothing to write
    assert with_status(b"not json", STATUS) is None
    assert with_status(b"[1]", STATUS) is None

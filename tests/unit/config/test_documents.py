"""Reading YAML/JSON text into raw objects with file and line for every field."""

from __future__ import annotations

from pilothouse.config.documents import MAX_DEPTH, read_documents

MULTI = """\
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata:
  name: a
spec:
  hosts:
  - a.example.com
---
# a comment-only document is skipped
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: b}
spec:
  http:
  - route:
    - destination:
        hostt: x
"""


def test_multi_document_lines() -> None:
    result = read_documents(MULTI, "f.yaml")
    assert not result.errors
    first, second = result.objects
    assert first.line == 1 and first.file == "f.yaml"
    assert first.lines["spec.hosts[0]"] == 7
    assert second.line == 11
    assert second.line_of("spec.http[0].route[0].destination.hostt") == 18
    # a path that does not exist falls back to its nearest ancestor
    assert second.line_of("spec.http[0].route[0].weight") == 17


def test_map_entry_paths_resolve_to_lines() -> None:
    text = "kind: X\nspec:\n  headers:\n    x-user:\n      exact: a\n"
    (obj,) = read_documents(text, "h.yaml").objects
    assert obj.line_of("spec.headers[x-user]") == 4
    assert obj.line_of("spec.headers[x-user].exact") == 5


def test_kind_list_items_become_objects() -> None:
    text = (
        "apiVersion: v1\nkind: List\nitems:\n"
        "- kind: Gateway\n  metadata: {name: g}\n"
        "- kind: Sidecar\n  metadata:\n    name: s\n"
    )
    result = read_documents(text, "l.yaml")
    assert [o.data["kind"] for o in result.objects] == ["Gateway", "Sidecar"]
    assert result.objects[1].line == 6
    assert result.objects[1].line_of("metadata.name") == 8


def test_json_is_read_with_lines() -> None:
    text = '{\n  "kind": "Gateway",\n  "metadata": {\n    "name": "g"\n  }\n}\n'
    (obj,) = read_documents(text, "g.json").objects
    assert obj.data["metadata"] == {"name": "g"}
    assert obj.line_of("metadata.name") == 4


def test_syntax_error_has_line() -> None:
    result = read_documents("kind: A\nspec:\n  a: [1, 2\n  b: 3\n", "bad.yaml")
    assert not result.objects
    (error,) = result.errors
    assert error.file == "bad.yaml" and error.line == 4
    assert "invalid YAML" in error.message


def test_duplicate_key_is_an_error() -> None:
    result = read_documents("kind: A\nmetadata: {name: a}\nkind: B\n", "d.yaml")
    (error,) = result.errors
    assert error.line == 3 and "duplicate key 'kind'" in error.message


def test_non_mapping_document() -> None:
    result = read_documents("- a\n- b\n", "s.yaml")
    (error,) = result.errors
    assert "must be a mapping" in error.message


def test_alias_bomb_is_refused() -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 9):
        prev = f"*a{i - 1}"
        lines.append(f"a{i}: &a{i} [{', '.join([prev] * 10)}]")
    result = read_documents("\n".join(lines) + "\n", "bomb.yaml")
    assert not result.objects
    assert "alias bomb" in result.errors[0].message


def test_deep_nesting_is_refused() -> None:
    text = "a: " + "[" * (MAX_DEPTH + 5) + "]" * (MAX_DEPTH + 5) + "\n"
    result = read_documents(text, "deep.yaml")
    assert "nesting deeper" in result.errors[0].message


def test_recursive_alias_is_refused() -> None:
    result = read_documents("a: &x [*x]\n", "r.yaml")
    assert not result.objects and result.errors


def test_scalars_keep_types_and_dates_become_strings() -> None:
    (obj,) = read_documents("a: 1\nb: true\nc: 2024-01-02\nd: null\n", "s.yaml").objects
    assert obj.data == {"a": 1, "b": True, "c": "2024-01-02", "d": None}

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


KUBERNETES_FLOW = """\
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: full}
spec:
  hosts: [example.com]
  addresses: [1.2.3.4, 001:db8::]
  exportTo: [foo, .]
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: second}
spec:
  hosts: [a:b, "x"]
  endpoints: [{address: 2001:db8::1}]
"""


def test_colons_in_flow_collections_read_as_kubernetes_reads_them() -> None:
    """libyaml refuses ``001:db8::`` before ``]`` (a colon before a flow indicator);
    Kubernetes' YAML reads it as the string it looks like, and so does the reader now,
    with every line kept and every document of the file read."""
    result = read_documents(KUBERNETES_FLOW, "se.yaml")
    assert not result.errors, result.errors
    first, second = result.objects
    assert first.data["spec"]["addresses"] == ["1.2.3.4", "001:db8::"]
    assert first.data["spec"]["exportTo"] == ["foo", "."]
    assert first.lines["spec.addresses[1]"] == 6
    assert second.line == 9
    assert second.data["spec"]["hosts"] == ["a:b", "x"]
    assert second.data["spec"]["endpoints"] == [{"address": "2001:db8::1"}]


def test_flow_mapping_after_a_colon_is_still_a_mapping() -> None:
    (obj,) = read_documents("a: [k: v, x:y, {p: 001:db8::}]\n", "m.yaml").objects
    assert obj.data == {"a": [{"k": "v"}, "x:y", {"p": "001:db8::"}]}


def test_real_syntax_errors_stay_errors_after_the_second_reading() -> None:
    result = read_documents("kind: A\nspec: [001:db8::, {\n", "bad.yaml")
    assert not result.objects
    (error,) = result.errors
    assert "invalid YAML" in error.message


def test_base_60_numbers_are_text_as_in_kubernetes() -> None:
    """YAML 1.1 reads ``1:30`` as 90 and an all-digit IPv6 address as a number;
    Kubernetes' YAML has no base 60, so both stay the text written."""
    text = "a: 1:30\nb: [1:2:3:4:5:6:7:8]\nc: 1:30.5\nd: !!int 90\n"
    (obj,) = read_documents(text, "n.yaml").objects
    assert obj.data == {"a": "1:30", "b": ["1:2:3:4:5:6:7:8"], "c": "1:30.5", "d": 90}

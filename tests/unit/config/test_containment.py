"""Faults stop at their unit: a YAML tag or an oversized number is an error of its field,
its object is rejected (named when it can be) and its siblings load; any failure inside
the loader is the error of the one object, document or text it happened in."""

from __future__ import annotations

import codecs
from typing import Any

import pytest

import pilothouse.config.documents as documents
import pilothouse.config.load as load
from pilothouse.config.load import Loader, LoadResult
from pilothouse.config.model import ConfigKey
from pilothouse.kinds.table import SCHEMAS

SIDECAR = """\
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata:
  name: productpage
  namespace: bookinfo
spec:
  egress:
  - hosts: ["./*"]
"""
GATEWAY = """\
apiVersion: networking.istio.io/v1
kind: Gateway
metadata:
  name: gw
  namespace: bookinfo
spec:
  selector: {istio: ingressgateway}
  servers:
  - port: {number: 8080, name: http, protocol: HTTP}
    hosts: ["*"]
"""
SIDECAR_KEY = ConfigKey("Sidecar", "bookinfo", "productpage")
GATEWAY_KEY = ConfigKey("Gateway", "bookinfo", "gw")
INTERNALS = ("set_int_max_str_digits", "Exceeds the limit", "Traceback", "codec can't")


def two_objects(sidecar: str) -> LoadResult:
    """The edited Sidecar first (lines 1-8), then a good Gateway (from line 10)."""
    return Loader(SCHEMAS).load_text(sidecar + "---\n" + GATEWAY, "mesh.yaml")


def only_error(result: LoadResult) -> load.Problem:
    (problem,) = result.errors
    assert problem.file == "mesh.yaml" and problem.line is not None and problem.message
    assert not any(text in problem.message for text in INTERNALS), problem.message
    return problem


@pytest.mark.parametrize(
    ("edit", "line", "says"),
    [
        (("kind: Sidecar", "kind: !!bool Sidecar"), 2, "'Sidecar' is not a valid !!bool value"),
        (("name: productpage", "name: !!timestamp productpage"), 4, "!!timestamp"),
        (("name: productpage", "name: !!int productpage"), 4, "!!int"),
        (("name: productpage", "name: !!float productpage"), 4, "!!float"),
        (("name: productpage", "name: !!null productpage"), 4, "!!null"),
        (("name: productpage", "name: !!binary productpage"), 4, "!!binary"),
        (("name: productpage", "name: !!set productpage"), 4, "!!set"),
        (("name: productpage", "name: !!python/name:os.system productpage"), 4, "!!python"),
        (("name: productpage", "name: !shop productpage"), 4, "YAML tag !shop"),
        (("namespace: bookinfo", "namespace: !!omap bookinfo"), 5, "!!omap"),
        (("  egress:", "  egress: !!set"), 7, "!!set is not supported on a list"),
        (("spec:", "spec: !!omap"), 6, "!!omap is not supported on a mapping"),
        (("  egress:", "  !!python/str egress:"), 7, "key:"),
    ],
)
def test_a_tag_rejects_its_object_only(edit: tuple[str, str], line: int, says: str) -> None:
    result = two_objects(SIDECAR.replace(*edit, 1))
    assert not result.unreadable, "a tag must not make the whole file unreadable"
    assert [c.key for c in result.configs] == [GATEWAY_KEY]
    assert result.rejected == (SIDECAR_KEY,)
    problem = only_error(result)
    assert problem.line == line and problem.key == SIDECAR_KEY
    assert says in problem.message


@pytest.mark.parametrize(
    ("edit", "path"),
    [
        (("  - hosts", "  - port: {number: " + "9" * 5000 + "}\n    hosts"), "port.number"),
        (("  - hosts", "  - port: {number: '" + "9" * 5000 + "'}\n    hosts"), "port.number"),
        (("  - hosts", "  - port: {number: 1.5e+" + "9" * 5000 + "}\n    hosts"), "port.number"),
        (("name: productpage", "name: " + "7" * 5000), "metadata.name"),
        (("  egress:", "  outboundTrafficPolicy: {mode: " + "1" * 5000 + "}\n  egress:"), "mode"),
    ],
)
def test_an_oversized_number_is_an_error_of_its_field(edit: tuple[str, str], path: str) -> None:
    result = two_objects(SIDECAR.replace(*edit, 1))
    assert [c.key for c in result.configs] == [GATEWAY_KEY]
    problem = only_error(result)
    assert path in problem.message and "too long" in problem.message
    assert len(problem.message) < 200


def test_long_text_where_a_number_belongs_is_shown_short() -> None:
    edit = ("  - hosts", "  - port: {number: 1e" + "9" * 5000 + "}\n    hosts")
    problem = only_error(two_objects(SIDECAR.replace(*edit, 1)))
    assert "port.number: expected a whole number" in problem.message
    assert "(5002 characters)" in problem.message and len(problem.message) < 200


def test_an_oversized_duration_is_an_error_of_its_field() -> None:
    virtual_service = (
        "apiVersion: networking.istio.io/v1\nkind: VirtualService\n"
        "metadata: {name: vs, namespace: bookinfo}\n"
        "spec:\n  hosts: [a]\n  http:\n  - timeout: '" + "9" * 5000 + "s'\n"
        "    route: [{destination: {host: a}}]\n"
    )
    result = two_objects(virtual_service)
    problem = only_error(result)
    assert "spec.http[0].timeout" in problem.message and "too long" in problem.message
    assert problem.line == 7


def test_written_tags_that_fit_and_look_alike_values_still_load() -> None:
    text = GATEWAY.replace("number: 8080", 'number: !!int "8080"').replace(
        "name: gw", "name: !!str gw"
    )
    (config,) = Loader(SCHEMAS).load_strict(text, "g.yaml")
    assert config.key == GATEWAY_KEY
    assert config.spec.servers[0].port.number == 8080  # type: ignore[attr-defined]
    # values that only look like a date or a number stay text, as in Kubernetes
    labels = "  labels: {release: 2024-13-45, odd: 0b_, eq: =}\n"
    text = GATEWAY.replace("  namespace", labels + "  namespace")
    (config,) = Loader(SCHEMAS).load_strict(text, "g")
    assert dict(config.labels) == {"release": "2024-13-45", "odd": "0b_", "eq": "="}


def test_a_tag_in_a_list_item_rejects_that_item_only() -> None:
    text = (
        "apiVersion: v1\nkind: List\nitems:\n"
        + "".join("- " + line + "\n" if i == 0 else "  " + line + "\n"
                  for i, line in enumerate(GATEWAY.splitlines()))
        + "".join("- " + line + "\n" if i == 0 else "  " + line + "\n"
                  for i, line in enumerate(SIDECAR.replace("kind: Sidecar", "kind: !foo Sidecar")
                                           .splitlines()))
    )  # fmt: skip
    result = Loader(SCHEMAS).load_text(text, "mesh.yaml")
    assert [c.key for c in result.configs] == [GATEWAY_KEY]
    assert result.rejected == (SIDECAR_KEY,)
    problem = only_error(result)
    assert problem.line == 15 and "YAML tag !foo" in problem.message


@pytest.mark.parametrize(
    "encoded",
    [
        codecs.BOM_UTF8 + GATEWAY.encode(),
        codecs.BOM_UTF16_LE + GATEWAY.encode("utf-16-le"),
        codecs.BOM_UTF16_BE + GATEWAY.encode("utf-16-be"),
        codecs.BOM_UTF32_LE + GATEWAY.encode("utf-32-le"),
    ],
    ids=["utf-8-bom", "utf-16-le", "utf-16-be", "utf-32-le"],
)
def test_encodings_yaml_allows_load(encoded: bytes) -> None:
    result = Loader(SCHEMAS).load_bytes(encoded, "g.yaml")
    assert result.ok and [c.key for c in result.configs] == [GATEWAY_KEY]


def test_invalid_utf8_is_a_file_error_with_its_line() -> None:
    data = GATEWAY.replace("name: http", "name: h\udcfftp").encode("utf-8", "surrogateescape")
    result = Loader(SCHEMAS).load_bytes(data, "mesh.yaml")
    assert result.unreadable and not result.configs
    problem = only_error(result)
    assert problem.line == 9 and "not valid UTF-8" in problem.message and "0xff" in problem.message
    odd = Loader(SCHEMAS).load_bytes(codecs.BOM_UTF16_LE + b"k\x00i", "mesh.yaml")
    assert odd.unreadable and "not valid UTF-16" in odd.errors[0].message


def test_text_with_lone_surrogates_is_an_error_not_a_crash() -> None:
    result = Loader(SCHEMAS).load_text(GATEWAY.replace("gw", "g\udcffw"), "mesh.yaml")
    assert only_error(result).line == 4


def test_any_failure_inside_one_object_is_that_objects_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = load.decode_message

    def decode(data: Any, message: Any, path: str = "spec") -> Any:
        if isinstance(data, dict) and "egress" in data:
            raise KeyError("a bug")
        return real(data, message, path)

    monkeypatch.setattr(load, "decode_message", decode)
    result = two_objects(SIDECAR)
    assert [c.key for c in result.configs] == [GATEWAY_KEY]
    assert result.rejected == (SIDECAR_KEY,) and not result.unreadable
    problem = only_error(result)
    assert problem.line == 1 and problem.key == SIDECAR_KEY
    assert "internal error" in problem.message and "KeyError" in problem.message
    assert "a bug" not in problem.message  # the exception's own text stays in the debug log


def test_any_failure_inside_one_document_is_that_documents_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = documents._objects_of

    def objects_of(node: Any, *args: Any) -> Any:
        if node.start_mark.line > 0:
            raise AttributeError("a bug")
        return real(node, *args)

    monkeypatch.setattr(documents, "_objects_of", objects_of)
    result = two_objects(SIDECAR)
    assert [c.key for c in result.configs] == [SIDECAR_KEY]
    problem = only_error(result)
    assert problem.line == 10 and "AttributeError" in problem.message


def test_any_failure_while_reading_a_text_is_that_texts_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(text: str, file: str) -> Any:
        raise MemoryError if file == "never" else RuntimeError("a bug")

    monkeypatch.setattr(load, "read_documents", broken)
    result = Loader(SCHEMAS).load_bytes(GATEWAY.encode(), "mesh.yaml")
    assert result.unreadable and not result.configs
    (problem,) = result.errors
    assert problem.file == "mesh.yaml" and "RuntimeError" in problem.message

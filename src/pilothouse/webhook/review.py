"""One AdmissionReview body in, one verdict out: the validation webhook with no HTTP in it.

The object under review goes through the same :class:`~pilothouse.config.load.Loader` as
files do, so kind lookup, apiVersion check, metadata rules, unknown top-level and spec
fields, strict decoding and the semantic validators are exactly those of
``pilothouse validate``.

Request handling follows istiod's webhook, in this order:

- a body over 6 MiB is HTTP 413 (checked before anything is parsed);
- an empty body is HTTP 400;
- a ``Content-Type`` other than ``application/json`` (parameters such as
  ``; charset=utf-8`` allowed) is HTTP 415;
- a body that is not UTF-8 JSON (:func:`~pilothouse.boundary.json_body.read_json`:
  nested deeper than 256 levels, a number of more than 400 digits, ``NaN``...), or not
  an ``admission.k8s.io/v1`` or ``v1beta1`` AdmissionReview with a ``request.uid``, is
  HTTP 400: there is no review to answer, so the API server gets an HTTP error.

Everything else is HTTP 200 with an AdmissionReview in the request's apiVersion whose
``response.uid`` echoes ``request.uid``. Only CREATE and UPDATE are validated; any
other operation is allowed unseen. A denial carries every error, joined with ``"; "``,
in ``response.status.message`` with ``status.code`` 400 (what the API server substitutes
for a denial without a code anyway, and what ``kubectl`` reports as a bad request).
Warnings go to ``response.warnings`` whether or not the object is allowed. For dry-run
requests the denial message ends in ``" (dry run)"``.

An exception anywhere in reviewing one request is a fault of ours and stops there: it
is logged once with its traceback and answered HTTP 500 with a generic message (no
exception text), and the next review goes on as usual.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

from pilothouse.boundary.contain import INTERNAL_ERROR
from pilothouse.boundary.json_body import BadJson, read_json
from pilothouse.config.documents import MAX_DEPTH, RawObject
from pilothouse.config.load import DEFAULT_NAMESPACE, Loader
from pilothouse.config.schema import SchemaSet
from pilothouse.config.validation.report import Severity
from pilothouse.kinds.table import SCHEMAS

MAX_BODY_BYTES: Final = 6 * 1024 * 1024
"""istiod's ``MaxRequestBodyBytes``: larger bodies are refused with HTTP 413."""

REVIEW_API_VERSIONS: Final = ("admission.k8s.io/v1", "admission.k8s.io/v1beta1")
VALIDATED_OPERATIONS: Final = frozenset({"CREATE", "UPDATE"})
DENIAL_CODE: Final = 400
JSON_MEDIA_TYPE: Final = "application/json"
DRY_RUN_SUFFIX: Final = " (dry run)"
OBJECT_FILE: Final = "<admission request>"
"""The file name problems carry; the webhook never shows it (objects have no lines)."""

# istiod's ``reason`` label values for galley_validation_failed.
REASON_UNSUPPORTED_OPERATION: Final = "unsupported_operation"
REASON_DECODE_ERROR: Final = "yaml_decode_error"
REASON_UNKNOWN_TYPE: Final = "unknown_type"
REASON_INVALID_CONFIG: Final = "invalid_config"

_log = logging.getLogger(__name__)


class Outcome(StrEnum):
    """Which ``galley_validation_*`` counter a review feeds."""

    PASSED = "passed"
    FAILED = "failed"
    HTTP_ERROR = "http_error"


@dataclass(frozen=True, slots=True)
class ReviewResult:
    """The HTTP answer to one request, and what it means for the counters.

    ``payload`` is the AdmissionReview to send as JSON (HTTP 200), or the error text
    (any other status). ``kind`` and ``reason`` label the counters: ``reason`` is set
    for failures, including operations that are allowed without validation (istiod
    counts those as failed with reason ``unsupported_operation``).
    """

    status: int
    payload: Mapping[str, Any] | str
    outcome: Outcome
    kind: str = ""
    reason: str = ""
    dry_run: bool = False

    @property
    def content_type(self) -> str:
        return JSON_MEDIA_TYPE if isinstance(self.payload, Mapping) else "text/plain"

    @property
    def allowed(self) -> bool | None:
        """``response.allowed`` of an AdmissionReview answer; None for HTTP errors."""
        if not isinstance(self.payload, Mapping):
            return None
        return bool(self.payload["response"]["allowed"])

    def body_bytes(self) -> bytes:
        if isinstance(self.payload, Mapping):
            return json.dumps(self.payload, separators=(",", ":")).encode()
        return (self.payload + "\n").encode()


def http_error(status: int, text: str) -> ReviewResult:
    """A request refused before any review (HTTP 4xx with a plain-text reason)."""
    return ReviewResult(status, text, Outcome.HTTP_ERROR)


def too_large(limit: int = MAX_BODY_BYTES) -> ReviewResult:
    return http_error(413, f"request body larger than {limit} bytes")


def is_json_content_type(content_type: str | None) -> bool:
    """True for ``application/json``, with or without parameters, in any letter case."""
    if not content_type:
        return False
    media_type = content_type.split(";", 1)[0].strip().lower()
    return media_type == JSON_MEDIA_TYPE


@dataclass(frozen=True, slots=True)
class AdmissionReviewer:
    """Reviews AdmissionReview bodies against one schema set; holds no state."""

    schemas: SchemaSet = SCHEMAS
    max_body_bytes: int = MAX_BODY_BYTES

    def review(self, body: bytes, content_type: str | None) -> ReviewResult:
        """The answer to one webhook request. Never raises for any input."""
        try:
            return self._review(body, content_type)
        except Exception:
            _log.exception("admission review failed")
            return http_error(500, INTERNAL_ERROR)

    def _review(self, body: bytes, content_type: str | None) -> ReviewResult:
        if len(body) > self.max_body_bytes:
            return too_large(self.max_body_bytes)
        if not body:
            return http_error(400, "no body found")
        if not is_json_content_type(content_type):
            return http_error(415, f"invalid Content-Type, want `{JSON_MEDIA_TYPE}`")
        try:
            document = read_json(body)
        except BadJson as bad:
            return http_error(400, f"could not decode body: {bad.reason}")
        request, api_version, problem = _admission_request(document)
        if request is None or api_version is None:
            return http_error(400, f"could not decode body: {problem}")
        return self._admit(api_version, request)

    def _admit(self, api_version: str, request: Mapping[str, Any]) -> ReviewResult:
        uid: str = request["uid"]
        dry_run = request.get("dryRun") is True
        reply = _Reply(api_version, uid, dry_run)
        operation = request.get("operation")
        if operation not in VALIDATED_OPERATIONS:
            return reply.allow(_request_kind(request), REASON_UNSUPPORTED_OPERATION)
        obj = request.get("object")
        if not isinstance(obj, Mapping):
            return reply.deny("", REASON_DECODE_ERROR, ["cannot decode configuration: no object"])
        declared = obj.get("kind")
        kind = declared if isinstance(declared, str) else ""
        if _deeper_than(obj, MAX_DEPTH):
            message = f"cannot decode configuration: nesting deeper than {MAX_DEPTH} levels"
            return reply.deny(kind, REASON_DECODE_ERROR, [message])
        namespace = request.get("namespace")
        if not isinstance(namespace, str) or not namespace:
            namespace = DEFAULT_NAMESPACE
        loader = Loader(self.schemas, default_namespace=namespace, source="webhook")
        raw = RawObject(_with_request_identity(obj, request), OBJECT_FILE, 1, {})
        config, problems, _key = loader.load_object(raw)
        warnings = [p.message for p in problems if p.severity is Severity.WARNING]
        errors = [p.message for p in problems if p.severity is Severity.ERROR]
        if config is None:
            reason = REASON_INVALID_CONFIG
            if not kind or self.schemas.by_manifest(kind, obj.get("apiVersion")) is None:
                reason = REASON_UNKNOWN_TYPE
            return reply.deny(kind, reason, errors or ["configuration is invalid"], warnings)
        return reply.allow(kind, warnings=warnings)


def review(body: bytes, content_type: str | None, schemas: SchemaSet | None = None) -> ReviewResult:
    """Review one request with the built-in schemas (or ``schemas``)."""
    reviewer = AdmissionReviewer() if schemas is None else AdmissionReviewer(schemas)
    return reviewer.review(body, content_type)


@dataclass(frozen=True, slots=True)
class _Reply:
    """Builds the AdmissionReview answers for one request."""

    api_version: str
    uid: str
    dry_run: bool

    def allow(self, kind: str, reason: str = "", warnings: list[str] | None = None) -> ReviewResult:
        outcome = Outcome.FAILED if reason else Outcome.PASSED
        payload = self._review({"uid": self.uid, "allowed": True}, warnings)
        return ReviewResult(200, payload, outcome, kind, reason, self.dry_run)

    def deny(
        self, kind: str, reason: str, errors: list[str], warnings: list[str] | None = None
    ) -> ReviewResult:
        message = "; ".join(errors)
        if self.dry_run:
            message += DRY_RUN_SUFFIX
        _log.info("rejected %s (%s): %s", kind or "object", reason, message)
        status = {"status": "Failure", "code": DENIAL_CODE, "message": message}
        payload = self._review({"uid": self.uid, "allowed": False, "status": status}, warnings)
        return ReviewResult(200, payload, Outcome.FAILED, kind, reason, self.dry_run)

    def _review(self, response: dict[str, Any], warnings: list[str] | None) -> dict[str, Any]:
        if warnings:
            response["warnings"] = list(warnings)
        return {"apiVersion": self.api_version, "kind": "AdmissionReview", "response": response}


def _admission_request(
    document: Any,
) -> tuple[Mapping[str, Any] | None, str | None, str]:
    """The ``request`` of an AdmissionReview and its apiVersion, or why it is not one."""
    if not isinstance(document, Mapping):
        return None, None, "not an AdmissionReview (a JSON object is required)"
    api_version = document.get("apiVersion")
    if document.get("kind") != "AdmissionReview":
        return None, None, "not an AdmissionReview (kind must be AdmissionReview)"
    if api_version not in REVIEW_API_VERSIONS:
        accepted = " or ".join(REVIEW_API_VERSIONS)
        return None, None, f"unsupported AdmissionReview apiVersion {api_version!r}; use {accepted}"
    request = document.get("request")
    if not isinstance(request, Mapping):
        return None, None, "AdmissionReview has no request"
    uid = request.get("uid")
    if not isinstance(uid, str) or not uid:
        return None, None, "AdmissionReview request has no uid"
    if not isinstance(request.get("operation", ""), str):
        return None, None, "AdmissionReview request.operation is not a string"
    return request, str(api_version), ""


def _request_kind(request: Mapping[str, Any]) -> str:
    kind = request.get("kind")
    if isinstance(kind, Mapping) and isinstance(kind.get("kind"), str):
        return str(kind["kind"])
    return ""


def _with_request_identity(obj: Mapping[str, Any], request: Mapping[str, Any]) -> dict[str, Any]:
    """``obj`` with ``request.namespace`` and ``request.name`` filled in where it has none."""
    data = dict(obj)
    metadata = data.get("metadata")
    if not isinstance(metadata, Mapping):
        return data
    filled = dict(metadata)
    for field_name in ("namespace", "name"):
        given = request.get(field_name)
        if not filled.get(field_name) and isinstance(given, str) and given:
            filled[field_name] = given
    data["metadata"] = filled
    return data


def _deeper_than(value: Any, limit: int) -> bool:
    """True when ``value`` nests dicts and lists more than ``limit`` levels (no recursion)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(item, Mapping):
            stack.extend((child, depth + 1) for child in item.values())
        elif isinstance(item, list):
            stack.extend((child, depth + 1) for child in item)
    return False

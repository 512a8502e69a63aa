"""Plain data into protobuf specs through the proto3 JSON mapping, strictly and with paths.

Istio CRD specs *are* the proto3 JSON mapping of Istio's messages, so a spec is decoded
with ``json_format.ParseDict``. Before that, a walk over the message descriptor checks
every key and value and reports problems by field path as users read them
(``spec.http[0].route[1].destination.hostt: unknown field``), which ParseDict alone
does not do well. The walk also accepts what Istio users write but strict proto3 JSON
does not: Go-style durations such as ``3m`` or ``1h30m`` (Istio documents them).

Numbers written as text are read only when they are short enough to be numbers at all
(:data:`MAX_NUMBER_DIGITS`): a longer one is a problem of its field, not a Python limit.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor
from google.protobuf.message import Message

from pilothouse.config.scalars import shown

_PASS_THROUGH = frozenset(
    {
        "google.protobuf.Struct",
        "google.protobuf.Value",
        "google.protobuf.ListValue",
        "google.protobuf.Any",
        "google.protobuf.Timestamp",
        "google.protobuf.FieldMask",
        "google.protobuf.Empty",
    }
)
_WRAPPERS = {
    "google.protobuf.BoolValue": FieldDescriptor.TYPE_BOOL,
    "google.protobuf.StringValue": FieldDescriptor.TYPE_STRING,
    "google.protobuf.BytesValue": FieldDescriptor.TYPE_BYTES,
    "google.protobuf.Int32Value": FieldDescriptor.TYPE_INT32,
    "google.protobuf.UInt32Value": FieldDescriptor.TYPE_UINT32,
    "google.protobuf.Int64Value": FieldDescriptor.TYPE_INT64,
    "google.protobuf.UInt64Value": FieldDescriptor.TYPE_UINT64,
    "google.protobuf.FloatValue": FieldDescriptor.TYPE_FLOAT,
    "google.protobuf.DoubleValue": FieldDescriptor.TYPE_DOUBLE,
}
_NON_EMPTY_MAPS = frozenset({"istio.security.v1beta1.PeerAuthentication.port_level_mtls"})
"""Maps whose CRD schema in Istio says ``minProperties: 1``: written but empty is refused,
as the API server refuses it (a decoded message cannot tell empty from absent)."""
_INT_RANGES = {
    FieldDescriptor.TYPE_INT32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_SINT32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_SFIXED32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_UINT32: (0, 2**32 - 1),
    FieldDescriptor.TYPE_FIXED32: (0, 2**32 - 1),
    FieldDescriptor.TYPE_INT64: (-(2**63), 2**63 - 1),
    FieldDescriptor.TYPE_SINT64: (-(2**63), 2**63 - 1),
    FieldDescriptor.TYPE_SFIXED64: (-(2**63), 2**63 - 1),
    FieldDescriptor.TYPE_UINT64: (0, 2**64 - 1),
    FieldDescriptor.TYPE_FIXED64: (0, 2**64 - 1),
}
_FLOATS = frozenset({FieldDescriptor.TYPE_FLOAT, FieldDescriptor.TYPE_DOUBLE})
_GO_DURATION = re.compile(r"^([-+]?)((?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|μs|ms|s|m|h))+$")
_GO_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_UNIT_NANOS = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,
    "μs": 1_000,
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
}
_MAX_DURATION_SECONDS = 315_576_000_000
_WHOLE_NUMBER = re.compile(r"[-+]?[0-9]+")
MAX_NUMBER_DIGITS = 40
"""Longest whole number read from text (the largest 64-bit one has 20 digits)."""
_HUGE = 10**MAX_NUMBER_DIGITS


@dataclass(frozen=True, slots=True)
class DecodeProblem:
    path: str
    message: str


class _Walk:
    def __init__(self) -> None:
        self.problems: list[DecodeProblem] = []

    def fail(self, path: str, message: str) -> None:
        self.problems.append(DecodeProblem(path, message))


def decode_message(
    data: Any, message: type[Message], path: str = "spec"
) -> tuple[Message | None, tuple[DecodeProblem, ...]]:
    """Decode ``data`` into a new ``message``; on any problem return None and the problems."""
    walk = _Walk()
    if data is None:
        data = {}
    descriptor = cast(Descriptor, message.DESCRIPTOR)
    normalised = _message(data, descriptor, path, walk)
    if walk.problems:
        return None, tuple(walk.problems)
    result = message()
    try:
        json_format.ParseDict(normalised, result, ignore_unknown_fields=False)
    except (json_format.ParseError, ValueError, TypeError, OverflowError) as exc:
        return None, (DecodeProblem(path, _parse_error_text(str(exc))),)
    return result, ()


def _parse_error_text(text: str) -> str:
    # ParseDict nests "Failed to parse x field:" prefixes; keep only the innermost reason.
    reason = text.rsplit("field: ", 1)[-1]
    return reason.split(" at ", 1)[0].rstrip(".")


def _message(value: Any, descriptor: Descriptor, path: str, walk: _Walk) -> Any:
    name = descriptor.full_name
    if name == "google.protobuf.Duration":
        return _duration(value, path, walk)
    if name in _WRAPPERS:
        return _scalar(value, _WRAPPERS[name], None, path, walk)
    if name in _PASS_THROUGH:
        return value
    if not isinstance(value, Mapping):
        walk.fail(path, f"expected an object, got {_describe(value)}")
        return value
    fields: dict[str, FieldDescriptor] = {}
    for each in descriptor.fields:
        fields[each.json_name] = each
        fields[each.name] = each
    out: dict[str, Any] = {}
    oneofs_seen: dict[str, str] = {}
    for key, item in value.items():
        child = f"{path}.{key}" if path else str(key)
        field = fields.get(key)
        if field is None:
            walk.fail(child, "unknown field" + _suggest(key, descriptor))
            continue
        if item is None:
            continue
        oneof = field.containing_oneof
        if oneof is not None and not oneof.name.startswith("_"):
            earlier = oneofs_seen.get(oneof.name)
            if earlier is not None:
                walk.fail(child, f"only one of {earlier} and {key} may be set ({oneof.name})")
                continue
            oneofs_seen[oneof.name] = key
        out[field.json_name] = _field(item, field, child, walk)
    return out


def _field(value: Any, field: FieldDescriptor, path: str, walk: _Walk) -> Any:
    message_type = field.message_type
    if message_type is not None and message_type.GetOptions().map_entry:
        if not value and isinstance(value, Mapping) and field.full_name in _NON_EMPTY_MAPS:
            walk.fail(path, "must have at least one entry when it is written (Istio's schema)")
        return _map(value, message_type, path, walk)
    if field.is_repeated:
        if not isinstance(value, list):
            walk.fail(path, f"expected a list, got {_describe(value)}")
            return value
        return [_single(item, field, f"{path}[{i}]", walk) for i, item in enumerate(value)]
    return _single(value, field, path, walk)


def _map(value: Any, entry: Descriptor, path: str, walk: _Walk) -> Any:
    if not isinstance(value, Mapping):
        walk.fail(path, f"expected an object (a map), got {_describe(value)}")
        return value
    key_field = entry.fields_by_name["key"]
    value_field = entry.fields_by_name["value"]
    out: dict[str, Any] = {}
    for key, item in value.items():
        child = f"{path}[{key}]"
        if key_field.type in _INT_RANGES:
            _scalar(str(key), key_field.type, None, child, walk)
        out[str(key)] = _single(item, value_field, child, walk)
    return out


def _single(value: Any, field: FieldDescriptor, path: str, walk: _Walk) -> Any:
    if field.message_type is not None:
        return _message(value, field.message_type, path, walk)
    return _scalar(value, field.type, field.enum_type, path, walk)


def _scalar(value: Any, kind: int, enum: EnumDescriptor | None, path: str, walk: _Walk) -> Any:
    if kind == FieldDescriptor.TYPE_ENUM and enum is not None:
        return _enum(value, enum, path, walk)
    if kind == FieldDescriptor.TYPE_BOOL:
        if not isinstance(value, bool):
            walk.fail(path, f"expected true or false, got {_describe(value)}")
        return value
    if kind in (FieldDescriptor.TYPE_STRING, FieldDescriptor.TYPE_BYTES):
        if not isinstance(value, str):
            walk.fail(path, f"expected a string, got {_describe(value)} (quote it)")
        return value
    if kind in _FLOATS:
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            walk.fail(path, f"expected a number, got {_describe(value)}")
        elif isinstance(value, str) and value not in ("NaN", "Infinity", "-Infinity"):
            try:
                return float(value)
            except ValueError:
                walk.fail(path, f"expected a number, got {value!r}")
        elif isinstance(value, float) and math.isnan(value):
            return "NaN"
        return value
    low, high = _INT_RANGES[kind]
    if _too_long(value):
        walk.fail(path, f"number too long; it must be within [{low}, {high}]")
        return value
    number: int | None = None
    if isinstance(value, bool):
        number = None
    elif isinstance(value, int):
        number = value
    elif _integral(value):
        number = int(value)
    if number is None:
        walk.fail(path, f"expected a whole number, got {_describe(value)}")
        return value
    if not low <= number <= high:
        walk.fail(path, f"{number} is out of range [{low}, {high}]")
    return number


def _integral(value: Any) -> bool:
    if isinstance(value, float):
        return value.is_integer()
    return isinstance(value, str) and _WHOLE_NUMBER.fullmatch(value.strip()) is not None


def _too_long(value: Any) -> bool:
    """A number (or number-like text) with more than MAX_NUMBER_DIGITS digits."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return bool(abs(value) >= _HUGE)
    if isinstance(value, str):
        return len(value.strip().lstrip("+-")) > MAX_NUMBER_DIGITS and _integral(value)
    return False


def _enum(value: Any, enum: EnumDescriptor, path: str, walk: _Walk) -> Any:
    names = [v.name for v in enum.values]
    if isinstance(value, str):
        if value in enum.values_by_name:
            return value
        upper = value.upper()
        if upper in enum.values_by_name:
            return upper
        walk.fail(path, f"unknown value {value!r}; expected one of {', '.join(names)}")
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        if value in enum.values_by_number:
            return value
        shown = "too long to show" if _too_long(value) else str(value)
        walk.fail(path, f"unknown value {shown}; expected one of {', '.join(names)}")
        return value
    walk.fail(path, f"expected one of {', '.join(names)}, got {_describe(value)}")
    return value


def _duration(value: Any, path: str, walk: _Walk) -> Any:
    if isinstance(value, Mapping) and set(value) <= {"seconds", "nanos"}:
        seconds = value.get("seconds", 0)
        nanos = value.get("nanos", 0)
        if isinstance(seconds, int) and isinstance(nanos, int):
            return _format_duration(int(seconds) * 1_000_000_000 + int(nanos), path, walk)
    if not isinstance(value, str):
        walk.fail(path, f"expected a duration such as 5s or 100ms, got {_describe(value)}")
        return value
    text = value.strip()
    if not _GO_DURATION.match(text):
        walk.fail(path, f"invalid duration {value!r}; write it like 5s, 100ms, 1m30s or 1h")
        return value
    sign = -1 if text.startswith("-") else 1
    nanos_total = 0
    parts = _GO_PART.findall(text)
    if any(len(amount) > MAX_NUMBER_DIGITS for amount, _unit in parts):
        walk.fail(path, "duration is too long")
        return value
    for amount, unit in parts:
        whole, _, frac = amount.partition(".")
        scale = _UNIT_NANOS[unit]
        nanos_total += int(whole or "0") * scale
        if frac:
            nanos_total += int(frac) * scale // (10 ** len(frac))
    return _format_duration(sign * nanos_total, path, walk)


def _format_duration(nanos: int, path: str, walk: _Walk) -> str:
    if abs(nanos) > _MAX_DURATION_SECONDS * 1_000_000_000:
        walk.fail(path, "duration is too long")
        return "0s"
    sign = "-" if nanos < 0 else ""
    seconds, rest = divmod(abs(nanos), 1_000_000_000)
    if rest == 0:
        return f"{sign}{seconds}s"
    return f"{sign}{seconds}.{rest:09d}s"


def _suggest(key: str, descriptor: Descriptor) -> str:
    names = sorted({f.json_name for f in descriptor.fields})
    close = difflib.get_close_matches(str(key), names, n=1, cutoff=0.75)
    return f" (did you mean {close[0]}?)" if close else ""


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int) and _too_long(value):
        return "a number too long to show"
    if isinstance(value, int | float):
        return f"the number {value}"
    if isinstance(value, str):
        return f"the string {shown(value)}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__

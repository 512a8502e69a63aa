"""Enum fields holding numbers their enum does not declare.

Proto3 enums are open: a message decoded from the wire (or from JSON written with a
number) keeps an unknown value as a bare integer. Istio would reject such an object, so
every validator starts by walking its spec for them.
"""

from __future__ import annotations

from google.protobuf.descriptor import EnumDescriptor, FieldDescriptor
from google.protobuf.message import Message

from pilothouse.config.validation.report import Report


def check_enum_values(message: Message, path: str, report: Report) -> None:
    """Report every enum field under ``message`` whose value its enum does not declare."""
    for field, value in message.ListFields():
        field_path = f"{path}.{field.json_name}"
        if _is_map(field):
            value_field = _map_value_field(field)
            for key in sorted(value):
                _check_value(value_field, value[key], f"{field_path}[{key}]", report)
        elif field.is_repeated:
            for index, item in enumerate(value):
                _check_value(field, item, f"{field_path}[{index}]", report)
        else:
            _check_value(field, value, field_path, report)


def _check_value(field: FieldDescriptor, value: object, path: str, report: Report) -> None:
    if field.type == FieldDescriptor.TYPE_ENUM:
        enum_type: EnumDescriptor | None = field.enum_type
        if (
            enum_type is not None
            and isinstance(value, int)
            and value not in enum_type.values_by_number
        ):
            known = ", ".join(v.name for v in enum_type.values)
            report.error(path, f"unknown {enum_type.name} value {value} (known: {known})")
    elif field.type == FieldDescriptor.TYPE_MESSAGE and isinstance(value, Message):
        check_enum_values(value, path, report)


def _is_map(field: FieldDescriptor) -> bool:
    entry = field.message_type
    return (
        field.type == FieldDescriptor.TYPE_MESSAGE
        and entry is not None
        and entry.GetOptions().map_entry
    )


def _map_value_field(field: FieldDescriptor) -> FieldDescriptor:
    entry = field.message_type
    assert entry is not None
    return entry.fields_by_name["value"]

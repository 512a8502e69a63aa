"""Fills a protobuf message with a value in every field, walking its descriptor.

Scalars get a non-default value (so proto3 writes them), enums their first
non-zero value, messages are filled recursively up to a depth limit, repeated
fields get one element and maps one entry. A oneof can hold only one member, so
the caller picks which one with ``choice`` (member ``choice`` modulo the size of
the oneof); ``variant_count`` says how many choices cover every member.
"""

from __future__ import annotations

from typing import cast

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

MAX_DEPTH = 4

ScalarValue = int | float | bool | str | bytes


def variant_count(descriptor: Descriptor) -> int:
    """How many instances are needed so that each oneof member is set once."""
    return max((len(oneof.fields) for oneof in descriptor.oneofs), default=1)


def scalar_value(field: FieldDescriptor) -> ScalarValue:
    """A non-default value for a scalar or enum field."""
    cpp = field.cpp_type
    if cpp == FieldDescriptor.CPPTYPE_ENUM:
        assert field.enum_type is not None
        numbers = [value.number for value in field.enum_type.values if value.number != 0]
        return numbers[0] if numbers else 0
    if cpp == FieldDescriptor.CPPTYPE_BOOL:
        return True
    if cpp in (FieldDescriptor.CPPTYPE_DOUBLE, FieldDescriptor.CPPTYPE_FLOAT):
        return 1.5
    if cpp == FieldDescriptor.CPPTYPE_STRING:
        return b"\x01x" if field.type == FieldDescriptor.TYPE_BYTES else "x"
    if cpp == FieldDescriptor.CPPTYPE_MESSAGE:
        raise TypeError(f"{field.full_name} is a message field")
    return 7  # every integer kind


def chosen_fields(descriptor: Descriptor, choice: int) -> list[FieldDescriptor]:
    """The fields populate() sets: all plain fields and one member of each oneof."""
    chosen: list[FieldDescriptor] = []
    for field in descriptor.fields:
        oneof = field.containing_oneof
        if oneof is not None and oneof.fields[choice % len(oneof.fields)] is not field:
            continue
        chosen.append(field)
    return chosen


def _is_map(field: FieldDescriptor) -> bool:
    message = field.message_type
    return message is not None and message.GetOptions().map_entry


def populate(message: Message, choice: int = 0, depth: int = 0) -> list[FieldDescriptor]:
    """Set every field chosen by chosen_fields(); return them."""
    descriptor = cast(Descriptor, message.DESCRIPTOR)
    chosen = chosen_fields(descriptor, choice)
    for field in chosen:
        _set_field(message, field, depth)
    return chosen


def _fill(message: Message, depth: int) -> None:
    message.SetInParent()
    if depth < MAX_DEPTH:
        populate(message, 0, depth + 1)


def _set_field(message: Message, field: FieldDescriptor, depth: int) -> None:
    name = field.name
    if _is_map(field):
        entry = field.message_type
        assert entry is not None
        key = scalar_value(entry.fields_by_name["key"])
        value_field = entry.fields_by_name["value"]
        container = getattr(message, name)
        if value_field.cpp_type == FieldDescriptor.CPPTYPE_MESSAGE:
            _fill(container[key], depth)
        else:
            container[key] = scalar_value(value_field)
    elif field.is_repeated:
        container = getattr(message, name)
        if field.cpp_type == FieldDescriptor.CPPTYPE_MESSAGE:
            _fill(container.add(), depth)
        else:
            container.append(scalar_value(field))
    elif field.cpp_type == FieldDescriptor.CPPTYPE_MESSAGE:
        _fill(getattr(message, name), depth)
    else:
        setattr(message, name, scalar_value(field))

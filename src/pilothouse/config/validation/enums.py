"""Enum fields holding numbers their enum does not declare.

Proto3 enums are open: a message decoded from the wire (or from JSON written with a
number) keeps an unknown value as a bare integer. Istio would reject such an object, so
every validator starts by walking its spec for them.

The walk is planned once per message type: only the fields that are enums, or that
lead to messages with enums somewhere below, are visited (a ServiceEntry has two such
fields), so the check costs next to nothing for the objects that pass it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from enum import Enum, auto

from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor
from google.protobuf.message import Message

from pilothouse.config.validation.report import Report


class _Shape(Enum):
    ENUM = auto()
    ENUM_LIST = auto()
    ENUM_MAP = auto()
    MESSAGE = auto()
    MESSAGE_LIST = auto()
    MESSAGE_MAP = auto()


@dataclass(frozen=True, slots=True)
class _Step:
    """One field the walk visits: its name, JSON name, shape and (for enums) the enum."""

    name: str
    json_name: str
    shape: _Shape
    enum: EnumDescriptor | None = None
    numbers: frozenset[int] = frozenset()
    """The numbers ``enum`` declares (looked up without going through the descriptor)."""


def check_enum_values(message: Message, path: str, report: Report) -> None:
    """Report every enum field under ``message`` whose value its enum does not declare.

    Paths are spelled out only for what is reported or walked into: the common case, a
    plain enum field holding a declared value, costs a lookup and no formatting.
    """
    for step in _plan(message.DESCRIPTOR):
        value = getattr(message, step.name)
        shape = step.shape
        if shape is _Shape.ENUM:
            if value not in step.numbers:
                _report_number(step, value, f"{path}.{step.json_name}", report)
        elif shape is _Shape.ENUM_LIST:
            for index, item in enumerate(value):
                if item not in step.numbers:
                    _report_number(step, item, f"{path}.{step.json_name}[{index}]", report)
        elif shape is _Shape.ENUM_MAP:
            for key in sorted(value):
                if value[key] not in step.numbers:
                    _report_number(step, value[key], f"{path}.{step.json_name}[{key}]", report)
        elif shape is _Shape.MESSAGE:
            if message.HasField(step.name):
                check_enum_values(value, f"{path}.{step.json_name}", report)
        elif shape is _Shape.MESSAGE_LIST:
            for index, item in enumerate(value):
                check_enum_values(item, f"{path}.{step.json_name}[{index}]", report)
        else:
            for key in sorted(value):
                check_enum_values(value[key], f"{path}.{step.json_name}[{key}]", report)


def _report_number(step: _Step, value: int, path: str, report: Report) -> None:
    enum = step.enum
    assert enum is not None
    known = ", ".join(v.name for v in enum.values)
    report.error(path, f"unknown {enum.name} value {value} (known: {known})")


@functools.cache
def _plan(descriptor: Descriptor) -> tuple[_Step, ...]:
    """The fields of ``descriptor`` that are enums or can lead to one, by field number."""
    leading = _types_leading_to_enums(descriptor)
    steps: list[_Step] = []
    for field in sorted(descriptor.fields, key=lambda f: f.number):
        target = _value_field(field)
        if target.type == FieldDescriptor.TYPE_ENUM:
            shape = _Shape.ENUM_MAP if _is_map(field) else _Shape.ENUM
            if shape is _Shape.ENUM and field.is_repeated:
                shape = _Shape.ENUM_LIST
            enum = target.enum_type
            assert enum is not None
            numbers = frozenset(enum.values_by_number)
            steps.append(_Step(field.name, field.json_name, shape, enum, numbers))
        elif target.type == FieldDescriptor.TYPE_MESSAGE and target.message_type in leading:
            shape = _Shape.MESSAGE_MAP if _is_map(field) else _Shape.MESSAGE
            if shape is _Shape.MESSAGE and field.is_repeated:
                shape = _Shape.MESSAGE_LIST
            steps.append(_Step(field.name, field.json_name, shape))
    return tuple(steps)


def _types_leading_to_enums(root: Descriptor) -> frozenset[Descriptor]:
    """The message types reachable from ``root`` that hold an enum somewhere below."""
    reachable: list[Descriptor] = []
    seen: set[Descriptor] = set()
    stack = [root]
    while stack:
        descriptor = stack.pop()
        if descriptor in seen:
            continue
        seen.add(descriptor)
        reachable.append(descriptor)
        for field in descriptor.fields:
            target = _value_field(field)
            if target.type == FieldDescriptor.TYPE_MESSAGE and target.message_type is not None:
                stack.append(target.message_type)
    leading: set[Descriptor] = set()
    grew = True
    while grew:  # a fixpoint, because message types can be recursive
        grew = False
        for descriptor in reachable:
            if descriptor not in leading and any(
                _value_field(f).type == FieldDescriptor.TYPE_ENUM
                or _value_field(f).message_type in leading
                for f in descriptor.fields
            ):
                leading.add(descriptor)
                grew = True
    return frozenset(leading)


def _value_field(field: FieldDescriptor) -> FieldDescriptor:
    """The field itself, or for a map field its entry's ``value`` field."""
    if _is_map(field):
        entry = field.message_type
        assert entry is not None
        return entry.fields_by_name["value"]
    return field


def _is_map(field: FieldDescriptor) -> bool:
    entry = field.message_type
    return (
        field.type == FieldDescriptor.TYPE_MESSAGE
        and entry is not None
        and entry.GetOptions().map_entry
    )

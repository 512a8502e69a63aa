"""The generated messages carry exactly the field numbers of the Istio wire reference.

The expected numbers come from field_table.py, typed in by hand from the
reference. Numbers are checked three ways: the set of messages, the numbers that
actually appear on the wire for a fully populated message, and the descriptors.
"""

from __future__ import annotations

import pytest
from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import Descriptor
from google.protobuf.message_factory import GetMessageClass

from .field_table import ENUMS, FIELDS, RESERVED
from .generated_modules import all_enums, all_messages
from .populate import chosen_fields, populate, variant_count
from .wire_tags import LENGTH_DELIMITED, VARINT, read_tags

MESSAGES = all_messages()


def test_every_generated_message_is_in_the_table() -> None:
    missing = sorted(set(MESSAGES) - set(FIELDS))
    assert not missing, f"messages without a reference entry: {missing}"


def test_every_table_message_is_generated() -> None:
    absent = sorted(set(FIELDS) - set(MESSAGES))
    assert not absent, f"reference messages not generated: {absent}"


def test_the_kinds_are_covered() -> None:
    # Guards against the discovery finding nothing and the two tests above
    # passing vacuously.
    for kind in ("VirtualService", "DestinationRule", "ServiceEntry", "Sidecar", "Gateway"):
        assert f"istio.networking.v1alpha3.{kind}" in MESSAGES
    assert len(MESSAGES) == len(FIELDS) > 90


def _wire_numbers(descriptor: Descriptor, choice: int) -> tuple[set[int], set[int]]:
    """(numbers found on the wire, numbers the table expects) for one populated variant."""
    message = GetMessageClass(descriptor)()
    chosen = populate(message, choice)
    table = FIELDS[descriptor.full_name]
    expected = {table[field.name] for field in chosen}
    on_wire = {number for number, _ in read_tags(message.SerializeToString())}
    return on_wire, expected


@pytest.mark.parametrize("full_name", sorted(FIELDS))
def test_wire_numbers_match_the_table(full_name: str) -> None:
    descriptor = MESSAGES[full_name]
    seen: set[int] = set()
    for choice in range(variant_count(descriptor)):
        on_wire, expected = _wire_numbers(descriptor, choice)
        assert on_wire == expected, f"{full_name} (oneof choice {choice})"
        seen |= on_wire
    # Across the variants every field of the table has been on the wire.
    assert seen == set(FIELDS[full_name].values()), full_name


@pytest.mark.parametrize("full_name", sorted(FIELDS))
def test_descriptor_numbers_match_the_table(full_name: str) -> None:
    descriptor = MESSAGES[full_name]
    actual = {field.name: field.number for field in descriptor.fields}
    assert actual == FIELDS[full_name]


def test_enum_values_match_the_table() -> None:
    enums = all_enums()
    assert sorted(enums) == sorted(ENUMS)
    for full_name, values in ENUMS.items():
        actual = {value.name: value.number for value in enums[full_name].values}
        assert actual == values, full_name


def _reserved_numbers(descriptor: Descriptor) -> set[int]:
    proto = descriptor_pb2.DescriptorProto()
    descriptor.CopyToProto(proto)
    return {n for r in proto.reserved_range for n in range(r.start, r.end)}


@pytest.mark.parametrize("full_name", sorted(RESERVED))
def test_removed_numbers_stay_reserved(full_name: str) -> None:
    assert _reserved_numbers(MESSAGES[full_name]) == RESERVED[full_name]


def test_unreserved_messages_reserve_nothing() -> None:
    extra = {
        name: _reserved_numbers(descriptor)
        for name, descriptor in MESSAGES.items()
        if name not in RESERVED and _reserved_numbers(descriptor)
    }
    assert not extra


def test_oneof_variants_cover_each_member() -> None:
    descriptor = MESSAGES["istio.networking.v1alpha3.HTTPFaultInjection.Abort"]
    members = {
        field.name
        for choice in range(variant_count(descriptor))
        for field in chosen_fields(descriptor, choice)
    }
    assert members == {"http_status", "grpc_status", "http2_error", "percentage"}


def test_tag_reader_decodes_known_bytes() -> None:
    # field 1 varint 150, field 2 string "hi", field 300 varint 1
    data = b"\x08\x96\x01" + b"\x12\x02hi" + b"\xe0\x12\x01"
    assert read_tags(data) == [(1, VARINT), (2, LENGTH_DELIMITED), (300, VARINT)]


def test_tag_reader_rejects_truncated_payload() -> None:
    with pytest.raises(ValueError):
        read_tags(b"\x12\x05hi")

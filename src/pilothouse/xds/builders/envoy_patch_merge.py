"""How an EnvoyFilter MERGE changes a message: istiod's ``proto.Merge`` and Any merge.

:func:`merge` is protobuf's merge (set scalars replace, messages merge field by field,
lists append, map entries replace by key) except that a ``google.protobuf.Duration`` is
replaced whole, as istiod's ``pkg/proto/merge`` does (merging ``{seconds: 3}`` into
``{nanos: 5}`` would otherwise give 3.000000005 s). With ``replace_lists`` (operation
MERGE_AND_REPLACE_LIST) a list the patch sets replaces the target's instead of being
appended to it, at every depth of the merge; maps still merge by key, and lists inside a
``typed_config`` (merged by :func:`merge_any`) still append, as in istiod.

:func:`merge_any` is istiod's ``MergeAnyWithAny``: two ``Any`` of the same type are
unpacked, merged and packed again; of different types they cannot be merged
(:class:`MergeRefused`; istiod panics there and drops the rest of its pass).
"""

from __future__ import annotations

from typing import Any, Final

from google.protobuf import any_pb2, descriptor_pool
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message
from google.protobuf.message_factory import GetMessageClass

from pilothouse.api.istio.networking.v1alpha3.envoy_filter_pb2 import EnvoyFilter

_DURATION = "google.protobuf.Duration"
MERGES: Final = frozenset({EnvoyFilter.Patch.MERGE, EnvoyFilter.Patch.MERGE_AND_REPLACE_LIST})
"""The operations that merge a value into what they match."""


class MergeRefused(Exception):
    """Two Anys of different types (the message says which)."""


def merge(target: Message, patch: Message, *, replace_lists: bool = False) -> None:
    """Merge ``patch`` into ``target`` (same type), Durations replaced whole, and lists
    the patch sets replaced instead of appended when ``replace_lists``."""
    for field, value in patch.ListFields():
        if field.is_repeated:  # a list, or a map (a list of entry messages)
            if replace_lists and not _is_map(field):
                target.ClearField(field.name)
            getattr(target, field.name).MergeFrom(value)
            continue
        if field.type != FieldDescriptor.TYPE_MESSAGE:
            setattr(target, field.name, value)
            continue
        held = getattr(target, field.name)
        if held.DESCRIPTOR.full_name == _DURATION or not target.HasField(field.name):
            held.CopyFrom(value)
        else:
            merge(held, value, replace_lists=replace_lists)


def replaces_lists(operation: int) -> bool:
    """Whether a merging ``operation`` replaces the lists its value sets."""
    return operation == EnvoyFilter.Patch.MERGE_AND_REPLACE_LIST


def _is_map(field: FieldDescriptor) -> bool:
    entry = field.message_type
    return entry is not None and entry.GetOptions().map_entry


def merge_any(target: any_pb2.Any, patch: any_pb2.Any) -> None:
    """Merge the message ``patch`` holds into the one ``target`` holds, in place."""
    if target.type_url != patch.type_url:
        raise MergeRefused(f"cannot merge {patch.type_url} into {target.type_url}")
    held = unpack(target)
    merge(held, unpack(patch))
    target.Pack(held)


def unpack(packed: any_pb2.Any) -> Any:
    """The message an Any holds (its type must be loaded: patch values were decoded with
    it, and generated config only holds types pilothouse imports)."""
    name = packed.type_url.rpartition("/")[2]
    descriptor = descriptor_pool.Default().FindMessageTypeByName(name)
    message = GetMessageClass(descriptor)()
    packed.Unpack(message)
    return message

"""Finds every generated ``*_pb2`` module under pilothouse.api and its descriptors."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterator
from types import ModuleType

from google.protobuf.descriptor import Descriptor, EnumDescriptor, FileDescriptor

import pilothouse.api


def pb2_modules() -> list[ModuleType]:
    """Import and return every ``*_pb2`` module of pilothouse.api, by name."""
    names = sorted(
        info.name
        for info in pkgutil.walk_packages(pilothouse.api.__path__, "pilothouse.api.")
        if info.name.endswith("_pb2")
    )
    return [importlib.import_module(name) for name in names]


def file_descriptors() -> list[FileDescriptor]:
    descriptors: list[FileDescriptor] = [module.DESCRIPTOR for module in pb2_modules()]
    return descriptors


def _walk(message: Descriptor) -> Iterator[Descriptor]:
    yield message
    for nested in message.nested_types:
        yield from _walk(nested)


def istio_files() -> list[FileDescriptor]:
    """The generated files of Istio's packages: the ones with a wire reference (the
    Gateway API's ``k8s.*`` messages are pilothouse's own; they travel as JSON)."""
    return [f for f in file_descriptors() if f.package.startswith("istio.")]


def all_messages() -> dict[str, Descriptor]:
    """Every message defined in Istio's generated files (map entry types excluded)."""
    found: dict[str, Descriptor] = {}
    for file in istio_files():
        for top in file.message_types_by_name.values():
            for message in _walk(top):
                if not message.GetOptions().map_entry:
                    found[message.full_name] = message
    return found


def all_enums() -> dict[str, EnumDescriptor]:
    """Every enum defined in Istio's generated files, top level and nested."""
    found: dict[str, EnumDescriptor] = {}
    for file in istio_files():
        for enum in file.enum_types_by_name.values():
            found[enum.full_name] = enum
        for top in file.message_types_by_name.values():
            for message in _walk(top):
                for enum in message.enum_types:
                    found[enum.full_name] = enum
    return found

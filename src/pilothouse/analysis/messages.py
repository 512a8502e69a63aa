"""Analysis messages: istioctl analyze's codes, levels and wording, and one finding.

A :class:`MessageType` is one entry of Istio's message catalogue (code, name, level and
the sentence it prints); :class:`Message` is one finding about one object, with the
file and line it was read from when there is one. The codes are Istio's
(``IST0101 ReferencedResourceNotFound``); checks Istio has no message for carry
pilothouse's own codes, ``PH01xx``, so that a CI filter on Istio's codes never mistakes
one for the other.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

from pilothouse.config.model import Config, ConfigKey, Origin
from pilothouse.config.problems import printable

DOCUMENTATION = "https://istio.io/latest/docs/reference/config/analysis"


class Level(Enum):
    """A message's severity; ``rank`` orders them (Error is the most severe)."""

    ERROR = ("Error", 0)
    WARNING = ("Warning", 1)
    INFO = ("Info", 2)

    @property
    def label(self) -> str:
        return self.value[0]

    @property
    def rank(self) -> int:
        return self.value[1]

    def at_least(self, threshold: Level) -> bool:
        """Whether this level is as severe as ``threshold`` or more."""
        return self.rank <= threshold.rank

    @classmethod
    def named(cls, text: str) -> Level:
        """``Error``, ``warning``, ``INFO`` …; ValueError naming the choices otherwise."""
        for level in cls:
            if level.label.lower() == text.strip().lower():
                return level
        choices = ", ".join(level.label for level in cls)
        raise ValueError(f"unknown level {text!r} (one of {choices})")


@dataclass(frozen=True, slots=True)
class MessageType:
    """One entry of the catalogue."""

    code: str
    name: str
    level: Level
    template: str
    """A ``str.format`` sentence over the message's parameters."""

    @property
    def documentation(self) -> str:
        if self.code.startswith("IST"):
            return f"{DOCUMENTATION}/{self.code.lower()}/"
        return ""


INTERNAL_ERROR = MessageType("IST0001", "InternalError", Level.ERROR, "Internal error: {0}")
REFERENCED_RESOURCE_NOT_FOUND = MessageType(
    "IST0101", "ReferencedResourceNotFound", Level.ERROR, 'Referenced {0} not found: "{1}"'
)
SCHEMA_VALIDATION_ERROR = MessageType(
    "IST0106", "SchemaValidationError", Level.ERROR, "Schema validation error: {0}"
)
CONFLICTING_MESH_GATEWAY_VIRTUAL_SERVICE_HOSTS = MessageType(
    "IST0109",
    "ConflictingMeshGatewayVirtualServiceHosts",
    Level.ERROR,
    "The VirtualServices {0} associated with mesh gateway define the same host {1} which"
    " can lead to undefined behavior. This can be fixed by merging the conflicting"
    " VirtualServices into a single resource.",
)
CONFLICTING_SIDECAR_WORKLOAD_SELECTORS = MessageType(
    "IST0110",
    "ConflictingSidecarWorkloadSelectors",
    Level.ERROR,
    'The Sidecars {0} in namespace "{1}" select the same workload "{2}", which can lead'
    " to undefined behavior.",
)
MULTIPLE_SIDECARS_WITHOUT_WORKLOAD_SELECTORS = MessageType(
    "IST0111",
    "MultipleSidecarsWithoutWorkloadSelectors",
    Level.ERROR,
    'The Sidecars {0} in namespace "{1}" have no workload selector, which can lead to'
    " undefined behavior.",
)
DESTINATION_PORT_SELECTOR_REQUIRED = MessageType(
    "IST0112",
    "VirtualServiceDestinationPortSelectorRequired",
    Level.ERROR,
    'This VirtualService routes to a service "{0}" that exposes multiple ports {1}.'
    " Specifying a port in the destination is required to disambiguate.",
)
MTLS_POLICY_CONFLICT = MessageType(
    "IST0113",
    "MTLSPolicyConflict",
    Level.ERROR,
    "A DestinationRule and Policy are in conflict with regards to mTLS for host {0}. The"
    ' DestinationRule "{1}" specifies that mTLS must be {2} but the Policy object "{3}"'
    " specifies {4}.",
)
NO_MATCHING_WORKLOADS_FOUND = MessageType(
    "IST0127",
    "NoMatchingWorkloadsFound",
    Level.WARNING,
    "No matching workloads for this resource with the following labels: {0}",
)
HOST_NOT_FOUND_IN_GATEWAY = MessageType(
    "IST0132",
    "VirtualServiceHostNotFoundInGateway",
    Level.WARNING,
    "one or more host {0} defined in VirtualService {1} not found in Gateway {2}.",
)
SERVICE_ENTRY_ADDRESSES_REQUIRED = MessageType(
    "IST0134",
    "ServiceEntryAddressesRequired",
    Level.WARNING,
    "ServiceEntry addresses are required for this protocol.",
)
SCHEMA_WARNING = MessageType(
    "IST0133", "SchemaWarning", Level.WARNING, "Schema validation warning: {0}"
)
CONFLICTING_GATEWAYS = MessageType(
    "IST0145",
    "ConflictingGateways",
    Level.ERROR,
    "Conflict with gateways {0} (workload selector {1}, port {2}, hosts {3}).",
)
GATEWAY_PORT_NOT_DEFINED_ON_SERVICE = MessageType(
    "IST0162",
    "GatewayPortNotDefinedOnService",
    Level.WARNING,
    "The gateway is listening on a target port (port {0}) that is not defined in the"
    " Service associated with its workload instances (Pod selector {1}). If you need to"
    " access the gateway port through the gateway Service, it will not be available.",
)
INEFFECTIVE_POLICY = MessageType(
    "IST0167", "IneffectivePolicy", Level.WARNING, "The policy has no impact: {0}."
)
SUBSET_SELECTS_NO_WORKLOAD = MessageType(
    "IST0173",
    "DestinationRuleSubsetNotSelectPods",
    Level.ERROR,
    "The Subset {0} defined in the DestinationRule does not select any pods. Which may"
    " lead to 503 UH (NoHealthyUpstream).",
)
UNKNOWN_DESTINATION_RULE_HOST = MessageType(
    "IST0174",
    "UnknownDestinationRuleHost",
    Level.WARNING,
    "The host {0} defined in the DestinationRule does not match any services in the mesh.",
)
CONFLICTING_SERVICE_ENTRY_PROTOCOL = MessageType(
    "IST0177",
    "ConflictingServiceEntryProtocol",
    Level.WARNING,
    'Multiple ServiceEntries ({0}) define the same host "{1}" and port {2} with conflicting'
    " protocols ({3}).",
)
CONFLICTING_DESTINATION_RULES = MessageType(
    "PH0101",
    "ConflictingDestinationRules",
    Level.WARNING,
    'The DestinationRules {0} in namespace "{1}" define the same host {2}{3}: they are'
    " merged in creation order, and the later one's {4} is ignored.",
)
UNKNOWN_VIRTUAL_SERVICE_HOST = MessageType(
    "PH0102",
    "UnknownVirtualServiceHost",
    Level.WARNING,
    "The host {0} defined in the VirtualService does not match any services in the mesh:"
    " sidecars get no route for it.",
)
UNKNOWN_SIDECAR_EGRESS_HOST = MessageType(
    "PH0103",
    "UnknownSidecarEgressHost",
    Level.WARNING,
    "The egress host {0} of the Sidecar matches no service in the mesh.",
)
INVALID_TELEMETRY_PROVIDER = MessageType(
    "IST0157",
    "InvalidTelemetryProvider",
    Level.WARNING,
    'The Telemetry {0} in namespace "{1}" with empty providers will be ignored.',
)
CONFLICTING_TELEMETRY_WORKLOAD_SELECTORS = MessageType(
    "IST0159",
    "ConflictingTelemetryWorkloadSelectors",
    Level.ERROR,
    'The Telemetries {0} in namespace "{1}" select the same workload pod "{2}", which can'
    " lead to undefined behavior.",
)
MULTIPLE_TELEMETRIES_WITHOUT_WORKLOAD_SELECTORS = MessageType(
    "IST0160",
    "MultipleTelemetriesWithoutWorkloadSelectors",
    Level.ERROR,
    'The Telemetries {0} in namespace "{1}" have no workload selector, which can lead to'
    " undefined behavior.",
)

ENVOY_FILTER_USES_RELATIVE_OPERATION = MessageType(
    "IST0151",
    "EnvoyFilterUsesRelativeOperation",
    Level.WARNING,
    'This EnvoyFilter has no priority and patches the {0} "{1}" with a relative operation'
    " ({2}), and EnvoyFilter {3} patches it too: which of them is applied first decides the"
    " result. Setting a priority, or using INSERT_FIRST or ADD, makes the order certain.",
)
NEGATIVE_CONDITION_STATUS = MessageType(
    "IST0171",
    "NegativeConditionStatus",
    Level.WARNING,
    "A condition with a negative status is present: type={0}, reason={1}, message={2}.",
)
ENVOY_FILTER_PATCH_FINDS_NOTHING = MessageType(
    "PH0111",
    "EnvoyFilterPatchFindsNothing",
    Level.WARNING,
    "The {0} patch in this EnvoyFilter can never apply: {1}.",
)
ENVOY_FILTER_INSERT_ANCHOR_NOT_FOUND = MessageType(
    "PH0112",
    "EnvoyFilterInsertAnchorNotFound",
    Level.WARNING,
    'The {0} patch in this EnvoyFilter inserts next to the {1} "{2}", which no generated'
    " configuration and no other EnvoyFilter has: nothing is inserted.",
)
WASM_PLUGIN_WITHOUT_SHA256 = MessageType(
    "PH0121",
    "WasmPluginWithoutSha256",
    Level.WARNING,
    'The WasmPlugin fetches its module from "{0}" without a sha256: a module changed or'
    " replaced where it is served is loaded unchecked.",
)
WASM_PLUGIN_MODULE_FILE_NOT_FOUND = MessageType(
    "PH0122",
    "WasmPluginModuleFileNotFound",
    Level.ERROR,
    'The WasmPlugin\'s module file "{0}" does not exist here: the plugin is not served'
    " until it does.",
)
CONFLICTING_PROXY_CONFIG_WORKLOAD_SELECTORS = MessageType(
    "PH0131",
    "ConflictingProxyConfigWorkloadSelectors",
    Level.WARNING,
    'The ProxyConfigs {0} in namespace "{1}" select the same workload "{2}": only {3}'
    " applies to it (the oldest, or the first by name when their ages are not known).",
)
MULTIPLE_PROXY_CONFIGS_WITHOUT_SELECTORS = MessageType(
    "PH0132",
    "MultipleProxyConfigsWithoutSelectors",
    Level.WARNING,
    'The ProxyConfigs {0} in namespace "{1}" have no selector: only {2} applies to the'
    " namespace (the oldest, or the first by name when their ages are not known).",
)
GATEWAY_CLASS_NOT_HANDLED = MessageType(
    "PH0141",
    "GatewayClassNotHandled",
    Level.INFO,
    'The Gateway\'s class "{0}" is not handled by this control plane (controller'
    " istio.io/gateway-controller): its listeners and the routes attached to them are"
    " not served here.",
)

CATALOGUE: tuple[MessageType, ...] = (
    INTERNAL_ERROR,
    REFERENCED_RESOURCE_NOT_FOUND,
    SCHEMA_VALIDATION_ERROR,
    CONFLICTING_MESH_GATEWAY_VIRTUAL_SERVICE_HOSTS,
    CONFLICTING_SIDECAR_WORKLOAD_SELECTORS,
    MULTIPLE_SIDECARS_WITHOUT_WORKLOAD_SELECTORS,
    DESTINATION_PORT_SELECTOR_REQUIRED,
    MTLS_POLICY_CONFLICT,
    NO_MATCHING_WORKLOADS_FOUND,
    HOST_NOT_FOUND_IN_GATEWAY,
    SCHEMA_WARNING,
    SERVICE_ENTRY_ADDRESSES_REQUIRED,
    CONFLICTING_GATEWAYS,
    GATEWAY_PORT_NOT_DEFINED_ON_SERVICE,
    INEFFECTIVE_POLICY,
    SUBSET_SELECTS_NO_WORKLOAD,
    UNKNOWN_DESTINATION_RULE_HOST,
    CONFLICTING_SERVICE_ENTRY_PROTOCOL,
    CONFLICTING_DESTINATION_RULES,
    UNKNOWN_VIRTUAL_SERVICE_HOST,
    UNKNOWN_SIDECAR_EGRESS_HOST,
    INVALID_TELEMETRY_PROVIDER,
    CONFLICTING_TELEMETRY_WORKLOAD_SELECTORS,
    MULTIPLE_TELEMETRIES_WITHOUT_WORKLOAD_SELECTORS,
    ENVOY_FILTER_USES_RELATIVE_OPERATION,
    NEGATIVE_CONDITION_STATUS,
    ENVOY_FILTER_PATCH_FINDS_NOTHING,
    ENVOY_FILTER_INSERT_ANCHOR_NOT_FOUND,
    WASM_PLUGIN_WITHOUT_SHA256,
    WASM_PLUGIN_MODULE_FILE_NOT_FOUND,
    CONFLICTING_PROXY_CONFIG_WORKLOAD_SELECTORS,
    MULTIPLE_PROXY_CONFIGS_WITHOUT_SELECTORS,
    GATEWAY_CLASS_NOT_HANDLED,
)
"""Every message type ``analyze`` can report, by code."""


@dataclass(frozen=True, slots=True)
class Message:
    """One finding: its type, the values its sentence is made of, the object it is
    about (None for a whole file), where that object was read, and a hint (such as a
    did-you-mean) after the sentence."""

    type: MessageType
    parameters: tuple[str, ...]
    key: ConfigKey | None
    origin: Origin | None = None
    hint: str = ""
    path: str = ""
    """The field it is about, as YAML spells it (``spec.http[1].route[0].destination``):
    where a file's line can be pinned to."""

    @property
    def text(self) -> str:
        sentence = self.type.template.format(*self.parameters)
        return printable(f"{sentence} ({self.hint})" if self.hint else sentence)

    @property
    def reference(self) -> str:
        """``file:line`` (or the source's name), empty when unknown."""
        if self.origin is None or self.origin.file is None:
            return ""
        return printable(str(self.origin))

    @property
    def resource(self) -> str:
        """``VirtualService bookinfo/reviews`` (what istioctl prints as the origin)."""
        if self.key is None:
            return ""
        return printable(str(self.key))

    def sort_key(self) -> tuple[Any, ...]:
        return (self.key or ("", "", ""), self.type.code, self.text)

    def __str__(self) -> str:
        origin = " ".join(part for part in (self.resource, self.reference) if part)
        where = f" ({origin})" if origin else ""
        return f"{self.type.level.label} [{self.type.code}]{where} {self.text}"

    def as_dict(self) -> dict[str, Any]:
        """istioctl's ``-o json`` shape: code, level, origin, reference, message,
        documentationUrl."""
        found: dict[str, Any] = {"code": self.type.code, "level": self.type.level.label}
        if self.resource:
            found["origin"] = self.resource
        if self.reference:
            found["reference"] = self.reference
        found["message"] = self.text
        if self.type.documentation:
            found["documentationUrl"] = self.type.documentation
        return found


def about(
    config: Config, type: MessageType, *parameters: object, hint: str = "", path: str = ""
) -> Message:
    """A message about ``config`` (its field ``path``), pinned to where it was read."""
    return Message(type, tuple(str(p) for p in parameters), config.key, config.origin, hint, path)


def did_you_mean(candidates: list[str]) -> str:
    return f'did you mean "{candidates[0]}"?' if candidates else ""


def labels_text(labels: Mapping[str, str]) -> str:
    """``app=reviews,version=v1`` (sorted), as istioctl prints a selector."""
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def message_from_dict(item: Mapping[str, Any]) -> Message:
    """A message as :meth:`Message.as_dict` wrote it (what ``/debug/analyzez`` serves),
    back into a Message; a code this catalogue lacks keeps its level and text."""
    code = str(item.get("code", ""))
    known = {t.code: t for t in CATALOGUE}.get(code)
    text = str(item.get("message", ""))
    level = Level.named(str(item.get("level", "Error")))
    kind_type = MessageType(code, known.name if known else code, level, "{0}")
    resource = str(item.get("origin", ""))
    kind, _, rest = resource.partition(" ")
    namespace, _, name = rest.rpartition("/")
    key = ConfigKey(kind, namespace, name) if kind and name else None
    reference = str(item.get("reference", ""))
    file, _, line = reference.rpartition(":")
    origin = None
    if reference:
        origin = (
            Origin("remote", file, int(line)) if line.isdigit() else Origin("remote", reference)
        )
    return Message(kind_type, (text,), key, origin)

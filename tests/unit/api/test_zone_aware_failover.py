"""``ZoneAwareLoadBalancerSetting.failover`` is Istio's own nested ``Failover`` message.

Istio nests a ``Failover`` in ``ZoneAwareLoadBalancerSetting`` beside the one in
``LocalityLoadBalancerSetting``: the same fields and bytes, another reflection name. YAML
using either ``failover`` still loads, and the builders still read the locality one.
"""

from __future__ import annotations

from pilothouse.api.istio.networking.v1alpha3 import destination_rule_pb2 as dr_pb2
from pilothouse.config.load import Loader
from pilothouse.kinds.table import SCHEMAS
from pilothouse.xds.builders.cluster import ClusterInputs, build_cluster

NET = "istio.networking.v1alpha3"

DESTINATION_RULE = """
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: reviews, namespace: default}
spec:
  host: reviews.default.svc.cluster.local
  trafficPolicy:
    outlierDetection: {consecutive5xxErrors: 3}
    loadBalancer:
      simple: ROUND_ROBIN
      localityLbSetting:
        failover: [{from: us-east, to: us-west}]
      zoneAwareLbSetting:
        enabled: true
        failover: [{from: eu-north, to: eu-south}]
        minClusterSize: 7
"""


def loaded_rule() -> dr_pb2.DestinationRule:
    (config,) = Loader(SCHEMAS, source="test").load_strict(DESTINATION_RULE, "rule.yaml")
    assert isinstance(config.spec, dr_pb2.DestinationRule)
    return config.spec


def test_zone_aware_failover_has_istios_nested_name() -> None:
    field = dr_pb2.ZoneAwareLoadBalancerSetting.DESCRIPTOR.fields_by_name["failover"]
    assert field.message_type.full_name == f"{NET}.ZoneAwareLoadBalancerSetting.Failover"
    assert field.number == 2
    nested = dr_pb2.ZoneAwareLoadBalancerSetting.Failover.DESCRIPTOR
    assert {f.name: f.number for f in nested.fields} == {"from": 1, "to": 2}


def test_zone_aware_failover_yaml_loads_into_the_nested_message() -> None:
    lb = loaded_rule().traffic_policy.load_balancer
    (zone,) = lb.zone_aware_lb_setting.failover
    assert isinstance(zone, dr_pb2.ZoneAwareLoadBalancerSetting.Failover)
    assert (getattr(zone, "from"), zone.to) == ("eu-north", "eu-south")
    assert lb.zone_aware_lb_setting.min_cluster_size.value == 7
    (locality,) = lb.locality_lb_setting.failover
    assert (getattr(locality, "from"), locality.to) == ("us-east", "us-west")


def test_both_failover_messages_have_the_same_bytes() -> None:
    zone = dr_pb2.ZoneAwareLoadBalancerSetting.Failover(to="b", **{"from": "a"})
    locality = dr_pb2.LocalityLoadBalancerSetting.Failover(to="b", **{"from": "a"})
    assert zone.SerializeToString() == locality.SerializeToString()
    wrapped = dr_pb2.ZoneAwareLoadBalancerSetting(failover=[zone]).SerializeToString()
    again = dr_pb2.ZoneAwareLoadBalancerSetting.FromString(wrapped)
    assert getattr(again.failover[0], "from") == "a"


def test_builder_still_reads_the_locality_failover() -> None:
    policy = loaded_rule().traffic_policy
    cluster = build_cluster(ClusterInputs(name="outbound|9080||reviews", policy=policy))
    assert cluster.common_lb_config.HasField("locality_weighted_lb_config")

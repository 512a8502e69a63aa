"""``LoadBalancerSettings`` → a cluster's ``lb_policy``, LB config and locality config.

What Istio does, and so what this does:

- ``simple``: ROUND_ROBIN → ROUND_ROBIN; LEAST_REQUEST and the older LEAST_CONN →
  LEAST_REQUEST; RANDOM → RANDOM; UNSPECIFIED (or no settings at all) → Istio's
  default, LEAST_REQUEST.  PASSTHROUGH turns the cluster into ORIGINAL_DST (the
  cluster builder does that, see :func:`is_passthrough`), and every ORIGINAL_DST
  cluster gets ``CLUSTER_PROVIDED``.
- warm-up: the ``warmup`` message, else the older ``warmup_duration_secs``,
  becomes ``slow_start_config`` on ROUND_ROBIN and LEAST_REQUEST only.
- ``consistent_hash`` → MAGLEV (``maglev_lb_config.table_size`` when non-zero) or
  RING_HASH (``ring_hash_lb_config.minimum_ring_size`` from ``ring_hash``, else
  the deprecated top-level ``minimum_ring_size``, else 1024).  The hash *key*
  lives on routes: :func:`hash_policy` gives the route builder its
  ``RouteAction.HashPolicy`` list.
- locality: unless ``locality_lb_setting.enabled`` is explicitly false,
  ``common_lb_config.locality_weighted_lb_config`` is set when ``distribute`` is
  given, or when ``failover`` / ``failover_priority`` is given *and* the cluster
  has outlier detection (failover never happens without it).  The per-proxy
  part (locality weights and priorities in the load assignment) belongs to EDS.
"""

from __future__ import annotations

from typing import Final

from envoy.config.cluster.v3 import cluster_pb2  # type: ignore[import-untyped]
from envoy.config.route.v3 import route_components_pb2  # type: ignore[import-untyped]

from pilothouse.api.istio.networking.v1alpha3 import destination_rule_pb2 as dr_pb2

Cluster = cluster_pb2.Cluster
HashPolicy = route_components_pb2.RouteAction.HashPolicy
SimpleLB = dr_pb2.LoadBalancerSettings.SimpleLB
ConsistentHashLB = dr_pb2.LoadBalancerSettings.ConsistentHashLB

DEFAULT_MINIMUM_RING_SIZE: Final = 1024


def is_passthrough(lb: dr_pb2.LoadBalancerSettings | None) -> bool:
    """True when the settings ask for PASSTHROUGH (an ORIGINAL_DST cluster)."""
    return (
        lb is not None
        and lb.WhichOneof("lb_policy") == "simple"
        and lb.simple == dr_pb2.LoadBalancerSettings.PASSTHROUGH
    )


def locality_setting(
    lb: dr_pb2.LoadBalancerSettings | None,
) -> dr_pb2.LocalityLoadBalancerSetting | None:
    """The locality LB setting in force, or ``None`` when absent or disabled."""
    if lb is None or not lb.HasField("locality_lb_setting"):
        return None
    setting = lb.locality_lb_setting
    if setting.HasField("enabled") and not setting.enabled.value:
        return None
    return setting


def apply_load_balancer(
    cluster: cluster_pb2.Cluster,
    lb: dr_pb2.LoadBalancerSettings | None,
    *,
    has_outlier_detection: bool,
) -> None:
    """Set ``lb_policy``, the LB config oneof and locality config on ``cluster``."""
    locality = locality_setting(lb)
    if locality is not None and (
        len(locality.distribute) > 0
        or (
            has_outlier_detection
            and (len(locality.failover) > 0 or len(locality.failover_priority) > 0)
        )
    ):
        cluster.common_lb_config.locality_weighted_lb_config.SetInParent()

    if cluster.type == Cluster.ORIGINAL_DST:
        cluster.lb_policy = Cluster.CLUSTER_PROVIDED
        return
    if lb is not None and lb.WhichOneof("lb_policy") == "consistent_hash":
        _apply_consistent_hash(cluster, lb.consistent_hash)
        return

    simple = lb.simple if lb is not None and lb.WhichOneof("lb_policy") == "simple" else 0
    if simple == dr_pb2.LoadBalancerSettings.RANDOM:
        cluster.lb_policy = Cluster.RANDOM
    elif simple == dr_pb2.LoadBalancerSettings.ROUND_ROBIN:
        cluster.lb_policy = Cluster.ROUND_ROBIN
        slow_start = _slow_start(lb)
        if slow_start is not None:
            cluster.round_robin_lb_config.slow_start_config.CopyFrom(slow_start)
    else:  # LEAST_REQUEST, LEAST_CONN, UNSPECIFIED: Istio's default is LEAST_REQUEST
        cluster.lb_policy = Cluster.LEAST_REQUEST
        slow_start = _slow_start(lb)
        if slow_start is not None:
            cluster.least_request_lb_config.slow_start_config.CopyFrom(slow_start)


def hash_policy(
    consistent_hash: ConsistentHashLB | None,
) -> list[route_components_pb2.RouteAction.HashPolicy]:
    """The route-level hash policy for a ``consistent_hash`` setting (empty if none)."""
    if consistent_hash is None:
        return []
    key = consistent_hash.WhichOneof("hash_key")
    if key == "http_header_name":
        return [HashPolicy(header=HashPolicy.Header(header_name=consistent_hash.http_header_name))]
    if key == "http_cookie":
        source = consistent_hash.http_cookie
        cookie = HashPolicy.Cookie(name=source.name, path=source.path)
        if source.HasField("ttl"):
            cookie.ttl.CopyFrom(source.ttl)
        for attribute in source.attributes:
            cookie.attributes.add(name=attribute.name, value=attribute.value)
        return [HashPolicy(cookie=cookie)]
    if key == "use_source_ip" and consistent_hash.use_source_ip:
        return [HashPolicy(connection_properties=HashPolicy.ConnectionProperties(source_ip=True))]
    if key == "http_query_parameter_name":
        return [
            HashPolicy(
                query_parameter=HashPolicy.QueryParameter(
                    name=consistent_hash.http_query_parameter_name
                )
            )
        ]
    return []


def _apply_consistent_hash(cluster: cluster_pb2.Cluster, consistent_hash: ConsistentHashLB) -> None:
    algorithm = consistent_hash.WhichOneof("hash_algorithm")
    if algorithm == "maglev":
        cluster.lb_policy = Cluster.MAGLEV
        if consistent_hash.maglev.table_size:
            cluster.maglev_lb_config.table_size.value = consistent_hash.maglev.table_size
        return
    cluster.lb_policy = Cluster.RING_HASH
    if algorithm == "ring_hash":
        if consistent_hash.ring_hash.minimum_ring_size:
            size = consistent_hash.ring_hash.minimum_ring_size
            cluster.ring_hash_lb_config.minimum_ring_size.value = size
        return
    size = consistent_hash.minimum_ring_size or DEFAULT_MINIMUM_RING_SIZE
    cluster.ring_hash_lb_config.minimum_ring_size.value = size


def _slow_start(
    lb: dr_pb2.LoadBalancerSettings | None,
) -> cluster_pb2.Cluster.SlowStartConfig | None:
    if lb is None:
        return None
    if lb.HasField("warmup"):
        warmup = lb.warmup
        config = Cluster.SlowStartConfig()
        config.slow_start_window.CopyFrom(warmup.duration)
        if warmup.HasField("aggression"):
            config.aggression.default_value = warmup.aggression.value
        if warmup.HasField("minimum_percent"):
            config.min_weight_percent.value = warmup.minimum_percent.value
        return config
    if lb.HasField("warmup_duration_secs"):
        config = Cluster.SlowStartConfig()
        config.slow_start_window.CopyFrom(lb.warmup_duration_secs)
        return config
    return None

"""ELBv2 extension for moto 5.2.5: target health other than `healthy`, and
Network Load Balancer ARNs.

moto reports every registered target as healthy. A world can set the health
of a target (state, reason, description) through the admin endpoint; the
public DescribeTargetHealth then reports it as AWS would.

moto names every load balancer `loadbalancer/app/<name>/<id>`, whatever its
Type. AWS names a Network Load Balancer `loadbalancer/net/<name>/<id>` (and a
Gateway Load Balancer `loadbalancer/gwy/...`), and the CloudWatch
`LoadBalancer` dimension is that part of the ARN, so a network load balancer
gets its real ARN here.
"""

from __future__ import annotations

import threading
from typing import Any

from moto.elbv2 import models as elbv2_models

_lock = threading.Lock()
# (target group ARN, target id) -> (state, reason, description)
HEALTH: dict[tuple[str, str], tuple[str, str | None, str | None]] = {}

# The ARN's resource prefix for each load balancer type.
ARN_KIND = {"application": "app", "network": "net", "gateway": "gwy"}

_original_health_for = elbv2_models.FakeTargetGroup.health_for
_original_create_load_balancer = elbv2_models.ELBv2Backend.create_load_balancer


def set_health(target_group_arn: str, target_id: str, state: str, reason: str | None, description: str | None) -> None:
    with _lock:
        HEALTH[(target_group_arn, target_id)] = (state, reason, description)


def _health_for(self: Any, target: dict[str, Any], ec2_backend: Any) -> Any:
    status = _original_health_for(self, target, ec2_backend)
    with _lock:
        override = HEALTH.get((self.arn, target["Id"]))
    if override and status.status == "healthy":
        status.status, status.reason, status.description = override
    return status


def _create_load_balancer(self: Any, *args: Any, **kwargs: Any) -> Any:
    """moto's CreateLoadBalancer, then the ARN re-keyed to the type's prefix
    (before anything else can refer to it: listeners and target groups come later)."""
    balancer = _original_create_load_balancer(self, *args, **kwargs)
    kind = ARN_KIND.get(balancer.type, "app")
    if kind == "app":
        return balancer
    old = balancer.arn
    new = old.replace(":loadbalancer/app/", f":loadbalancer/{kind}/", 1)
    self.load_balancers.pop(old)
    balancer.arn = new
    self.load_balancers[new] = balancer
    self.tagging_service.copy_tags(old, new)
    self.tagging_service.delete_all_tags_for_resource(old)
    return balancer


def install() -> None:
    elbv2_models.FakeTargetGroup.health_for = _health_for
    elbv2_models.ELBv2Backend.create_load_balancer = _create_load_balancer

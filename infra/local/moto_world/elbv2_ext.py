"""ELBv2 extension for moto 5.2.5: target health other than `healthy`.

moto reports every registered target as healthy. A world can set the health
of a target (state, reason, description) through the admin endpoint; the
public DescribeTargetHealth then reports it as AWS would.
"""

from __future__ import annotations

import threading
from typing import Any

from moto.elbv2 import models as elbv2_models

_lock = threading.Lock()
# (target group ARN, target id) -> (state, reason, description)
HEALTH: dict[tuple[str, str], tuple[str, str | None, str | None]] = {}

_original_health_for = elbv2_models.FakeTargetGroup.health_for


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


def install() -> None:
    elbv2_models.FakeTargetGroup.health_for = _health_for

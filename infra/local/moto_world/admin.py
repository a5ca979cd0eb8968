"""Admin endpoints under /_alarm_triage/ for loading a world.

They exist only for state that no public AWS API can set: past alarm state
changes (history is written by CloudWatch itself), target health (decided
by the load balancer's health checks) and where a cluster's API endpoint is
(chosen by EKS), and the CloudTrail event history (written by CloudTrail
itself, from calls made before the world was loaded), and container log
lines printed before the world was loaded (Fluent Bit shipped them as they
were printed; PutLogEvents wants chronological batches and refuses old
events). Everything else is seeded through the public APIs.

  GET  /_alarm_triage/health
  POST /_alarm_triage/alarm-history  {"account", "region", "alarm_name", "items": [{"timestamp", "old_state", "new_state", "reason"}]}
  POST /_alarm_triage/target-health  {"target_group_arn", "targets": [{"id", "state", "reason", "description"}]}
  POST /_alarm_triage/eks-endpoint   {"name", "endpoint", "account"?, "region"?}  DescribeCluster's endpoint (see eks_ext)
  POST /_alarm_triage/cloudtrail-events  {"account", "region", "lag_seconds"?, "events": [{"record", "resources": [{"ResourceType", "ResourceName"}]}]}
                                     management events LookupEvents serves (see cloudtrail_ext)
  POST /_alarm_triage/log-events     {"account", "region", "log_group", "streams": [{"name", "events": [{"timestamp" (epoch ms), "message"}]}]}
                                     events appended to the (existing) group's streams (see logs_insights_ext)
  GET  /_alarm_triage/mailbox        what SNS delivered to email subscriptions (read-only; see sns_ext)
"""

from __future__ import annotations

import json
from typing import Any, Callable

from . import cloudtrail_ext, cloudwatch_ext, eks_ext, elbv2_ext, logs_insights_ext, sns_ext

PREFIX = "/_alarm_triage/"
STATES = {"OK", "ALARM", "INSUFFICIENT_DATA"}
TARGET_STATES = {"initial", "healthy", "unhealthy", "unused", "draining", "unavailable"}


class BadRequest(Exception):
    pass


def _require(document: dict[str, Any], key: str, where: str) -> Any:
    if key not in document:
        raise BadRequest(f"{where}: missing field {key!r}")
    return document[key]


def _alarm_history(body: dict[str, Any]) -> dict[str, Any]:
    items = _require(body, "items", "alarm-history")
    for i, item in enumerate(items):
        for key in ("timestamp", "old_state", "new_state"):
            _require(item, key, f"alarm-history items[{i}]")
        for key in ("old_state", "new_state"):
            if item[key] not in STATES:
                raise BadRequest(f"alarm-history items[{i}].{key}: {item[key]!r} is not one of {sorted(STATES)}")
    count = cloudwatch_ext.record_history(
        _require(body, "account", "alarm-history"),
        _require(body, "region", "alarm-history"),
        _require(body, "alarm_name", "alarm-history"),
        items,
    )
    return {"recorded": count}


def _target_health(body: dict[str, Any]) -> dict[str, Any]:
    arn = _require(body, "target_group_arn", "target-health")
    targets = _require(body, "targets", "target-health")
    for i, target in enumerate(targets):
        state = _require(target, "state", f"target-health targets[{i}]")
        if state not in TARGET_STATES:
            raise BadRequest(f"target-health targets[{i}].state: {state!r} is not one of {sorted(TARGET_STATES)}")
        elbv2_ext.set_health(arn, _require(target, "id", f"target-health targets[{i}]"), state,
                             target.get("reason"), target.get("description"))
    return {"updated": len(targets)}


def _eks_endpoint(body: dict[str, Any]) -> dict[str, Any]:
    endpoint = _require(body, "endpoint", "eks-endpoint")
    if not str(endpoint).startswith(("http://", "https://")):
        raise BadRequest(f"eks-endpoint: endpoint {endpoint!r} is not an http(s) URL")
    arns = eks_ext.set_endpoint(_require(body, "name", "eks-endpoint"), endpoint, body.get("account"), body.get("region"))
    return {"updated": arns}


def _cloudtrail_events(body: dict[str, Any]) -> dict[str, Any]:
    events = _require(body, "events", "cloudtrail-events")
    if not isinstance(events, list):
        raise BadRequest("cloudtrail-events: events must be a list")
    lag = body.get("lag_seconds", 0)
    if isinstance(lag, bool) or not isinstance(lag, (int, float)) or lag < 0:
        raise BadRequest(f"cloudtrail-events: lag_seconds {lag!r} is not a number of seconds >= 0")
    count = cloudtrail_ext.load(
        str(_require(body, "account", "cloudtrail-events")),
        str(_require(body, "region", "cloudtrail-events")),
        events,
        lag,
    )
    return {"recorded": count}


def _log_events(body: dict[str, Any]) -> dict[str, Any]:
    streams = _require(body, "streams", "log-events")
    if not isinstance(streams, list):
        raise BadRequest("log-events: streams must be a list")
    count = logs_insights_ext.load(
        str(_require(body, "account", "log-events")),
        str(_require(body, "region", "log-events")),
        str(_require(body, "log_group", "log-events")),
        streams,
    )
    return {"recorded": count}


ROUTES: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "alarm-history": _alarm_history,
    "target-health": _target_health,
    "eks-endpoint": _eks_endpoint,
    "cloudtrail-events": _cloudtrail_events,
    "log-events": _log_events,
}


class AdminRoutes:
    """WSGI middleware serving the admin endpoints, passing everything else on."""

    def __init__(self, app: Callable):
        self.app = app

    def __call__(self, environ: dict, start_response: Callable):
        path = environ.get("PATH_INFO", "")
        if not path.startswith(PREFIX):
            return self.app(environ, start_response)
        name = path[len(PREFIX):]
        if name == "health":
            return self._json(start_response, "200 OK", {"ok": True})
        if name == "mailbox" and environ.get("REQUEST_METHOD") == "GET":
            return self._json(start_response, "200 OK", {"messages": sns_ext.mailbox()})
        route = ROUTES.get(name)
        if route is None or environ.get("REQUEST_METHOD") != "POST":
            return self._json(start_response, "404 NOT FOUND", {"error": f"no admin endpoint {path}"})
        length = int(environ.get("CONTENT_LENGTH") or 0)
        try:
            body = json.loads(environ["wsgi.input"].read(length) or b"{}")
            return self._json(start_response, "200 OK", route(body))
        except (BadRequest, ValueError, KeyError, TypeError) as error:
            return self._json(start_response, "400 BAD REQUEST", {"error": str(error)})

    @staticmethod
    def _json(start_response: Callable, status: str, document: dict[str, Any]):
        body = json.dumps(document).encode()
        start_response(status, [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
        return [body]

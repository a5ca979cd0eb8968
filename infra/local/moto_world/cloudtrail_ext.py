"""CloudTrail extension for moto 5.2.5: LookupEvents (the event history).

moto keeps trails (CreateTrail, DescribeTrails, ...) but has no event
history: LookupEvents is not implemented. Here a world loads the management
events it wants served (POST /_alarm_triage/cloudtrail-events, the full
CloudTrail records as a trail would deliver them, and the resources each
names), and LookupEvents answers from them as the CloudTrail API documents:

- events are kept per account and region; a request sees those of the
  account its credentials act in (an assumed role's account, in a world with
  an organisation) and of the region it was signed for;
- `LookupAttributes`: at most one `{AttributeKey, AttributeValue}`, the key
  one of EventId, EventName, ReadOnly ("true"/"false"), Username,
  ResourceType, ResourceName, EventSource, AccessKeyId (exact matches;
  ResourceType and ResourceName match any of the event's resources);
- `StartTime` and `EndTime` (epoch seconds, both inclusive; EndTime defaults
  to now, StartTime to 90 days before it); `EventCategory: insight` finds no
  event (a world has no Insights events);
- `MaxResults` 1 to 50 (default 50); `NextToken` continues the same query
  and only the same query (a token is refused with other attributes or
  another time range);
- newest first; each event `{EventId, EventName, ReadOnly, AccessKeyId,
  EventTime, EventSource, Username, Resources: [{ResourceType,
  ResourceName}], CloudTrailEvent}`, CloudTrailEvent the whole record as a
  JSON string;
- errors as the awsJson protocol carries them (HTTP 400, `__type` and
  `message`): InvalidLookupAttributesException, InvalidTimeRangeException,
  InvalidMaxResultsException, InvalidNextTokenException,
  InvalidEventCategoryException.

Delivery lag: CloudTrail shows an event some minutes after the call. Each
loaded event carries `lag_seconds`; it is returned only once the real clock
reaches its eventTime plus the lag.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
from collections import defaultdict
from datetime import datetime, timedelta, timezone
from typing import Any

from moto.cloudtrail import responses as ct_responses
from moto.core.exceptions import JsonRESTError

LOOKUP_KEYS = ("EventId", "EventName", "ReadOnly", "Username", "ResourceType", "ResourceName", "EventSource", "AccessKeyId")
MAX_RESULTS = 50
HISTORY_DAYS = 90

_lock = threading.Lock()
# (account, region) -> event id -> stored event
EVENTS: dict[tuple[str, str], dict[str, dict[str, Any]]] = defaultdict(dict)


class _CloudTrailError(JsonRESTError):
    code = 400

    def __init__(self, message: str):
        super().__init__(type(self).__name__, message)


class InvalidLookupAttributesException(_CloudTrailError):
    pass


class InvalidTimeRangeException(_CloudTrailError):
    pass


class InvalidMaxResultsException(_CloudTrailError):
    pass


class InvalidNextTokenException(_CloudTrailError):
    pass


class InvalidEventCategoryException(_CloudTrailError):
    pass


def _utc(value: Any) -> datetime:
    """Epoch seconds (what the awsJson protocol sends), or an ISO 8601 string."""
    if isinstance(value, (int, float)):
        return datetime.fromtimestamp(float(value), tz=timezone.utc)
    text = str(value)
    try:
        return datetime.fromtimestamp(float(text), tz=timezone.utc)
    except ValueError:
        pass
    parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def _username(identity: dict[str, Any]) -> str | None:
    """The event history's User name: the session of an assumed role, an IAM
    user's name, `root`; none for an AWS service acting on its own."""
    kind = identity.get("type")
    if kind == "AssumedRole":
        return str(identity.get("arn", "")).rsplit("/", 1)[-1] or None
    if kind == "IAMUser":
        return identity.get("userName") or str(identity.get("arn", "")).rsplit("/", 1)[-1]
    if kind == "Root":
        return "root"
    return identity.get("userName")


def load(account: str, region: str, events: list[dict[str, Any]], lag_seconds: float = 0) -> int:
    """Stores events for LookupEvents (the admin endpoint calls this): each
    `{"record": <the CloudTrail record>, "resources": [{"ResourceType",
    "ResourceName"}]}`. An event id loaded again replaces the earlier one."""
    prepared = []
    for i, event in enumerate(events):
        record = event.get("record")
        if not isinstance(record, dict):
            raise ValueError(f"cloudtrail-events events[{i}]: missing the record")
        for key in ("eventID", "eventName", "eventSource", "eventTime", "userIdentity"):
            if key not in record:
                raise ValueError(f"cloudtrail-events events[{i}].record: missing field {key!r}")
        resources = event.get("resources") or []
        for j, resource in enumerate(resources):
            if not isinstance(resource, dict) or not resource.get("ResourceType") or not resource.get("ResourceName"):
                raise ValueError(f"cloudtrail-events events[{i}].resources[{j}]: expected {{ResourceType, ResourceName}}")
        at = _utc(record["eventTime"])
        identity = record.get("userIdentity") or {}
        summary: dict[str, Any] = {
            "EventId": record["eventID"],
            "EventName": record["eventName"],
            "ReadOnly": "true" if record.get("readOnly") else "false",
            "AccessKeyId": identity.get("accessKeyId"),
            "EventTime": at.timestamp(),
            "EventSource": record["eventSource"],
            "Username": _username(identity),
            "Resources": [{"ResourceType": r["ResourceType"], "ResourceName": r["ResourceName"]} for r in resources],
            "CloudTrailEvent": json.dumps(record, separators=(",", ":")),
        }
        summary = {k: v for k, v in summary.items() if v is not None}
        visible = at + timedelta(seconds=float(event.get("lag_seconds", lag_seconds) or 0))
        prepared.append({"summary": summary, "at": at, "visible": visible})
    with _lock:
        bucket = EVENTS[(str(account), str(region))]
        for item in prepared:
            bucket[item["summary"]["EventId"]] = item
    return len(prepared)


def _matches(summary: dict[str, Any], key: str, value: str) -> bool:
    if key in ("ResourceType", "ResourceName"):
        return any(r.get(key) == value for r in summary.get("Resources", []))
    return summary.get(key) == value


def _fingerprint(attributes: Any, start: Any, end: Any, category: Any) -> str:
    text = json.dumps([attributes, start, end, category], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _token(position: tuple[float, str], fingerprint: str) -> str:
    document = json.dumps({"t": position[0], "id": position[1], "q": fingerprint}, separators=(",", ":"))
    return base64.urlsafe_b64encode(document.encode()).decode().rstrip("=")


def _read_token(token: str, fingerprint: str) -> tuple[float, str]:
    try:
        document = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        position = (float(document["t"]), str(document["id"]))
        issued_for = document["q"]
    except (ValueError, TypeError, KeyError):
        raise InvalidNextTokenException("Invalid NextToken.")
    if issued_for != fingerprint:
        raise InvalidNextTokenException("Invalid NextToken: the token was issued for other lookup attributes or another time range.")
    return position


def lookup(account: str, region: str, params: dict[str, Any], now: datetime | None = None) -> dict[str, Any]:
    """LookupEvents' answer for a request's parameters (as the JSON body has them)."""
    now = now or datetime.now(timezone.utc)
    attributes = params.get("LookupAttributes") or []
    if not isinstance(attributes, list):
        raise InvalidLookupAttributesException("LookupAttributes must be a list.")
    if len(attributes) > 1:
        raise InvalidLookupAttributesException("You can specify only one lookup attribute in a LookupEvents request.")
    wanted: tuple[str, str] | None = None
    if attributes:
        attribute = attributes[0] if isinstance(attributes[0], dict) else {}
        key, value = attribute.get("AttributeKey"), attribute.get("AttributeValue")
        if key not in LOOKUP_KEYS:
            raise InvalidLookupAttributesException(
                f"The attribute key {key!r} is not valid; valid keys are {', '.join(LOOKUP_KEYS)}.")
        if not isinstance(value, str) or not value:
            raise InvalidLookupAttributesException(f"The attribute value for {key} must be a non-empty string.")
        if key == "ReadOnly" and value not in ("true", "false"):
            raise InvalidLookupAttributesException("The attribute value for ReadOnly must be true or false.")
        wanted = (key, value)

    category = params.get("EventCategory")
    if category is not None and category != "insight":
        raise InvalidEventCategoryException(f"The event category {category!r} is not valid; the only valid value is insight.")

    try:
        end = _utc(params["EndTime"]) if params.get("EndTime") is not None else now
        start = _utc(params["StartTime"]) if params.get("StartTime") is not None else end - timedelta(days=HISTORY_DAYS)
    except (ValueError, TypeError, OverflowError):
        raise InvalidTimeRangeException("StartTime and EndTime must be timestamps.")
    if start > end:
        raise InvalidTimeRangeException("The StartTime must be earlier than (or the same as) the EndTime.")

    limit = params.get("MaxResults")
    if limit is None:
        limit = MAX_RESULTS
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_RESULTS:
        raise InvalidMaxResultsException(f"MaxResults must be a whole number from 1 to {MAX_RESULTS} (got {limit!r}).")

    fingerprint = _fingerprint(attributes, params.get("StartTime"), params.get("EndTime"), category)
    after = _read_token(str(params["NextToken"]), fingerprint) if params.get("NextToken") else None

    with _lock:
        stored = list(EVENTS.get((str(account), str(region)), {}).values())
    if category == "insight":
        stored = []
    found = [
        e for e in stored
        if e["visible"] <= now and start <= e["at"] <= end and (wanted is None or _matches(e["summary"], *wanted))
    ]
    # Newest first; events of the same second by id, so pages never overlap.
    found.sort(key=lambda e: (e["summary"]["EventTime"], e["summary"]["EventId"]), reverse=True)
    if after is not None:
        found = [e for e in found if (e["summary"]["EventTime"], e["summary"]["EventId"]) < after]
    page = found[:limit]
    answer: dict[str, Any] = {"Events": [dict(e["summary"]) for e in page]}
    if len(found) > limit:
        last = page[-1]["summary"]
        answer["NextToken"] = _token((last["EventTime"], last["EventId"]), fingerprint)
    return answer


def _lookup_events(self: Any) -> tuple[str, dict[str, Any]]:
    params = json.loads(self.body or "{}") if isinstance(self.body, (str, bytes)) else {}
    body = json.dumps(lookup(self.current_account, self.region, params))
    return body, {"status": 200, "Content-Type": "application/x-amz-json-1.1"}


def install() -> None:
    ct_responses.CloudTrailResponse.lookup_events = _lookup_events

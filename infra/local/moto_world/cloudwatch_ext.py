"""CloudWatch extensions for moto 5.2.5.

What moto lacks and alarm-triage relies on:

1. DescribeAlarmHistory (moto: HTTP 500). Every state change is recorded with
   AWS-shaped HistoryData, and past changes can be loaded for a world.
2. Alarm state changes notify the alarm's SNS actions with the payload
   CloudWatch really publishes (moto: SetAlarmState publishes nothing).
3. New alarms start in INSUFFICIENT_DATA, as on AWS (moto: OK).
4. GetMetricData with percentile statistics (p99, p50, ...) computed from the
   values and counts given to PutMetricData, and the namespace honoured when
   dimensions are given (moto: HTTP 500 on percentiles, namespace ignored).
   Values/Counts are kept as histograms instead of being expanded one object
   per count, so a world with realistic request counts stays fast. Metric
   math expressions (arithmetic over the query ids: `100 * errors /
   requests`) are evaluated over those MetricStat results (moto: an
   expression must be a lone id, anything else answers no datapoints).
5. Composite alarms: PutCompositeAlarm (moto: not implemented); a composite
   is kept as an alarm with a rule, and its state changes are recorded and
   notify like a metric alarm's (history AlarmType CompositeAlarm, the
   notification with AlarmRule and TriggeringChildren, from the
   triggeringAlarms of the state's reasonData, instead of Trigger). DescribeAlarms honours
   AlarmTypes as AWS does: without it only metric alarms are listed (moto:
   both kinds, always).
"""

from __future__ import annotations

import json
import math
import threading
from collections import defaultdict
from datetime import datetime, timedelta, timezone
from typing import Any

from moto.cloudwatch import models as cw_models
from moto.cloudwatch import responses as cw_responses
from moto.cloudwatch.exceptions import ValidationError
from moto.core.responses import ActionResult, EmptyResult
from moto.core.utils import utcnow

from . import metric_math

# Region display names as CloudWatch writes them into notifications.
REGION_NAMES = {
    "us-east-1": "US East (N. Virginia)",
    "us-east-2": "US East (Ohio)",
    "us-west-1": "US West (N. California)",
    "us-west-2": "US West (Oregon)",
    "eu-west-1": "EU (Ireland)",
    "eu-west-2": "EU (London)",
    "eu-west-3": "EU (Paris)",
    "eu-central-1": "EU (Frankfurt)",
    "eu-north-1": "EU (Stockholm)",
    "ap-southeast-1": "Asia Pacific (Singapore)",
    "ap-southeast-2": "Asia Pacific (Sydney)",
    "ap-northeast-1": "Asia Pacific (Tokyo)",
}

_lock = threading.Lock()
# (account, region, alarm name) -> history items, oldest first
HISTORY: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
# (account, region, namespace, metric name, dimensions) -> [(timestamp, values, counts, sum, min, max, n)]
SAMPLES: dict[tuple, list[tuple]] = defaultdict(list)


def naive_utc(value: Any) -> datetime:
    """moto keeps naive UTC datetimes; accept aware ones, strings and epoch seconds too."""
    if value is None:
        return utcnow()
    if isinstance(value, (int, float)):
        value = datetime.fromtimestamp(float(value), tz=timezone.utc)
    if isinstance(value, str):
        value = datetime.fromisoformat(value.replace("Z", "+00:00"))
    if value.tzinfo is not None:
        value = value.astimezone(timezone.utc).replace(tzinfo=None)
    return value


def cloudwatch_time(value: datetime) -> str:
    """2026-11-29T10:00:00.000+0000, as in notifications."""
    return naive_utc(value).strftime("%Y-%m-%dT%H:%M:%S.") + f"{naive_utc(value).microsecond // 1000:03d}+0000"


def _history_item(alarm_name: str, alarm_type: str, at: datetime, old: str, new: str,
                  old_reason: str, new_reason: str, reason_data: str | None) -> dict[str, Any]:
    new_state: dict[str, Any] = {"stateValue": new, "stateReason": new_reason}
    if reason_data:
        try:
            new_state["stateReasonData"] = json.loads(reason_data)
        except ValueError:
            pass
    return {
        "AlarmName": alarm_name,
        "AlarmType": alarm_type,
        "Timestamp": naive_utc(at),
        "HistoryItemType": "StateUpdate",
        "HistorySummary": f"Alarm updated from {old} to {new}",
        "HistoryData": json.dumps(
            {
                "version": "1.0",
                "oldState": {"stateValue": old, "stateReason": old_reason},
                "newState": new_state,
            }
        ),
    }


def record_history(account: str, region: str, alarm_name: str, items: list[dict[str, Any]]) -> int:
    """Loads past state changes for a world (the admin endpoint calls this)."""
    with _lock:
        bucket = HISTORY[(account, region, alarm_name)]
        for item in items:
            bucket.append(
                _history_item(
                    alarm_name,
                    item.get("alarm_type", "MetricAlarm"),
                    naive_utc(item["timestamp"]),
                    item["old_state"],
                    item["new_state"],
                    item.get("old_reason", ""),
                    item.get("reason", f"Threshold Crossed (loaded history): {item['old_state']} -> {item['new_state']}"),
                    None,
                )
            )
        bucket.sort(key=lambda i: i["Timestamp"])
    # The alarm is in the state its last recorded change left it in.
    backend = cw_models.cloudwatch_backends[account][region]
    alarm = backend.alarms.get(alarm_name)
    if alarm is not None and items:
        last = max(items, key=lambda i: naive_utc(i["timestamp"]))
        alarm.state_value = last["new_state"]
        alarm.state_reason = last.get("reason", "loaded history")
        alarm.state_updated_timestamp = naive_utc(last["timestamp"])
    return len(items)


# --- 1. DescribeAlarmHistory -------------------------------------------------

def _describe_alarm_history(self: Any) -> ActionResult:
    params = self._get_params()
    name = params.get("AlarmName")
    item_type = params.get("HistoryItemType")
    start = naive_utc(params["StartDate"]) if params.get("StartDate") else None
    end = naive_utc(params["EndDate"]) if params.get("EndDate") else None
    scan_by = params.get("ScanBy") or "TimestampDescending"
    limit = int(params.get("MaxRecords") or 100)
    offset = int(params.get("NextToken") or 0)
    with _lock:
        items = [
            dict(i)
            for (account, region, alarm), bucket in HISTORY.items()
            if account == self.current_account and region == self.region and (name is None or alarm == name)
            for i in bucket
        ]
    items = [
        i for i in items
        if (item_type is None or i["HistoryItemType"] == item_type)
        and (start is None or i["Timestamp"] >= start)
        and (end is None or i["Timestamp"] <= end)
    ]
    items.sort(key=lambda i: i["Timestamp"], reverse=scan_by == "TimestampDescending")
    page = items[offset: offset + limit]
    result: dict[str, Any] = {"AlarmHistoryItems": page}
    if offset + limit < len(items):
        result["NextToken"] = str(offset + limit)
    return ActionResult(result)


# --- 2. and 3. State changes notify, new alarms start in INSUFFICIENT_DATA ---

def _trigger(alarm: Any) -> dict[str, Any]:
    period = alarm.period
    if period is None:
        # A metric-math alarm has no Period of its own; CloudWatch's notification carries its metrics'.
        period = next((int(q.metric_stat.period) for q in alarm.metric_data_queries if q.metric_stat and q.metric_stat.period), None)
    trigger: dict[str, Any] = {
        "Period": period,
        "EvaluationPeriods": alarm.evaluation_periods,
        "ComparisonOperator": alarm.comparison_operator,
        "TreatMissingData": alarm.treat_missing_data or "missing",
        "EvaluateLowSampleCountPercentile": alarm.evaluate_low_sample_count_percentile or "",
    }
    if alarm.datapoints_to_alarm:
        trigger["DatapointsToAlarm"] = alarm.datapoints_to_alarm
    if alarm.threshold_metric_id:
        trigger["ThresholdMetricId"] = alarm.threshold_metric_id
    elif alarm.threshold is not None:
        trigger["Threshold"] = float(alarm.threshold)
    if alarm.metric_name:
        trigger.update(
            {
                "MetricName": alarm.metric_name,
                "Namespace": alarm.namespace,
                "StatisticType": "ExtendedStatistic" if alarm.extended_statistic else "Statistic",
                "Unit": alarm.unit,
                "Dimensions": [{"value": d.value, "name": d.name} for d in alarm.dimensions],
            }
        )
        if alarm.extended_statistic:
            trigger["ExtendedStatistic"] = alarm.extended_statistic
        else:
            trigger["Statistic"] = (alarm.statistic or "").upper()
    else:
        metrics = []
        for q in alarm.metric_data_queries:
            entry: dict[str, Any] = {"Id": q.id, "ReturnData": bool(q.return_data)}
            if q.label:
                entry["Label"] = q.label
            if q.expression:
                entry["Expression"] = q.expression
            if q.metric_stat:
                m = q.metric_stat.metric
                entry["MetricStat"] = {
                    "Metric": {
                        "Dimensions": [{"value": d.value, "name": d.name} for d in m.dimensions],
                        "MetricName": m.metric_name,
                        "Namespace": m.namespace,
                    },
                    "Period": int(q.metric_stat.period),
                    "Stat": q.metric_stat.stat,
                }
                if q.metric_stat.unit:
                    entry["MetricStat"]["Unit"] = q.metric_stat.unit
            metrics.append(entry)
        trigger["Metrics"] = metrics
    return trigger


def notification(alarm: Any, account: str, region: str, old: str, new: str, reason: str, at: datetime,
                 reason_data: str | None = None) -> dict[str, Any]:
    """The JSON CloudWatch publishes to SNS for a state change; a composite's
    carries its rule and the children that triggered it (from reasonData)."""
    message: dict[str, Any] = {
        "AlarmName": alarm.name,
        "AlarmDescription": alarm.description,
        "AWSAccountId": account,
        "AlarmConfigurationUpdatedTimestamp": cloudwatch_time(alarm.configuration_updated_timestamp),
        "NewStateValue": new,
        "NewStateReason": reason,
        "StateChangeTime": cloudwatch_time(at),
        "Region": REGION_NAMES.get(region, region),
        "AlarmArn": alarm.alarm_arn,
        "OldStateValue": old,
        "OKActions": list(alarm.ok_actions),
        "AlarmActions": list(alarm.alarm_actions or []),
        "InsufficientDataActions": list(alarm.insufficient_data_actions),
    }
    if getattr(alarm, "rule", None):
        message["AlarmRule"] = alarm.rule
        try:
            children = json.loads(reason_data or "{}").get("triggeringAlarms") or []
        except (ValueError, AttributeError):
            children = []
        if children:
            message["TriggeringChildren"] = [
                {"Arn": c.get("arn"), "State": {"Value": (c.get("state") or {}).get("value"),
                                                "Timestamp": (c.get("state") or {}).get("timestamp")}}
                for c in children
            ]
    else:
        message["Trigger"] = _trigger(alarm)
    return message


def _publish(account: str, region: str, alarm: Any, message: dict[str, Any], new: str) -> None:
    from moto.sns.models import sns_backends

    actions = {"ALARM": alarm.alarm_actions or [], "OK": alarm.ok_actions, "INSUFFICIENT_DATA": alarm.insufficient_data_actions}[new]
    subject = f'{new}: "{alarm.name}" in {REGION_NAMES.get(region, region)}'[:100]
    for action in actions:
        if not action.startswith("arn:aws:sns:"):
            continue
        parts = action.split(":")
        topic_region, topic_account = parts[3], parts[4]
        backend = sns_backends[topic_account][topic_region]
        backend.publish(message=json.dumps(message), arn=action, subject=subject)


_original_set_alarm_state = cw_models.CloudWatchBackend.set_alarm_state
_original_put_metric_alarm = cw_models.CloudWatchBackend.put_metric_alarm


def _set_alarm_state(self: Any, alarm_name: str, reason: str, reason_data: str, state_value: str) -> None:
    alarm = self.alarms.get(alarm_name)
    old = alarm.state_value if alarm else None
    old_reason = alarm.state_reason if alarm else ""
    _original_set_alarm_state(self, alarm_name, reason, reason_data, state_value)
    alarm = self.alarms[alarm_name]
    if old == state_value:
        return
    at = alarm.state_updated_timestamp
    alarm_type = "CompositeAlarm" if alarm.rule else "MetricAlarm"
    with _lock:
        HISTORY[(self.account_id, self.region_name, alarm_name)].append(
            _history_item(alarm_name, alarm_type, at, old, state_value, old_reason, reason, reason_data)
        )
    if alarm.actions_enabled:
        message = notification(alarm, self.account_id, self.region_name, old, state_value, reason, at, reason_data)
        _publish(self.account_id, self.region_name, alarm, message, state_value)


def _put_metric_alarm(self: Any, *args: Any, **kwargs: Any) -> Any:
    name = kwargs.get("name", args[0] if args else None)
    is_new = name not in self.alarms
    alarm = _original_put_metric_alarm(self, *args, **kwargs)
    if is_new:
        alarm.state_value = "INSUFFICIENT_DATA"
        alarm.state_reason = "Unchecked: Initial alarm creation"
    return alarm


# --- 4. Percentiles, namespaces, histograms ----------------------------------

_original_put_metric_data = cw_models.CloudWatchBackend.put_metric_data
_original_get_metric_data = cw_models.CloudWatchBackend.get_metric_data


def _dims_key(dimensions: list[dict[str, Any]] | None) -> tuple:
    return tuple(sorted((d["Name"], d["Value"]) for d in (dimensions or [])))


def _put_metric_data(self: Any, namespace: str, metric_data: list[dict[str, Any]]) -> None:
    for i, metric in enumerate(metric_data):
        self._validate_parameters_put_metric_data(metric, i + 1)
    plain = []
    for member in metric_data:
        at = naive_utc(member.get("Timestamp"))
        key = (self.account_id, self.region_name, namespace, member["MetricName"], _dims_key(member.get("Dimensions")))
        if member.get("Values"):
            values = [float(v) for v in member["Values"]]
            counts = [float(c) for c in (member.get("Counts") or [1] * len(values))]
            n = sum(counts)
            total = sum(v * c for v, c in zip(values, counts))
            sample = (at, values, counts, total, min(values), max(values), n)
            # moto would store one object per count; keep one aggregate for its own APIs instead.
            self.metric_data.append(
                cw_models.MetricAggregatedDatum(
                    namespace=namespace, name=member["MetricName"], sum_stat=total, min_stat=min(values),
                    max_stat=max(values), sample_count=n, dimensions=member.get("Dimensions") or [],
                    timestamp=at, unit=member.get("Unit"),
                )
            )
        elif member.get("StatisticValues"):
            s = member["StatisticValues"]
            n = float(s["SampleCount"])
            sample = (at, [float(s["Sum"]) / n if n else 0.0], [n], float(s["Sum"]), float(s["Minimum"]), float(s["Maximum"]), n)
            plain.append(member)
        else:
            v = float(member.get("Value", 0))
            sample = (at, [v], [1.0], v, v, v, 1.0)
            plain.append(member)
        with _lock:
            SAMPLES[key].append(sample)
    if plain:
        _original_put_metric_data(self, namespace, plain)


def _statistic(stat: str, samples: list[tuple]) -> float | None:
    if not samples:
        return None
    n = sum(s[6] for s in samples)
    if stat == "SampleCount":
        return n
    if stat == "Sum":
        return sum(s[3] for s in samples)
    if stat == "Minimum":
        return min(s[4] for s in samples)
    if stat == "Maximum":
        return max(s[5] for s in samples)
    if stat == "Average":
        return sum(s[3] for s in samples) / n if n else None
    if stat.startswith("tm"):
        # Trimmed mean: the mean of the values at or below the percentile (tm99 drops the slowest 1 %).
        try:
            p = float(stat[2:])
        except ValueError:
            raise ValidationError(f"The value {stat} for parameter Stat is not supported.")
        keep = p / 100.0 * n
        total = taken = 0.0
        for value, count in sorted((v, c) for s in samples for v, c in zip(s[1], s[2])):
            part = min(count, keep - taken)
            if part <= 0:
                break
            total += value * part
            taken += part
        return total / taken if taken else None
    if stat.startswith("p"):
        try:
            p = float(stat[1:])
        except ValueError:
            raise ValidationError(f"The value {stat} for parameter Stat is not supported.")
        pairs = sorted((v, c) for s in samples for v, c in zip(s[1], s[2]))
        rank = max(1.0, math.ceil(p / 100.0 * n))
        seen = 0.0
        for value, count in pairs:
            seen += count
            if seen >= rank:
                return value
        return pairs[-1][0]
    raise ValidationError(f"The value {stat} for parameter Stat is not supported.")


def _stat_points(self: Any, stat_spec: dict[str, Any], start: datetime, end: datetime) -> list[tuple[datetime, float]]:
    """One MetricStat's datapoints from the histogram index, oldest first."""
    metric = stat_spec["Metric"]
    period = int(stat_spec["Period"])
    key = (self.account_id, self.region_name, metric.get("Namespace"), metric["MetricName"], _dims_key(metric.get("Dimensions")))
    with _lock:
        samples = [s for s in SAMPLES.get(key, ()) if start <= s[0] < end]
    buckets: dict[int, list[tuple]] = defaultdict(list)
    for s in samples:
        buckets[int((s[0] - start).total_seconds()) // period].append(s)
    points = []
    for index in sorted(buckets):
        value = _statistic(stat_spec["Stat"], buckets[index])
        if value is not None:
            points.append((start + timedelta(seconds=index * period), value))
    return points


def _expression_points(queries: list[dict[str, Any]], stats: dict[str, list[tuple[datetime, float]]]) -> dict[str, list[tuple[datetime, float]]]:
    """The datapoints of the arithmetic expression queries, over the MetricStat
    results (and each other's), as CloudWatch's metric math computes them."""
    expressions = {q["Id"]: q["Expression"] for q in queries if "Expression" in q}
    done: dict[str, dict[datetime, float]] = {k: dict(v) for k, v in stats.items()}
    busy: set[str] = set()

    def lookup(query_id: str) -> Any:
        if query_id in done:
            return done[query_id]
        if query_id not in expressions:
            raise ValidationError(f"Error in expression '{query_id}': Unrecognized token {query_id}")
        if query_id in busy:
            raise ValidationError(f"Error in expression '{query_id}': the expression refers to itself")
        busy.add(query_id)
        try:
            tree = metric_math.parse(expressions[query_id])
        except metric_math.MetricMathError as error:
            raise ValidationError(f"Error in expression '{query_id}': {error} (the local world evaluates arithmetic only)")
        value = metric_math.evaluate(tree, lookup)
        busy.discard(query_id)
        done[query_id] = value if isinstance(value, dict) else {}
        return done[query_id]

    return {query_id: sorted(lookup(query_id).items()) for query_id in expressions}


def _get_metric_data(self: Any, queries: list[dict[str, Any]], start_time: datetime, end_time: datetime,
                     scan_by: str = "TimestampAscending") -> list[dict[str, Any]]:
    start, end = naive_utc(start_time).replace(microsecond=0), naive_utc(end_time).replace(microsecond=0)
    if start >= end:
        raise ValidationError("The parameter StartTime must be less than the parameter EndTime.")
    if any(str(q.get("Expression", "")).lstrip().upper().startswith("SELECT") for q in queries):
        # Metrics Insights queries stay moto's.
        return _original_get_metric_data(self, queries, start_time, end_time, scan_by)
    ids = [q["Id"] for q in queries]
    if len(set(ids)) != len(ids):
        raise ValidationError("The values for parameter id in MetricDataQueries are not unique.")
    stats = {q["Id"]: _stat_points(self, q["MetricStat"], start, end) for q in queries if "MetricStat" in q}
    # Metric math (arithmetic: `100 * errors / requests`) over the MetricStat results.
    points_of = {**stats, **_expression_points(queries, stats)}
    results = []
    for query in queries:
        if query.get("ReturnData", True) is False:
            continue
        points = list(points_of[query["Id"]])
        if scan_by != "TimestampAscending":
            points.reverse()
        label = query.get("Label") or (query["MetricStat"]["Metric"]["MetricName"] if "MetricStat" in query else query["Id"])
        results.append(
            {
                "id": query["Id"],
                "label": label,
                "values": [v for _, v in points],
                "timestamps": [t for t, _ in points],
                "status_code": "Complete",
            }
        )
    return results


# --- 5. Composite alarms --------------------------------------------------------

def _put_composite_alarm(self: Any) -> ActionResult:
    name = self._get_param("AlarmName")
    rule = self._get_param("AlarmRule")
    if not name or not rule:
        raise ValidationError("PutCompositeAlarm needs AlarmName and AlarmRule.")
    actions_enabled = self._get_param("ActionsEnabled")
    self.cloudwatch_backend.put_metric_alarm(
        name=name, namespace=None, metric_name=None, metric_data_queries=None, comparison_operator=None,
        evaluation_periods=None, datapoints_to_alarm=None, period=None, threshold=None, statistic=None,
        extended_statistic=None, description=self._get_param("AlarmDescription"), dimensions=[],
        alarm_actions=self._get_param("AlarmActions", []), ok_actions=self._get_param("OKActions", []),
        insufficient_data_actions=self._get_param("InsufficientDataActions", []), unit=None,
        actions_enabled=None if actions_enabled is None else str(actions_enabled).lower() == "true",
        treat_missing_data=None, evaluate_low_sample_count_percentile=None, threshold_metric_id=None,
        rule=rule, tags=self._get_param("Tags", []),
    )
    return EmptyResult()


_original_describe_alarms = cw_responses.CloudWatchResponse.describe_alarms


def _describe_alarms(self: Any) -> ActionResult:
    result = _original_describe_alarms(self)
    types = self._get_param("AlarmTypes") or ["MetricAlarm"]
    document = dict(result.result)  # type: ignore[arg-type]
    if "MetricAlarm" not in types:
        document["MetricAlarms"] = []
    if "CompositeAlarm" not in types:
        document["CompositeAlarms"] = []
    return ActionResult(document)


def install() -> None:
    """Patches moto's CloudWatch backend and responses in place."""
    cw_responses.CloudWatchResponse.put_composite_alarm = _put_composite_alarm
    cw_responses.CloudWatchResponse.describe_alarms = _describe_alarms
    cw_responses.CloudWatchResponse.describe_alarm_history = _describe_alarm_history
    cw_models.CloudWatchBackend.set_alarm_state = _set_alarm_state
    cw_models.CloudWatchBackend.put_metric_alarm = _put_metric_alarm
    cw_models.CloudWatchBackend.put_metric_data = _put_metric_data
    cw_models.CloudWatchBackend.get_metric_data = _get_metric_data

"""Reading a world: validation with clear errors, and the generators that turn
a world's description into CloudWatch datapoints (ALB, NLB and Container
Insights), target health over time, alarm history, Prometheus series,
Kubernetes manifests and what the containers printed (pods/log and Container
Insights' log group). Pure: no network, no processes.

The format is documented in docs/worlds.md.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterator

import yaml

from moto_world import metric_math

OFFSET_RE = re.compile(r"^(?P<sign>[+-])?(?:(?P<h>\d+)h)?(?:(?P<m>\d+)m)?(?:(?P<s>\d+)s)?$")
TEMPLATE_RE = re.compile(r"\{\{\s*now\s*(?P<offset>[+-][0-9hms]+)?\s*\}\}")
ARN_RE = re.compile(r"\{\{\s*target_group_arn\s+(?P<name>[\w.-]+)\s*\}\}")


class WorldError(Exception):
    """A malformed world: says which file, which field, and what was expected."""

    def __init__(self, file: Path | str, field: str, expected: str, got: Any = None):
        detail = f" (got {got!r})" if got is not None else ""
        super().__init__(f"{file}: field {field}: expected {expected}{detail}")


def parse_offset(value: Any, file: Path | str, field: str) -> timedelta:
    """'-3h', '-45m', '-1h30m', '0', 0 -> timedelta."""
    if isinstance(value, (int, float)) and value == 0:
        return timedelta(0)
    text = str(value).strip()
    match = OFFSET_RE.match(text)
    if not text or text in "+-" or not match or not any(match.group(k) for k in ("h", "m", "s")):
        if text == "0":
            return timedelta(0)
        raise WorldError(file, field, "a time offset from now such as -3h, -45m, -1h30m or 0", value)
    seconds = int(match.group("h") or 0) * 3600 + int(match.group("m") or 0) * 60 + int(match.group("s") or 0)
    return timedelta(seconds=-seconds if match.group("sign") == "-" else seconds)


def parse_duration(value: Any, file: Path | str, field: str) -> timedelta:
    delta = parse_offset(value, file, field)
    if delta.total_seconds() <= 0:
        raise WorldError(file, field, "a positive duration such as 8m or 1h", value)
    return delta


def _require(mapping: Any, key: str, file: Path | str, field: str, expected: str) -> Any:
    if not isinstance(mapping, dict) or key not in mapping:
        raise WorldError(file, f"{field}.{key}" if field else key, expected)
    return mapping[key]


def _only_keys(spec: Any, f: Path | str, field: str, keys: tuple[str, ...] | list[str], expected: str) -> dict[str, Any]:
    """`spec` as a mapping holding none but `keys`; else a WorldError naming the
    first stray key (or the field, when it is no mapping)."""
    if not isinstance(spec, dict):
        raise WorldError(f, field, expected, spec)
    unknown = sorted(set(spec) - set(keys))
    if unknown:
        raise WorldError(f, f"{field}.{unknown[0]}", f"one of {', '.join(keys)}", spec[unknown[0]])
    return spec


@dataclass
class World:
    directory: Path
    spec: dict[str, Any]
    now: datetime  # whole minute, UTC, aware

    @property
    def name(self) -> str:
        return self.directory.name

    @property
    def file(self) -> Path:
        return self.directory / "world.yaml"

    def at(self, offset: Any, field: str) -> datetime:
        return self.now + parse_offset(offset, self.file, field)


def load(directory: Path, now: datetime | None = None) -> World:
    """Reads and validates DIR/world.yaml; `now` defaults to the current minute."""
    file = directory / "world.yaml"
    if not file.is_file():
        raise WorldError(file, "(file)", "a world.yaml in the world directory")
    try:
        spec = yaml.safe_load(file.read_text())
    except yaml.YAMLError as error:
        raise WorldError(file, "(syntax)", f"valid YAML ({error})")
    if not isinstance(spec, dict):
        raise WorldError(file, "(top level)", "a mapping")
    now = (now or datetime.now(timezone.utc)).replace(second=0, microsecond=0)
    world = World(directory, spec, now)
    validate(world)
    return world


def validate(world: World) -> None:
    f, s = world.file, world.spec
    account = str(_require(s, "account", f, "", "a 12-digit AWS account id"))
    if not re.fullmatch(r"\d{12}", account):
        raise WorldError(f, "account", "a 12-digit AWS account id", account)
    _require(s, "region", f, "", "a region code such as eu-west-1")
    lb = _require(s, "load_balancer", f, "", "a load_balancer mapping")
    _require(lb, "name", f, "load_balancer", "the ALB name (at most 32 characters)")
    if len(lb["name"]) > 32:
        raise WorldError(f, "load_balancer.name", "at most 32 characters, as on AWS", lb["name"])
    kind = lb.get("type", "application")
    if kind not in LOAD_BALANCER_TYPES:
        raise WorldError(f, "load_balancer.type", "application (an ALB, the default) or network (an NLB)", kind)
    groups = _require(lb, "target_groups", f, "load_balancer", "a list of target groups")
    if not isinstance(groups, list) or not groups:
        raise WorldError(f, "load_balancer.target_groups", "a non-empty list")
    if kind == "network":
        validate_network_load_balancer(f, lb)
    else:
        for key in NLB_LOAD_BALANCER_LEVELS:
            if key in lb:
                raise WorldError(f, f"load_balancer.{key}", "nothing here on an application load balancer: it is a "
                                 "Network Load Balancer's figure (load_balancer.type: network)", lb[key])
    for i, tg in enumerate(groups):
        where = f"load_balancer.target_groups[{i}]"
        name = _require(tg, "name", f, where, "a target group name")
        if len(name) > 32:
            raise WorldError(f, f"{where}.name", "at most 32 characters, as on AWS", name)
        if tg.get("target_type", "instance") not in ("instance", "ip", "lambda"):
            raise WorldError(f, f"{where}.target_type", "instance, ip or lambda", tg.get("target_type"))
        if kind == "network":
            validate_network_target_group(f, where, tg)
            continue
        if "listener_port" in tg:
            raise WorldError(f, f"{where}.listener_port", "nothing here on an application load balancer (its one "
                             "listener routes by path); each group's own listener port is a network load balancer's", tg["listener_port"])
        if tg.get("algorithm", "round_robin") not in ("round_robin", "least_outstanding_requests", "weighted_random"):
            raise WorldError(f, f"{where}.algorithm", "round_robin, least_outstanding_requests or weighted_random", tg.get("algorithm"))
        attributes = tg.get("attributes", {})
        if not isinstance(attributes, dict):
            raise WorldError(f, f"{where}.attributes", "{slow_start: SECONDS, deregistration_delay: SECONDS}", attributes)
        _only_keys(attributes, f, f"{where}.attributes", ("slow_start", "deregistration_delay"), "{slow_start: SECONDS, deregistration_delay: SECONDS}")
        if not (attributes.get("slow_start", 0) == 0 or (isinstance(attributes.get("slow_start"), int) and 30 <= attributes["slow_start"] <= 900)):
            raise WorldError(f, f"{where}.attributes.slow_start", "0 (off) or whole seconds from 30 to 900, as on AWS", attributes.get("slow_start"))
        if not (isinstance(attributes.get("deregistration_delay", 300), int) and 0 <= attributes.get("deregistration_delay", 300) <= 3600):
            raise WorldError(f, f"{where}.attributes.deregistration_delay", "whole seconds from 0 to 3600", attributes.get("deregistration_delay"))
        validate_targets(f, where, tg)
        if "health_check" in tg:
            validate_health_check(f, f"{where}.health_check", tg["health_check"])
        _require(tg, "metrics", f, where, "a metrics mapping (requests_per_minute, latency)")
        for key in NLB_GROUP_LEVELS:
            if isinstance(tg["metrics"], dict) and key in tg["metrics"]:
                raise WorldError(f, f"{where}.metrics.{key}", "nothing here on an application load balancer: flows "
                                 "and TCP resets are a Network Load Balancer's (load_balancer.type: network)", tg["metrics"][key])
        _require(tg["metrics"], "requests_per_minute", f, f"{where}.metrics", "a level such as {base: 600}")
        validate_metric_levels(f, f"{where}.metrics", tg["metrics"])
        _require(tg["metrics"], "latency", f, f"{where}.metrics", "latency buckets such as {base: [[0.1, 0.99], [0.5, 0.01]]}")
        for phase in ("base", "burst"):
            buckets = tg["metrics"]["latency"].get(phase)
            if buckets is None:
                continue
            if not isinstance(buckets, list) or not all(isinstance(b, list) and len(b) == 2 for b in buckets):
                raise WorldError(f, f"{where}.metrics.latency.{phase}", "a list of [seconds, share] pairs", buckets)
    alarm = _require(s, "alarm", f, "", "an alarm mapping")
    for key in ("name", "threshold", "comparison", "period", "evaluation_periods"):
        _require(alarm, key, f, "alarm", f"the alarm's {key}")
    names = [tg.get("name") for tg in s.get("load_balancer", {}).get("target_groups", [])]
    if "target_group" in alarm and alarm["target_group"] not in names:
        raise WorldError(f, "alarm.target_group", f"the name of a target group in world.yaml ({', '.join(map(str, names))})", alarm["target_group"])
    if "metrics" in alarm:
        # A metric-math alarm: its metrics and statistics are in alarm.metrics.
        for key in ("metric", "statistic"):
            if key in alarm:
                raise WorldError(f, f"alarm.{key}", "no alarm.metric or alarm.statistic beside alarm.metrics "
                                 "(a metric-math alarm names each metric and its stat in alarm.metrics)", alarm[key])
        alarm_queries(alarm, f, kind)
    else:
        for key in ("metric", "statistic"):
            _require(alarm, key, f, "alarm", f"the alarm's {key} (or alarm.metrics, for a metric-math alarm)")
        statistic_kind(alarm["statistic"], f)
        validate_alarm_metric(f, alarm, lb_type=kind)
    if "rejected_connections_per_minute" in lb:
        validate_level(f, "load_balancer.rejected_connections_per_minute", lb["rejected_connections_per_minute"])
    deliver = _require(alarm, "deliver", f, "alarm", "the transition to deliver, e.g. {from: OK, to: ALARM}")
    for key in ("from", "to"):
        if _require(deliver, key, f, "alarm.deliver", "OK, ALARM or INSUFFICIENT_DATA") not in ("OK", "ALARM", "INSUFFICIENT_DATA"):
            raise WorldError(f, f"alarm.deliver.{key}", "OK, ALARM or INSUFFICIENT_DATA", deliver[key])
    if "schedule" in s:
        bursts(world)
    history(world)
    cluster = _require(s, "cluster", f, "", "a cluster mapping (name, endpoint)")
    _require(cluster, "name", f, "cluster", "the EKS cluster name")
    if cluster.get("endpoint", "public") not in ("public", "private"):
        raise WorldError(f, "cluster.endpoint", "public or private", cluster.get("endpoint"))
    amp = s.get("prometheus", {}).get("amp")
    if amp is not None and not (isinstance(amp, dict) and re.fullmatch(r"ws-[0-9a-zA-Z-]{1,64}", str(amp.get("workspace", "")))):
        raise WorldError(f, "prometheus.amp.workspace", "an AMP workspace id such as ws-0a1b2c3d-...", amp.get("workspace") if isinstance(amp, dict) else amp)
    if "prometheus" in s:
        validate_pod_groups(f, "prometheus", s["prometheus"])
    if "container_insights" in s:
        validate_container_insights(f, s["container_insights"])
    if "organisation" in s:
        organisation(world)
    if "composite_alarm" in s:
        composite_alarm(world)
    security_groups(world)
    load_balancer_security_groups(world)
    cloudtrail_lag(world)
    changes(world)
    if (world.directory / "kubernetes").exists() and not (world.directory / "kubernetes").is_dir():
        raise WorldError(world.directory / "kubernetes", "(path)", "a directory of manifests")
    log_group(world)
    log_entries(world)


STATISTICS = ("Average", "Sum", "SampleCount", "Minimum", "Maximum")
EXTENDED_STATISTIC = re.compile(r"^(p|tm|wm|tc|ts)\d{1,2}(\.\d{1,2})?$")


def statistic_kind(statistic: Any, f: Path | None = None, field: str = "alarm.statistic") -> str:
    """`Statistic` for the five plain statistics, `ExtendedStatistic` for
    percentiles (`p99`, `p99.9`) and trimmed means (`tm99`), as PutMetricAlarm takes them."""
    if statistic in STATISTICS:
        return "Statistic"
    if isinstance(statistic, str) and EXTENDED_STATISTIC.match(statistic):
        return "ExtendedStatistic"
    raise WorldError(f or Path("world.yaml"), field,
                     "Average, Sum, SampleCount, Minimum, Maximum, a percentile such as p99 or a trimmed mean such as tm99",
                     statistic)


QUERY_ID = re.compile(r"^[a-z][a-zA-Z0-9_]{0,254}$")
METRICS_EXPECTED = ("a list of queries as PutMetricAlarm's Metrics takes them: one {id, expression, label} "
                    "(the one that returns data) and the {id, metric, stat} it reads")


def alarm_queries(alarm: dict[str, Any], f: Path | None = None, lb_type: str = "application") -> list[dict[str, Any]]:
    """A metric-math alarm's `metrics`, validated: exactly one
    `{id, expression, label}` and the `{id, metric, stat, label}` it reads,
    each of them read by the expression (metrics of a load balancer of
    `lb_type`). Returns the entries as given."""
    f = f or Path("world.yaml")
    queries = alarm.get("metrics")
    if not isinstance(queries, list) or not queries:
        raise WorldError(f, "alarm.metrics", METRICS_EXPECTED, queries)
    ids: list[str] = []
    expressions: list[int] = []
    for i, query in enumerate(queries):
        where = f"alarm.metrics[{i}]"
        if not isinstance(query, dict):
            raise WorldError(f, where, "{id, expression, label} or {id, metric, stat}", query)
        if "expression" in query and "metric" in query:
            raise WorldError(f, where, "either an expression ({id, expression, label}) or a metric ({id, metric, stat}), not both", query)
        if "expression" in query:
            _only_keys(query, f, where, ("id", "expression", "label"), "{id, expression, label}")
            expressions.append(i)
        else:
            _only_keys(query, f, where, ("id", "metric", "stat", "label"), "{id, metric, stat} (or {id, expression, label})")
            _require(query, "metric", f, where, "the metric this query reads, e.g. HTTPCode_Target_5XX_Count (or an expression)")
            statistic_kind(_require(query, "stat", f, where, "the metric's stat: Sum, Average, SampleCount, Minimum, Maximum or p99"),
                           f, f"{where}.stat")
            validate_alarm_metric(f, alarm, query["metric"], f"{where}.metric", lb_type)
        query_id = _require(query, "id", f, where, "an id such as e1 or errors")
        if not isinstance(query_id, str) or not QUERY_ID.match(query_id):
            raise WorldError(f, f"{where}.id", "an id as CloudWatch takes it: a lowercase letter, then letters, digits or _", query_id)
        if query_id in ids:
            raise WorldError(f, f"{where}.id", f"an id not used by another query of alarm.metrics ({', '.join(ids)})", query_id)
        ids.append(query_id)
        if "label" in query and not (isinstance(query["label"], str) and query["label"]):
            raise WorldError(f, f"{where}.label", "a non-empty string", query["label"])
    if len(expressions) != 1:
        raise WorldError(f, "alarm.metrics", "exactly one query with an expression (the one whose value the alarm "
                         f"compares to its threshold); found {len(expressions)}")
    where = f"alarm.metrics[{expressions[0]}]"
    expression = queries[expressions[0]]["expression"]
    try:
        read = metric_math.identifiers(metric_math.parse(expression))
    except metric_math.MetricMathError as error:
        raise WorldError(f, f"{where}.expression", f"arithmetic over the metrics' ids: numbers, ids, + - * / ^ and "
                         f"parentheses, e.g. 100 * errors / requests ({error})", expression)
    metric_ids = [q["id"] for q in queries if "expression" not in q]
    for query_id in read:
        if query_id not in metric_ids:
            raise WorldError(f, f"{where}.expression", f"to read only the ids of the metrics in alarm.metrics "
                             f"({', '.join(metric_ids) or 'none'}); {query_id!r} is not one", expression)
    for i, query in enumerate(queries):
        if "expression" not in query and query["id"] not in read:
            raise WorldError(f, f"alarm.metrics[{i}].id", f"an id the expression reads ({expression}); "
                             "every metric of a metric-math alarm is one of its inputs", query["id"])
    return queries


TARGET_STATES = ("healthy", "unhealthy", "initial", "draining", "unused", "unavailable")
TARGET_STATES_TEXT = "healthy, unhealthy, initial, draining, unused or unavailable"

# What the world publishes in AWS/ApplicationELB, and at which level: per
# target group (LoadBalancer + TargetGroup, most also summed per load balancer)
# or per load balancer only (the ELB's own errors and rejected connections).
ALB_METRICS_PER_TARGET_GROUP = ("RequestCount", "TargetResponseTime", "HTTPCode_Target_5XX_Count",
                                "HTTPCode_Target_4XX_Count", "HealthyHostCount", "UnHealthyHostCount")
ALB_METRICS_PER_LOAD_BALANCER = ("RequestCount", "TargetResponseTime", "HTTPCode_Target_5XX_Count",
                                 "HTTPCode_Target_4XX_Count", "HTTPCode_ELB_5XX_Count", "HTTPCode_ELB_502_Count",
                                 "HTTPCode_ELB_503_Count", "HTTPCode_ELB_504_Count", "RejectedConnectionCount")
ALB_NAMESPACE = "AWS/ApplicationELB"
ELB_5XX_CODES = (502, 503, 504)

# A Network Load Balancer (load_balancer.type: network) passes TCP, TLS and
# UDP flows through without reading requests: it publishes flows, bytes and
# TCP resets in AWS/NetworkELB, never request counts, latency or HTTP codes.
# Per target group (LoadBalancer + TargetGroup), most also summed per load
# balancer; the resets the load balancer itself or the clients send, and
# source-port exhaustion, per load balancer only.
NLB_NAMESPACE = "AWS/NetworkELB"
NLB_METRICS_PER_TARGET_GROUP = ("NewFlowCount", "ActiveFlowCount", "ProcessedBytes", "TCP_Target_Reset_Count",
                                "HealthyHostCount", "UnHealthyHostCount")
NLB_METRICS_PER_LOAD_BALANCER = ("NewFlowCount", "ActiveFlowCount", "ProcessedBytes", "TCP_Target_Reset_Count",
                                 "TCP_ELB_Reset_Count", "TCP_Client_Reset_Count", "PortAllocationErrorCount")
LOAD_BALANCER_TYPES = ("application", "network")
NAMESPACES = {"application": ALB_NAMESPACE, "network": NLB_NAMESPACE}
# What each type publishes: (per target group, per load balancer).
PUBLISHED = {"application": (ALB_METRICS_PER_TARGET_GROUP, ALB_METRICS_PER_LOAD_BALANCER),
             "network": (NLB_METRICS_PER_TARGET_GROUP, NLB_METRICS_PER_LOAD_BALANCER)}
# load_balancer levels only a network load balancer has, and the metric each makes.
NLB_LOAD_BALANCER_LEVELS = {"elb_resets_per_minute": "TCP_ELB_Reset_Count",
                            "client_resets_per_minute": "TCP_Client_Reset_Count",
                            "port_allocation_errors_per_minute": "PortAllocationErrorCount"}
NLB_GROUP_LEVELS = ("new_flows_per_minute", "active_flows", "bytes_per_minute", "target_resets_per_minute")
NLB_PROTOCOLS = ("TCP", "TLS", "UDP", "TCP_UDP")
# Without active_flows, a flow lasts this long on average (Little's law:
# concurrent flows = new flows per second x seconds each lasts).
DEFAULT_FLOW_SECONDS = 30
# Without bytes_per_minute, each new flow carries this much (both directions).
DEFAULT_BYTES_PER_FLOW = 16384
# What an NLB world may not say, and why: the HTTP side of an ALB.
HTTP_ONLY_GROUP_METRICS = ("requests_per_minute", "latency", "slow_requests", "http_5xx_per_minute",
                           "http_4xx_per_minute", "elb_5xx_per_minute")
NOT_ON_NLB = ("a network load balancer passes TCP flows through and never sees HTTP requests, latency or "
              "status codes; give new_flows_per_minute, active_flows, bytes_per_minute or target_resets_per_minute")


def load_balancer_type(world: "World") -> str:
    """`application` (the default) or `network`."""
    return world.spec["load_balancer"].get("type", "application")


def metrics_namespace(world: "World") -> str:
    """Where the world's load balancer publishes: AWS/ApplicationELB or AWS/NetworkELB."""
    return NAMESPACES[load_balancer_type(world)]


def validate_network_load_balancer(f: Path, lb: dict[str, Any]) -> None:
    """The load balancer's own fields for `type: network`: its reset and
    port-allocation levels; no ALB-only ones."""
    if "rejected_connections_per_minute" in lb:
        raise WorldError(f, "load_balancer.rejected_connections_per_minute",
                         "nothing here on a network load balancer: RejectedConnectionCount is an ALB's (an NLB does "
                         "not refuse connections at a connection limit); use elb_resets_per_minute, "
                         "client_resets_per_minute or port_allocation_errors_per_minute", lb["rejected_connections_per_minute"])
    for key in NLB_LOAD_BALANCER_LEVELS:
        if key in lb:
            validate_level(f, f"load_balancer.{key}", lb[key])
    ports: dict[int, str] = {}
    for i, tg in enumerate(lb["target_groups"]):
        port = tg.get("listener_port", tg.get("port", 80)) if isinstance(tg, dict) else None
        if not (isinstance(port, int) and 1 <= port <= 65535):
            raise WorldError(f, f"load_balancer.target_groups[{i}].listener_port", "a port number from 1 to 65535", port)
        if port in ports:
            raise WorldError(f, f"load_balancer.target_groups[{i}].listener_port",
                             f"a listener port no other group uses (an NLB forwards each listener port to one group; "
                             f"{port} is already {ports[port]}'s: set listener_port)", port)
        ports[port] = str(tg.get("name"))


def validate_network_target_group(f: Path, where: str, tg: dict[str, Any]) -> None:
    """A target group of a network load balancer: a TCP, TLS or UDP protocol,
    a TCP health check, flow levels, and none of the ALB's HTTP fields."""
    protocol = tg.get("protocol", "TCP")
    if protocol not in NLB_PROTOCOLS:
        raise WorldError(f, f"{where}.protocol", f"{', '.join(NLB_PROTOCOLS)} on a network load balancer (TCP by default)", protocol)
    if tg.get("algorithm", "round_robin") != "round_robin":
        raise WorldError(f, f"{where}.algorithm", "round_robin (or nothing) on a network load balancer: it hashes each "
                         "flow onto a target and has no routing algorithm to choose", tg["algorithm"])
    if "health_check_path" in tg:
        raise WorldError(f, f"{where}.health_check_path", "nothing here on a network load balancer: its health checks "
                         "are TCP connections, with no path", tg["health_check_path"])
    attributes = _only_keys(tg.get("attributes", {}), f, f"{where}.attributes",
                            ("slow_start", "deregistration_delay", "connection_termination"),
                            "{deregistration_delay: SECONDS, connection_termination: BOOL}")
    if not isinstance(attributes.get("connection_termination", False), bool):
        raise WorldError(f, f"{where}.attributes.connection_termination", "true or false", attributes["connection_termination"])
    if attributes.get("slow_start", 0) != 0:
        raise WorldError(f, f"{where}.attributes.slow_start", "0 or nothing on a network load balancer: slow start "
                         "is an ALB's", attributes["slow_start"])
    if not (isinstance(attributes.get("deregistration_delay", 300), int) and 0 <= attributes.get("deregistration_delay", 300) <= 3600):
        raise WorldError(f, f"{where}.attributes.deregistration_delay", "whole seconds from 0 to 3600", attributes.get("deregistration_delay"))
    validate_targets(f, where, tg)
    if "health_check" in tg:
        check = tg["health_check"]
        if not isinstance(check, dict):
            raise WorldError(f, f"{where}.health_check", f"a mapping of {', '.join(HEALTH_CHECK_FIELDS)}", check)
        for key in ("path", "matcher"):
            if key in check:
                raise WorldError(f, f"{where}.health_check.{key}", f"no {key} on a network load balancer: its health "
                                 "check opens a TCP connection to the target and reads no HTTP answer", check[key])
        if check.get("protocol", "TCP") != "TCP":
            raise WorldError(f, f"{where}.health_check.protocol", "TCP on a network load balancer (the default)", check["protocol"])
        validate_health_check(f, f"{where}.health_check", {k: v for k, v in check.items() if k != "protocol"}, network=True)
    metrics = _require(tg, "metrics", f, where, "a metrics mapping (new_flows_per_minute, ...)")
    if not isinstance(metrics, dict):
        raise WorldError(f, f"{where}.metrics", "a mapping of new_flows_per_minute, active_flows, bytes_per_minute, "
                         "target_resets_per_minute", metrics)
    for key in HTTP_ONLY_GROUP_METRICS:
        if key in metrics:
            raise WorldError(f, f"{where}.metrics.{key}", f"nothing here: {NOT_ON_NLB}", metrics[key])
    _only_keys(metrics, f, f"{where}.metrics", NLB_GROUP_LEVELS, "a mapping of network load balancer levels")
    _require(metrics, "new_flows_per_minute", f, f"{where}.metrics", "a level such as {base: 900} (NewFlowCount)")
    for key in NLB_GROUP_LEVELS:
        if key in metrics:
            validate_level(f, f"{where}.metrics.{key}", metrics[key])


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def validate_level(f: Path, field: str, spec: Any) -> None:
    """A level: a number, or {base, burst, noise, ramp: {from, to, value}}."""
    expected = "a level: a number or {base, burst, noise, ramp: {from, to, value}}"
    if _is_number(spec):
        return
    _only_keys(spec, f, field, ("base", "burst", "noise", "ramp"), expected)
    for key in ("base", "burst", "noise"):
        if key in spec and not _is_number(spec[key]):
            raise WorldError(f, f"{field}.{key}", "a number", spec[key])
    if "noise" in spec and spec["noise"] < 0:
        raise WorldError(f, f"{field}.noise", "a relative jitter of 0 or more, such as 0.05", spec["noise"])
    if "ramp" in spec:
        ramp = spec["ramp"]
        for key in ("from", "to", "value"):
            _require(ramp, key, f, f"{field}.ramp", "{from: OFFSET, to: OFFSET, value: X}")
        if not _is_number(ramp["value"]):
            raise WorldError(f, f"{field}.ramp.value", "a number", ramp["value"])
        start = parse_offset(ramp["from"], f, f"{field}.ramp.from")
        end = parse_offset(ramp["to"], f, f"{field}.ramp.to")
        if end < start:
            raise WorldError(f, f"{field}.ramp.to", f"an offset at or after ramp.from ({ramp['from']})", ramp["to"])


def validate_metric_levels(f: Path, where: str, metrics: dict[str, Any]) -> None:
    for key in ("requests_per_minute", "http_5xx_per_minute", "http_4xx_per_minute"):
        if key in metrics:
            validate_level(f, f"{where}.{key}", metrics[key])
    elb = metrics.get("elb_5xx_per_minute")
    if elb is None:
        return
    if not isinstance(elb, dict):
        raise WorldError(f, f"{where}.elb_5xx_per_minute", "a mapping of 502, 503 or 504 to a level", elb)
    for code, level in elb.items():
        if _elb_code(code) not in ELB_5XX_CODES:
            raise WorldError(f, f"{where}.elb_5xx_per_minute.{code}", "502, 503 or 504", code)
        validate_level(f, f"{where}.elb_5xx_per_minute.{code}", level)


def _elb_code(code: Any) -> int | None:
    try:
        return int(code)
    except (TypeError, ValueError):
        return None


def validate_targets(f: Path, where: str, tg: dict[str, Any]) -> None:
    """A target group's `targets`: their health and health schedules."""
    for j, target in enumerate(tg.get("targets", [])):
        if target.get("health", "healthy") not in TARGET_STATES:
            raise WorldError(f, f"{where}.targets[{j}].health", TARGET_STATES_TEXT, target.get("health"))
        validate_health_schedule(f, f"{where}.targets[{j}].health_schedule", target.get("health_schedule", []))


def validate_health_schedule(f: Path, field: str, schedule: Any) -> None:
    """`[{at, state, reason, description}]`: a target's health over time."""
    if not isinstance(schedule, list):
        raise WorldError(f, field, "a list of {at, state, reason, description}", schedule)
    for k, entry in enumerate(schedule):
        where = f"{field}[{k}]"
        parse_offset(_require(entry, "at", f, where, "an offset such as -8m"), f, f"{where}.at")
        if _require(entry, "state", f, where, TARGET_STATES_TEXT) not in TARGET_STATES:
            raise WorldError(f, f"{where}.state", TARGET_STATES_TEXT, entry["state"])
        for key in ("reason", "description"):
            if key in entry and not isinstance(entry[key], str):
                raise WorldError(f, f"{where}.{key}", "a string", entry[key])


# health_check key -> (what it must be, check)
HEALTH_CHECK_FIELDS: dict[str, tuple[str, Callable[[Any], bool]]] = {
    "path": ("a path starting with /", lambda v: isinstance(v, str) and v.startswith("/")),
    "protocol": ("HTTP or HTTPS", lambda v: v in ("HTTP", "HTTPS")),
    "port": ("a port number or traffic-port", lambda v: v == "traffic-port" or (isinstance(v, int) and 1 <= v <= 65535)),
    "interval": ("whole seconds from 5 to 300", lambda v: isinstance(v, int) and 5 <= v <= 300),
    "timeout": ("whole seconds from 2 to 120", lambda v: isinstance(v, int) and 2 <= v <= 120),
    "healthy_threshold": ("a count from 2 to 10", lambda v: isinstance(v, int) and 2 <= v <= 10),
    "unhealthy_threshold": ("a count from 2 to 10", lambda v: isinstance(v, int) and 2 <= v <= 10),
    "matcher": ("HTTP codes such as 200, 200-399 or 200,202", lambda v: isinstance(v, (str, int)) and re.fullmatch(r"\d{3}(-\d{3})?(,\d{3}(-\d{3})?)*", str(v)) is not None),
}


def validate_health_check(f: Path, field: str, spec: Any, network: bool = False) -> None:
    if not isinstance(spec, dict):
        raise WorldError(f, field, f"a mapping of {', '.join(HEALTH_CHECK_FIELDS)}", spec)
    for key, value in spec.items():
        if key not in HEALTH_CHECK_FIELDS:
            raise WorldError(f, f"{field}.{key}", f"one of {', '.join(HEALTH_CHECK_FIELDS)}", value)
        expected, check = HEALTH_CHECK_FIELDS[key]
        if not check(value):
            raise WorldError(f, f"{field}.{key}", expected, value)
    # The load balancer refuses a timeout that is not shorter than the interval
    # (defaults 5 s and 30 s for an ALB's HTTP check, 10 s and 30 s for an NLB's TCP check).
    timeout = spec.get("timeout", 10 if network else 5)
    if timeout >= spec.get("interval", 30):
        raise WorldError(f, f"{field}.timeout", f"fewer seconds than the interval ({spec.get('interval', 30)})", timeout)


def alarm_namespace(alarm: dict[str, Any], lb_type: str = "application") -> str:
    """The alarm's namespace: as given, else its load balancer's (AWS/ApplicationELB or AWS/NetworkELB)."""
    return alarm.get("namespace", NAMESPACES.get(lb_type, ALB_NAMESPACE))


def validate_alarm_metric(f: Path, alarm: dict[str, Any], metric: Any = None, field: str = "alarm.metric",
                          lb_type: str = "application") -> None:
    """A load balancer alarm watches a metric the world publishes, in the
    namespace of the world's load balancer (`lb_type`), at a level it is
    published at; an alarm in another namespace names its own dimensions.
    `metric` is one query's metric of a metric-math alarm (`field` names it);
    else the alarm's own."""
    namespace = alarm_namespace(alarm, lb_type)
    if not isinstance(namespace, str) or not namespace:
        raise WorldError(f, "alarm.namespace", "a CloudWatch namespace such as AWS/ApplicationELB", namespace)
    dimensions = alarm.get("dimensions")
    if dimensions is not None and not (isinstance(dimensions, dict) and dimensions):
        raise WorldError(f, "alarm.dimensions", "a mapping of dimension name to value", dimensions)
    own = NAMESPACES.get(lb_type, ALB_NAMESPACE)
    if namespace in NAMESPACES.values() and namespace != own:
        raise WorldError(f, "alarm.namespace", f"{own} (or nothing): the world's load balancer is of type {lb_type} "
                         f"and publishes nothing in {namespace}", namespace)
    if namespace != own:
        if dimensions is None:
            raise WorldError(f, "alarm.dimensions", f"the alarm's dimensions (namespace {namespace} has no load balancer dimension)")
        return
    metric = alarm["metric"] if metric is None else metric
    per_group, per_load_balancer = PUBLISHED[lb_type]
    published = per_group if alarm.get("target_group") else per_load_balancer
    if metric not in published:
        scope = "per target group (alarm.target_group is set)" if alarm.get("target_group") else "per load balancer (no alarm.target_group)"
        what = "an ALB" if lb_type == "application" else "an NLB"
        raise WorldError(f, field, f"{what} metric published {scope}: {', '.join(published)}", metric)


POD_GROUP_KEYS = ("namespace", "container", "names", "cpu_cores", "throttled_share", "cpu_waiting_share", "memory_mib",
                  "cpu_limit_cores", "per_pod")
PER_POD_KEYS = ("cpu_cores", "throttled_share", "cpu_waiting_share", "memory_mib", "created", "deleted", "restarts")


def validate_pod_groups(f: Path, section: str, spec: Any) -> None:
    """The `pods` of a prometheus or container_insights section."""
    pods = _require(spec, "pods", f, section, "a list of pod groups")
    if not isinstance(pods, list):
        raise WorldError(f, f"{section}.pods", "a list of pod groups", pods)
    for i, group in enumerate(pods):
        where = f"{section}.pods[{i}]"
        _require(group, "namespace", f, where, "the namespace")
        _only_keys(group, f, where, POD_GROUP_KEYS, "a pod group")
        names = _require(group, "names", f, where, "the pod names")
        if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
            raise WorldError(f, f"{where}.names", "a non-empty list of pod names", names)
        validate_level(f, f"{where}.cpu_cores", _require(group, "cpu_cores", f, where, "a level such as {base: 0.1, burst: 0.9}"))
        for key in ("throttled_share", "cpu_waiting_share", "memory_mib"):
            if key in group:
                validate_level(f, f"{where}.{key}", group[key])
        if "cpu_limit_cores" in group and not (_is_number(group["cpu_limit_cores"]) and group["cpu_limit_cores"] > 0):
            raise WorldError(f, f"{where}.cpu_limit_cores", "a positive number of cores", group["cpu_limit_cores"])
        per_pod = group.get("per_pod") or {}
        if not isinstance(per_pod, dict):
            raise WorldError(f, f"{where}.per_pod", "a mapping of pod name to overrides", per_pod)
        for name, overrides in per_pod.items():
            validate_per_pod(f, f"{where}.per_pod.{name}", name, names, overrides)


def validate_per_pod(f: Path, field: str, name: str, names: list[str], overrides: Any) -> None:
    if name not in names:
        raise WorldError(f, field, f"a pod listed in names ({', '.join(names)})", name)
    if not isinstance(overrides, dict):
        raise WorldError(f, field, f"a mapping of {', '.join(PER_POD_KEYS)}", overrides)
    for key, value in overrides.items():
        if key not in PER_POD_KEYS:
            raise WorldError(f, f"{field}.{key}", f"one of {', '.join(PER_POD_KEYS)}", value)
        if key in ("cpu_cores", "throttled_share", "cpu_waiting_share", "memory_mib"):
            validate_level(f, f"{field}.{key}", value)
    created = parse_offset(overrides["created"], f, f"{field}.created") if "created" in overrides else None
    deleted = parse_offset(overrides["deleted"], f, f"{field}.deleted") if "deleted" in overrides else None
    if created is not None and deleted is not None and deleted <= created:
        raise WorldError(f, f"{field}.deleted", f"an offset after created ({overrides['created']})", overrides["deleted"])
    restarts = overrides.get("restarts", [])
    if not isinstance(restarts, list):
        raise WorldError(f, f"{field}.restarts", "a list of offsets such as [-20m, -7m]", restarts)
    for k, at in enumerate(restarts):
        offset = parse_offset(at, f, f"{field}.restarts[{k}]")
        if (created is not None and offset < created) or (deleted is not None and offset > deleted):
            raise WorldError(f, f"{field}.restarts[{k}]", "an offset while the pod exists (between created and deleted)", at)


def validate_container_insights(f: Path, spec: Any) -> None:
    if not isinstance(spec, dict):
        raise WorldError(f, "container_insights", "a mapping {span, pods}", spec)
    for key in spec:
        if key not in ("span", "pods"):
            raise WorldError(f, f"container_insights.{key}", "span or pods (Container Insights is published every minute to CloudWatch: no service, amp or step)", spec[key])
    if "span" in spec:
        parse_duration(spec["span"], f, "container_insights.span")
    validate_pod_groups(f, "container_insights", spec)


# --- schedule -------------------------------------------------------------------

def bursts(world: World) -> list[tuple[datetime, datetime]]:
    """The burst windows, oldest first. Bursts are placed backwards from `last_start`
    every `every` (with a deterministic jitter) down to `from`."""
    f = world.file
    schedule = world.spec.get("schedule") or {}
    spec = schedule.get("bursts")
    if spec is None:
        return []
    if isinstance(spec, list):
        windows = []
        for i, window in enumerate(spec):
            start = world.at(_require(window, "start", f, f"schedule.bursts[{i}]", "an offset"), f"schedule.bursts[{i}].start")
            windows.append((start, start + parse_duration(_require(window, "duration", f, f"schedule.bursts[{i}]", "a duration"), f, f"schedule.bursts[{i}].duration")))
        return sorted(windows)
    every = parse_duration(_require(spec, "every", f, "schedule.bursts", "a duration such as 33m"), f, "schedule.bursts.every")
    duration = parse_duration(_require(spec, "duration", f, "schedule.bursts", "a duration such as 8m"), f, "schedule.bursts.duration")
    first = world.at(_require(spec, "from", f, "schedule.bursts", "an offset such as -5h"), "schedule.bursts.from")
    last = world.at(spec.get("last_start", "-3m"), "schedule.bursts.last_start")
    jitter = parse_offset(spec.get("jitter", "0"), f, "schedule.bursts.jitter")
    rng = random.Random(world.spec.get("seed", 1))
    windows = []
    start = last
    while start >= first:
        windows.append((start, start + duration))
        shift = timedelta(minutes=rng.randint(-int(jitter.total_seconds() // 60), int(jitter.total_seconds() // 60))) if jitter else timedelta(0)
        start = start - every + shift
    return sorted(windows)


def in_burst(windows: list[tuple[datetime, datetime]], t: datetime) -> bool:
    return any(a <= t < b for a, b in windows)


# --- alarm history ----------------------------------------------------------------

# --- organisation and composite alarm --------------------------------------------

ROLE_NAME = re.compile(r"^[\w+=,.@-]{1,64}$")
DEFAULT_MEMBER_ROLE = "AlarmTriageReader"


def organisation(world: World) -> dict[str, Any] | None:
    """The world's `organisation` section with its defaults, or None: the
    world's `account` is then a member account and the function runs in
    `central_account`, reading the member through `member_role`."""
    f, spec = world.file, world.spec.get("organisation")
    if spec is None:
        return None
    _only_keys(spec, f, "organisation", ("central_account", "member_role"),
               "a mapping {central_account, member_role: {name, present}}")
    central = str(_require(spec, "central_account", f, "organisation", "the central account (12 digits) the function runs in"))
    if not re.fullmatch(r"\d{12}", central):
        raise WorldError(f, "organisation.central_account", "a 12-digit AWS account id", central)
    if central == str(world.spec["account"]):
        raise WorldError(f, "organisation.central_account", f"another account than the world's own ({world.spec['account']}), "
                         "which is the member account", central)
    role = _only_keys(spec.get("member_role") or {}, f, "organisation.member_role", ("name", "present"),
                      "a mapping {name, present}")
    name = str(role.get("name", DEFAULT_MEMBER_ROLE))
    if not ROLE_NAME.match(name):
        raise WorldError(f, "organisation.member_role.name", "an IAM role name (1-64 of letters, digits and +=,.@_-)", name)
    present = role.get("present", True)
    if not isinstance(present, bool):
        raise WorldError(f, "organisation.member_role.present", "true or false", present)
    return {"central_account": central, "member_account": str(world.spec["account"]),
            "member_role": {"name": name, "present": present}}


def composite_alarm(world: World) -> dict[str, Any] | None:
    """The `composite_alarm` section: a composite alarm whose rule is
    ALARM("<the world's alarm>"), or None."""
    f, spec = world.file, world.spec.get("composite_alarm")
    if spec is None:
        return None
    _only_keys(spec, f, "composite_alarm", ("name", "description"), "a mapping {name, description}")
    name = str(_require(spec, "name", f, "composite_alarm", "the composite alarm's name"))
    if not 1 <= len(name) <= 255 or name == world.spec["alarm"]["name"]:
        raise WorldError(f, "composite_alarm.name", "1-255 characters, not the name of the world's alarm", name)
    child = world.spec["alarm"]["name"]
    return {"name": name, "description": str(spec.get("description", "")), "rule": f'ALARM("{child}")', "child": child}


def composite_state(child_state: str) -> str:
    """The state of a composite whose rule is ALARM(child): ALARM while the
    child is in ALARM, OK otherwise (the rule is then FALSE)."""
    return "ALARM" if child_state == "ALARM" else "OK"


def composite_history(world: World) -> list[dict[str, Any]]:
    """The composite's past state changes, following the child's history:
    one item each time the child's change changes the rule's value."""
    items = []
    state = "INSUFFICIENT_DATA"  # a new composite, as on AWS
    for item in history(world):
        new = composite_state(item["new_state"])
        if new != state:
            items.append({"timestamp": item["timestamp"], "old_state": state, "new_state": new,
                          "child_state": item["new_state"], "alarm_type": "CompositeAlarm"})
            state = new
    return items


def history(world: World) -> list[dict[str, Any]]:
    """Past state changes of the alarm, oldest first, ending in the state the
    delivered transition starts from."""
    f, alarm = world.file, world.spec["alarm"]
    spec = alarm.get("history", [])
    items: list[dict[str, Any]] = []
    if isinstance(spec, dict) and "from_schedule" in spec:
        options = spec["from_schedule"] or {}
        raise_after = parse_offset(options.get("alarm_after", "2m"), f, "alarm.history.from_schedule.alarm_after")
        clear_after = parse_offset(options.get("ok_after", "1m"), f, "alarm.history.from_schedule.ok_after")
        windows = bursts(world)
        if alarm["deliver"]["to"] == "ALARM" and windows:
            # The newest burst raises the alarm being delivered, not a past change.
            windows = windows[:-1]
        for start, end in windows:
            if start + raise_after >= world.now:
                continue
            items.append({"timestamp": start + raise_after, "old_state": "OK", "new_state": "ALARM"})
            if end + clear_after < world.now:
                items.append({"timestamp": end + clear_after, "old_state": "ALARM", "new_state": "OK"})
    elif isinstance(spec, list):
        for i, item in enumerate(spec):
            where = f"alarm.history[{i}]"
            items.append(
                {
                    "timestamp": world.at(_require(item, "at", f, where, "an offset"), f"{where}.at"),
                    "old_state": _require(item, "from", f, where, "OK, ALARM or INSUFFICIENT_DATA"),
                    "new_state": _require(item, "to", f, where, "OK, ALARM or INSUFFICIENT_DATA"),
                }
            )
    else:
        raise WorldError(f, "alarm.history", "a list of {at, from, to} or {from_schedule: {...}}", spec)
    items.sort(key=lambda i: i["timestamp"])
    expected = alarm["deliver"]["from"]
    last = items[-1]["new_state"] if items else None
    if last is not None and last != expected:
        raise WorldError(f, "alarm.history", f"to end in {expected} (the state alarm.deliver starts from)", last)
    for item in items:
        item["timestamp"] = item["timestamp"].isoformat()
    return items


# --- CloudWatch metrics -------------------------------------------------------------

def _level(spec: Any, burst: bool, minute_index: int, rng: random.Random, at: timedelta | None = None) -> float:
    """A level's value at one moment (`at`, relative to now): the base, or the
    ramped base, or the burst value inside a burst, times the noise."""
    if isinstance(spec, (int, float)):
        return float(spec)
    base = float(spec.get("base", 0))
    if "ramp" in spec and at is not None:
        base = _ramped(base, spec["ramp"], at)
    value = float(spec.get("burst", base)) if burst else base
    noise = float(spec.get("noise", 0))
    if noise:
        value *= max(0.0, 1 + rng.uniform(-noise, noise))
    return value


@lru_cache(maxsize=None)
def _offset_seconds(value: str) -> float:
    """An offset already validated (a ramp's from or to), in seconds."""
    return parse_offset(value, "world.yaml", "ramp").total_seconds()


def _ramped(base: float, ramp: dict[str, Any], at: timedelta) -> float:
    """base before ramp.from, ramp.value after ramp.to, a straight line between."""
    start, end, value = _offset_seconds(str(ramp["from"])), _offset_seconds(str(ramp["to"])), float(ramp["value"])
    x = at.total_seconds()
    if x < start:
        return base
    if x >= end:
        return value
    return base + (value - base) * (x - start) / (end - start)


def target_group_minutes(world: World, tg: dict[str, Any], minutes: int) -> list[dict[str, Any]]:
    """Per-minute figures for one target group, oldest first: request count, a
    latency histogram (values, counts), target 5xx and 4xx counts, and the 5xx
    the load balancer itself answered for requests routed to the group."""
    rng = random.Random(f"{world.spec.get('seed', 1)}/{tg['name']}")
    # The levels added later draw from their own generator, so worlds that do
    # not use them keep the numbers they always had.
    more = random.Random(f"{world.spec.get('seed', 1)}/{tg['name']}/codes")
    windows = bursts(world) if tg.get("bursts", True) else []
    metrics = tg["metrics"]
    out = []
    for i in range(minutes, 0, -1):
        t = world.now - timedelta(minutes=i)
        at = t - world.now
        burst = in_burst(windows, t)
        requests = int(round(_level(metrics["requests_per_minute"], burst, i, rng, at)))
        phase = "burst" if burst and "burst" in metrics["latency"] else "base"
        buckets = metrics["latency"][phase]
        values, counts = [], []
        assigned = 0
        for seconds, share in buckets:
            count = int(math.floor(requests * float(share)))
            if count > 0:
                values.append(float(seconds))
                counts.append(float(count))
                assigned += count
        if requests > assigned:
            if values:
                counts[0] += requests - assigned
            else:
                values.append(float(buckets[0][0]))
                counts.append(float(requests - assigned))
        slow = metrics.get("slow_requests")
        if slow:
            for j, event in enumerate(slow):
                slow_at = world.at(event["at"], f"metrics.slow_requests[{j}].at")
                if slow_at == t:
                    values.append(float(event["seconds"]))
                    counts.append(float(event.get("count", 1)))
                    requests += int(event.get("count", 1))
        errors = int(round(_level(metrics.get("http_5xx_per_minute", 0), burst, i, rng, at)))
        errors_4xx = int(round(_level(metrics.get("http_4xx_per_minute", 0), burst, i, more, at)))
        elb_levels = {_elb_code(code): level for code, level in (metrics.get("elb_5xx_per_minute") or {}).items()}
        elb = {code: int(round(_level(elb_levels.get(code, 0), burst, i, more, at))) for code in ELB_5XX_CODES}
        out.append({"timestamp": t, "requests": requests, "values": values, "counts": counts, "errors": errors,
                    "errors_4xx": errors_4xx, "elb_5xx": elb})
    return out


def rejected_connection_minutes(world: World, minutes: int) -> list[tuple[datetime, int]]:
    """The load balancer's RejectedConnectionCount per minute, oldest first."""
    spec = world.spec["load_balancer"].get("rejected_connections_per_minute", 0)
    rng = random.Random(f"{world.spec.get('seed', 1)}/{world.spec['load_balancer']['name']}/rejected")
    windows = bursts(world)
    out = []
    for i in range(minutes, 0, -1):
        t = world.now - timedelta(minutes=i)
        out.append((t, int(round(_level(spec, in_burst(windows, t), i, rng, t - world.now)))))
    return out


def flow_minutes(world: World, tg: dict[str, Any], minutes: int) -> list[dict[str, Any]]:
    """Per-minute figures for one target group of a network load balancer,
    oldest first: new flows, the average of concurrent flows, bytes processed
    and the TCP resets the targets sent. Without their own levels, active
    flows follow from new flows (each lasting DEFAULT_FLOW_SECONDS) and bytes
    from new flows (DEFAULT_BYTES_PER_FLOW each)."""
    rng = random.Random(f"{world.spec.get('seed', 1)}/{tg['name']}/flows")
    windows = bursts(world) if tg.get("bursts", True) else []
    metrics = tg["metrics"]
    out = []
    for i in range(minutes, 0, -1):
        t = world.now - timedelta(minutes=i)
        at = t - world.now
        burst = in_burst(windows, t)
        new = _level(metrics["new_flows_per_minute"], burst, i, rng, at)
        active = (_level(metrics["active_flows"], burst, i, rng, at) if "active_flows" in metrics
                  else new * DEFAULT_FLOW_SECONDS / 60)
        processed = (_level(metrics["bytes_per_minute"], burst, i, rng, at) if "bytes_per_minute" in metrics
                     else new * DEFAULT_BYTES_PER_FLOW)
        resets = _level(metrics.get("target_resets_per_minute", 0), burst, i, rng, at)
        out.append({"timestamp": t, "new_flows": int(round(new)), "active_flows": round(active, 1),
                    "bytes": int(round(processed)), "target_resets": int(round(resets))})
    return out


def nlb_load_balancer_minutes(world: World, minutes: int) -> list[dict[str, Any]]:
    """A network load balancer's own figures per minute, oldest first: the
    resets it sent itself (TCP_ELB_Reset_Count), those clients sent
    (TCP_Client_Reset_Count) and its PortAllocationErrorCount, each 0 unless
    the world gives a level."""
    lb = world.spec["load_balancer"]
    rng = random.Random(f"{world.spec.get('seed', 1)}/{lb['name']}/nlb")
    windows = bursts(world)
    out = []
    for i in range(minutes, 0, -1):
        t = world.now - timedelta(minutes=i)
        burst = in_burst(windows, t)
        figures = {metric: int(round(_level(lb.get(key, 0), burst, i, rng, t - world.now)))
                   for key, metric in NLB_LOAD_BALANCER_LEVELS.items()}
        out.append({"timestamp": t, **figures})
    return out


# --- target health -------------------------------------------------------------------

def target_health(world: World, target: dict[str, Any], t: datetime) -> tuple[str, str | None, str | None]:
    """A target's (state, reason, description) at `t`: the last health_schedule
    entry at or before `t`, or its `health` before the first entry."""
    state = (target.get("health", "healthy"), target.get("reason"), target.get("description"))
    entries = sorted(target.get("health_schedule") or [], key=lambda e: parse_offset(e["at"], world.file, "health_schedule.at"))
    for entry in entries:
        if world.at(entry["at"], "health_schedule.at") > t:
            break
        state = (entry["state"], entry.get("reason"), entry.get("description"))
    return state


def host_counts(world: World, tg: dict[str, Any]) -> Callable[[datetime], tuple[int, int]]:
    """(HealthyHostCount, UnHealthyHostCount) of a target group at a moment:
    the targets healthy and unhealthy then (initial, draining, unused and
    unavailable targets count as neither)."""
    targets = tg.get("targets", [])

    def counts(t: datetime) -> tuple[int, int]:
        states = [target_health(world, target, t)[0] for target in targets]
        return states.count("healthy"), states.count("unhealthy")

    return counts


def tg_dimension(arn: str) -> str:
    """targetgroup/<name>/<id>, the TargetGroup dimension value."""
    return arn.split(":", 5)[5]


def lb_dimension(arn: str) -> str:
    """app/<name>/<id> (net/<name>/<id> for a network load balancer), the LoadBalancer dimension value."""
    return arn.split(":loadbalancer/", 1)[1]


# --- pods ---------------------------------------------------------------------------

@dataclass
class PodSample:
    """One sample of one pod's container: its usage levels at `t`, how long the
    container has run since the previous sample (`elapsed`, seconds), whether
    it is a new container since then (`fresh`: created or restarted, so its
    counters start again from 0) and how many restarts it has had so far."""

    t: datetime
    cores: float
    throttled_share: float
    memory_mib: float
    elapsed: float
    fresh: bool
    restarts: int
    cpu_waiting_share: float = 0.0


def _override(group_level: Any, pod_level: Any) -> Any:
    """A per-pod level: merged into the group's when both are mappings, else it wins."""
    if pod_level is None:
        return group_level
    if isinstance(group_level, dict) and isinstance(pod_level, dict):
        return {**group_level, **pod_level}
    return pod_level


def pod_samples(world: World, group: dict[str, Any], name: str, times: list[datetime], step: int,
                rng: random.Random) -> Iterator[PodSample]:
    """The samples of one pod at `times` (spaced `step` seconds), skipping the
    moments it did not exist (before per_pod.created, after per_pod.deleted).
    The generator is drawn from at every time, whether the pod exists or not."""
    per_pod = (group.get("per_pod") or {}).get(name, {})
    cpu = _override(group["cpu_cores"], per_pod.get("cpu_cores"))
    throttled = _override(group.get("throttled_share", 0), per_pod.get("throttled_share"))
    memory = _override(group.get("memory_mib", {"base": 256}), per_pod.get("memory_mib"))
    waiting = _override(group.get("cpu_waiting_share", 0), per_pod.get("cpu_waiting_share"))
    created = world.at(per_pod["created"], "per_pod.created") if "created" in per_pod else None
    deleted = world.at(per_pod["deleted"], "per_pod.deleted") if "deleted" in per_pod else None
    restarts = sorted(world.at(at, "per_pod.restarts") for at in per_pod.get("restarts", []))
    windows = bursts(world)
    for k, t in enumerate(times):
        burst = in_burst(windows, t)
        at = t - world.now
        cores = _level(cpu, burst, k, rng, at)
        share = _level(throttled, burst, k, rng, at)
        mib = _level(memory, burst, k, rng, at)
        # drawn from its own generator, so worlds written before it keep their other series
        wait = _level(waiting, burst, k, random.Random(f"{name}/waiting/{k}"), at) if waiting else 0.0
        if (created is not None and t < created) or (deleted is not None and t > deleted):
            continue
        began = [b for b in [created, *restarts] if b is not None and b <= t]
        container_start = max(began) if began else None
        previous = t - timedelta(seconds=step)
        fresh = container_start is not None and container_start > previous
        elapsed = (t - container_start).total_seconds() if fresh else float(step)
        yield PodSample(t, cores, share, mib, elapsed, fresh, sum(1 for r in restarts if r <= t), wait)


# --- Prometheus ---------------------------------------------------------------------

def openmetrics(world: World) -> str:
    """OpenMetrics text for the world's pods (counters integrate the usage
    profile and start again from 0 in a new container), ready for
    `promtool tsdb create-blocks-from openmetrics`."""
    spec = world.spec.get("prometheus")
    if not spec:
        return ""
    f = world.file
    step = int(parse_duration(spec.get("step", "30s"), f, "prometheus.step").total_seconds())
    span = parse_duration(spec.get("span", "6h"), f, "prometheus.span")
    families: dict[str, list[str]] = {
        "container_cpu_usage_seconds": [],
        "container_cpu_cfs_periods": [],
        "container_cpu_cfs_throttled_periods": [],
        "container_memory_working_set_bytes": [],
    }
    # A cluster whose kubelets report pressure stall information (PSI) exports it for every container.
    psi = any("cpu_waiting_share" in g or any("cpu_waiting_share" in o for o in (g.get("per_pod") or {}).values())
              for g in spec.get("pods") or [])
    if psi:
        families["container_pressure_cpu_waiting_seconds"] = []
    start = world.now - span
    steps = int(span.total_seconds() // step)
    times = [start + timedelta(seconds=k * step) for k in range(steps + 1)]
    for i, group in enumerate(_require(spec, "pods", f, "prometheus", "a list of pod groups")):
        where = f"prometheus.pods[{i}]"
        names = _require(group, "names", f, where, "the pod names")
        namespace = _require(group, "namespace", f, where, "the namespace")
        container = group.get("container", "app")
        for name in names:
            rng = random.Random(f"{world.spec.get('seed', 1)}/{name}")
            used = periods = throttled_periods = waited = 0.0
            labels = f'namespace="{namespace}",pod="{name}",container="{container}"'
            for sample in pod_samples(world, group, name, times, step, rng):
                if sample.fresh:
                    used = periods = throttled_periods = waited = 0.0  # a new container: cAdvisor's counters start over
                used += sample.cores * sample.elapsed
                periods += sample.elapsed * 10  # 100 ms CFS periods
                throttled_periods += sample.elapsed * 10 * sample.throttled_share
                waited += sample.elapsed * sample.cpu_waiting_share
                ts = int(sample.t.timestamp())
                if psi:
                    families["container_pressure_cpu_waiting_seconds"].append(
                        f"container_pressure_cpu_waiting_seconds_total{{{labels}}} {waited:.4f} {ts}")
                families["container_cpu_usage_seconds"].append(f"container_cpu_usage_seconds_total{{{labels}}} {used:.4f} {ts}")
                families["container_cpu_cfs_periods"].append(f"container_cpu_cfs_periods_total{{{labels}}} {periods:.0f} {ts}")
                families["container_cpu_cfs_throttled_periods"].append(f"container_cpu_cfs_throttled_periods_total{{{labels}}} {throttled_periods:.0f} {ts}")
                families["container_memory_working_set_bytes"].append(
                    f"container_memory_working_set_bytes{{{labels}}} {sample.memory_mib * 1048576:.0f} {ts}"
                )
    lines = []
    for family, samples in families.items():
        kind = "gauge" if family.endswith("_bytes") else "counter"
        lines.append(f"# TYPE {family} {kind}")
        lines.extend(samples)
    lines.append("# EOF")
    return "\n".join(lines) + "\n"


# --- Container Insights ---------------------------------------------------------------

CONTAINER_INSIGHTS_NAMESPACE = "ContainerInsights"
REPLICA_SET_POD = re.compile(r"^(?P<owner>.+)-[a-z0-9]{5,10}-[a-z0-9]{5}$")
STATEFUL_SET_POD = re.compile(r"^(?P<owner>.+)-\d+$")


def pod_owner(name: str) -> str:
    """Container Insights' PodName: the workload a pod belongs to
    (recommender-5f9c8d7b64-j6pxh -> recommender, kafka-2 -> kafka), or the pod's own name."""
    for pattern in (REPLICA_SET_POD, STATEFUL_SET_POD):
        match = pattern.match(name)
        if match:
            return match.group("owner")
    return name


def container_insights_datums(world: World) -> list[dict[str, Any]]:
    """PutMetricData datums for the container_insights section: per pod and
    minute, dimensions ClusterName, FullPodName, Namespace, PodName."""
    spec = world.spec.get("container_insights")
    if not spec:
        return []
    f = world.file
    span = parse_duration(spec.get("span", world.spec.get("metrics_span", "6h")), f, "container_insights.span")
    minutes = int(span.total_seconds() // 60)
    times = [world.now - timedelta(minutes=i) for i in range(minutes, 0, -1)]
    cluster = world.spec["cluster"]["name"]
    datums: list[dict[str, Any]] = []
    for group in spec["pods"]:
        limit = group.get("cpu_limit_cores")
        for name in group["names"]:
            rng = random.Random(f"{world.spec.get('seed', 1)}/container-insights/{name}")
            dims = [{"Name": "ClusterName", "Value": cluster}, {"Name": "FullPodName", "Value": name},
                    {"Name": "Namespace", "Value": group["namespace"]}, {"Name": "PodName", "Value": pod_owner(name)}]
            for sample in pod_samples(world, group, name, times, 60, rng):
                datums.extend(_pod_datums(dims, sample, limit))
    return datums


def _pod_datums(dims: list[dict[str, str]], sample: PodSample, limit: float | None) -> list[dict[str, Any]]:
    def datum(metric: str, value: float, unit: str) -> dict[str, Any]:
        return {"MetricName": metric, "Dimensions": dims, "Timestamp": sample.t, "Value": value, "Unit": unit}

    out = [datum("pod_cpu_usage_total", round(sample.cores * 1000, 3), "None")]
    if limit:
        out.append(datum("pod_cpu_utilization_over_pod_limit", round(sample.cores / float(limit) * 100, 3), "Percent"))
    out.append(datum("pod_memory_working_set", round(sample.memory_mib * 1048576), "Bytes"))
    out.append(datum("pod_number_of_container_restarts", sample.restarts, "Count"))
    return out


# --- security groups and CloudTrail changes --------------------------------------------

DEFAULT_SECURITY_GROUP = "k8s-alb"
SECURITY_GROUP_NAME = re.compile(r"^[\w .:/()#,@\[\]+=&;{}!$*-]{1,255}$")


def security_groups(world: World) -> list[dict[str, str]]:
    """The world's extra security groups `[{name, description}]` (in its VPC,
    beside the load balancer's default `k8s-alb`), validated."""
    f, spec = world.file, world.spec.get("security_groups")
    if spec is None:
        return []
    if not isinstance(spec, list):
        raise WorldError(f, "security_groups", "a list of {name, description}", spec)
    out: list[dict[str, str]] = []
    for i, group in enumerate(spec):
        where = f"security_groups[{i}]"
        _only_keys(group, f, where, ("name", "description"), "a mapping {name, description}")
        name = _require(group, "name", f, where, "the security group's name")
        if not isinstance(name, str) or name.startswith("sg-") or not SECURITY_GROUP_NAME.match(name):
            raise WorldError(f, f"{where}.name", "a security group name (1-255 characters, not starting with sg-)", name)
        if name == DEFAULT_SECURITY_GROUP or name in [g["name"] for g in out]:
            raise WorldError(f, f"{where}.name", f"a name no other group of the VPC has ({', '.join([DEFAULT_SECURITY_GROUP] + [g['name'] for g in out])})", name)
        description = group.get("description", name)
        if not isinstance(description, str) or not description or len(description) > 255:
            raise WorldError(f, f"{where}.description", "a description of 1-255 characters", description)
        out.append({"name": name, "description": description})
    return out


def security_group_names(world: World) -> list[str]:
    return [DEFAULT_SECURITY_GROUP] + [g["name"] for g in security_groups(world)]


def load_balancer_security_groups(world: World) -> list[str]:
    """The names of the groups on the load balancer: `load_balancer.security_groups`, else `k8s-alb`."""
    f, spec = world.file, world.spec["load_balancer"].get("security_groups")
    if spec is None:
        return [DEFAULT_SECURITY_GROUP]
    known = security_group_names(world)
    if not isinstance(spec, list) or not spec or len(spec) > 5:
        raise WorldError(f, "load_balancer.security_groups", "a list of 1 to 5 security group names", spec)
    for i, name in enumerate(spec):
        if name not in known:
            raise WorldError(f, f"load_balancer.security_groups[{i}]", f"the name of a security group of the world ({', '.join(known)})", name)
    if len(set(spec)) != len(spec):
        raise WorldError(f, "load_balancer.security_groups", "each group once", spec)
    return list(spec)


def listener_ports(world: World) -> list[int]:
    """The ports of the load balancer's listeners as stack.py creates them: an
    ALB's one HTTP listener on 80, an NLB's one per group (listener_port, else port)."""
    lb = world.spec["load_balancer"]
    if load_balancer_type(world) != "network":
        return [80]
    return [int(tg.get("listener_port", tg.get("port", 80))) for tg in lb["target_groups"]]


def cloudtrail_lag(world: World) -> timedelta:
    """`cloudtrail.lag`: how long after a call its event shows in the event history (default 0)."""
    f, spec = world.file, world.spec.get("cloudtrail")
    if spec is None:
        return timedelta(0)
    _only_keys(spec, f, "cloudtrail", ("lag",), "a mapping {lag: DURATION}")
    try:
        lag = parse_offset(spec.get("lag", 0), f, "cloudtrail.lag")
    except WorldError:
        lag = timedelta(-1)
    if lag < timedelta(0):
        raise WorldError(f, "cloudtrail.lag", "a duration of 0 or more, such as 5m", spec.get("lag"))
    return lag


CHANGE_KEYS = ("at", "event", "source", "target_group", "load_balancer", "listener", "security_group", "nodegroup",
               "resource", "by", "user_agent", "request", "response", "read_only")
CHANGE_RESOURCES = ("target_group", "load_balancer", "listener", "security_group", "nodegroup", "resource")
EVENT_NAME = re.compile(r"^[A-Z][A-Za-z0-9]{1,127}$")
EVENT_SOURCE = re.compile(r"^[a-z0-9][a-z0-9.-]*\.amazonaws\.com$")
PLACEHOLDER_RE = re.compile(r"\{\{\s*(?:(?P<kind>tg|listener|sg)\s*:\s*(?P<arg>[^}\s][^}]*?)|(?P<bare>lb|account))\s*\}\}")
ASSUMED_ROLE_ARN = re.compile(r"^arn:aws[a-z-]*:sts::(?P<account>\d{12}):assumed-role/(?P<role>[\w+=,.@-]{1,64})/(?P<session>[\w+=,.@-]{2,64})$")
IAM_USER_ARN = re.compile(r"^arn:aws[a-z-]*:iam::(?P<account>\d{12}):user/(?:[\w+=,.@/-]*/)?(?P<user>[\w+=,.@-]{1,64})$")
ROOT_ARN = re.compile(r"^arn:aws[a-z-]*:iam::(?P<account>\d{12}):root$")
SERVICE_PRINCIPAL = re.compile(r"^service:(?P<service>[a-z0-9][a-z0-9.-]*\.amazonaws\.com)$")
BY_EXPECTED = ("an assumed-role session ARN (arn:aws:sts::ACCOUNT:assumed-role/ROLE/SESSION), an IAM user ARN "
               "(arn:aws:iam::ACCOUNT:user/NAME), arn:aws:iam::ACCOUNT:root, controller (the AWS Load Balancer "
               "Controller's IRSA role) or service:NAME.amazonaws.com")
# What each kind of resource is in CloudTrail's event history, which service
# its calls go to, and which request parameter names it.
RESOURCE_TYPES = {
    "target_group": "AWS::ElasticLoadBalancingV2::TargetGroup",
    "load_balancer": "AWS::ElasticLoadBalancingV2::LoadBalancer",
    "listener": "AWS::ElasticLoadBalancingV2::Listener",
    "security_group": "AWS::EC2::SecurityGroup",
    "nodegroup": "AWS::EKS::Nodegroup",
}
RESOURCE_SOURCES = {
    "target_group": "elasticloadbalancing.amazonaws.com",
    "load_balancer": "elasticloadbalancing.amazonaws.com",
    "listener": "elasticloadbalancing.amazonaws.com",
    "security_group": "ec2.amazonaws.com",
    "nodegroup": "eks.amazonaws.com",
}
# A free-form resource's type prefix -> its service.
TYPE_SOURCES = {
    "AWS::ElasticLoadBalancingV2::": "elasticloadbalancing.amazonaws.com",
    "AWS::ElasticLoadBalancing::": "elasticloadbalancing.amazonaws.com",
    "AWS::EC2::": "ec2.amazonaws.com",
    "AWS::EKS::": "eks.amazonaws.com",
    "AWS::AutoScaling::": "autoscaling.amazonaws.com",
    "AWS::IAM::": "iam.amazonaws.com",
    "AWS::CloudWatch::": "monitoring.amazonaws.com",
    "AWS::Lambda::": "lambda.amazonaws.com",
    "AWS::RDS::": "rds.amazonaws.com",
    "AWS::S3::": "s3.amazonaws.com",
}
# Event names whose service is known without a resource to tell it.
EVENT_SOURCES = {
    "elasticloadbalancing.amazonaws.com": (
        "ModifyTargetGroup", "ModifyTargetGroupAttributes", "RegisterTargets", "DeregisterTargets", "ModifyListener",
        "ModifyLoadBalancerAttributes", "SetSecurityGroups", "SetSubnets", "CreateRule", "ModifyRule", "DeleteRule",
        "SetRulePriorities", "CreateListener", "DeleteListener", "CreateTargetGroup", "DeleteTargetGroup",
        "CreateLoadBalancer", "DeleteLoadBalancer", "AddTags", "RemoveTags"),
    "ec2.amazonaws.com": (
        "AuthorizeSecurityGroupIngress", "RevokeSecurityGroupIngress", "AuthorizeSecurityGroupEgress",
        "RevokeSecurityGroupEgress", "ModifySecurityGroupRules", "UpdateSecurityGroupRuleDescriptionsIngress",
        "CreateSecurityGroup", "DeleteSecurityGroup", "RunInstances", "TerminateInstances"),
    "eks.amazonaws.com": (
        "UpdateNodegroupConfig", "UpdateNodegroupVersion", "CreateNodegroup", "DeleteNodegroup", "UpdateClusterConfig",
        "UpdateClusterVersion", "CreateAddon", "UpdateAddon", "DeleteAddon"),
    "autoscaling.amazonaws.com": ("UpdateAutoScalingGroup", "SetDesiredCapacity", "PutScalingPolicy"),
}
CONTROLLER_ROLE = "AmazonEKSLoadBalancerControllerRole"
CONTROLLER_USER_AGENT = "elbv2.k8s.aws/v2.7.1 aws-sdk-go/1.50.20 (go1.21.6; linux; amd64)"
CONSOLE_USER_AGENT = "console.amazonaws.com"
DEFAULT_ADMIN = "arn:aws:sts::{account}:assumed-role/admin/admin"
IDENTIFIER_PARAMETERS = {"target_group": "targetGroupArn", "load_balancer": "loadBalancerArn",
                         "listener": "listenerArn", "security_group": "groupId"}


def _render_placeholders(value: Any, resolve: Callable[[str, str | None, str], str], now: datetime, where: str,
                         f: Path | str = "world.yaml") -> Any:
    """`value` with every {{ tg:NAME }}, {{ lb }}, {{ listener:PORT }},
    {{ sg:NAME }}, {{ account }} and {{ now-15m }} in its strings replaced
    (mappings and lists all the way down)."""
    if isinstance(value, dict):
        return {k: _render_placeholders(v, resolve, now, f"{where}.{k}", f) for k, v in value.items()}
    if isinstance(value, list):
        return [_render_placeholders(v, resolve, now, f"{where}[{i}]", f) for i, v in enumerate(value)]
    if not isinstance(value, str):
        return value

    def placeholder(match: re.Match[str]) -> str:
        if match.group("bare"):
            return resolve(match.group("bare"), None, where)
        return resolve(match.group("kind"), match.group("arg").strip(), where)

    def moment(match: re.Match[str]) -> str:
        t = now + parse_offset(match.group("offset") or "0", f, f"{where} {match.group(0)}")
        return t.strftime("%Y-%m-%dT%H:%M:%SZ")

    rendered = TEMPLATE_RE.sub(moment, PLACEHOLDER_RE.sub(placeholder, value))
    left = re.search(r"\{\{.*?\}\}", rendered)
    if left:
        raise WorldError(f, where, "placeholders {{ tg:NAME }}, {{ lb }}, {{ listener:PORT }}, {{ sg:NAME }}, "
                         "{{ account }} or {{ now-15m }}", left.group(0))
    return rendered


def _identifiers_resolver(world: World, ids: dict[str, Any] | None) -> Callable[[str, str | None, str], str]:
    """Resolves a placeholder to the identifier AWS gave (with `ids`, from the
    seeded world) or, without them, only checks that it names something the
    world has (validation, before anything exists)."""
    f = world.file
    groups = [tg["name"] for tg in world.spec["load_balancer"]["target_groups"]]
    sgs = security_group_names(world)
    ports = listener_ports(world)

    def resolve(kind: str, arg: str | None, where: str) -> str:
        if kind == "tg":
            if arg not in groups:
                raise WorldError(f, where, f"{{{{ tg:NAME }}}} naming a target group of load_balancer.target_groups ({', '.join(groups)})", arg)
            return ids["target_groups"][arg] if ids else ""
        if kind == "sg":
            if arg not in sgs:
                raise WorldError(f, where, f"{{{{ sg:NAME }}}} naming a security group of the world ({', '.join(sgs)})", arg)
            return ids["security_groups"][arg] if ids else ""
        if kind == "listener":
            if not (arg or "").isdigit() or int(arg or 0) not in ports:
                raise WorldError(f, where, f"{{{{ listener:PORT }}}} naming a listener port of the load balancer ({', '.join(map(str, ports))})", arg)
            return ids["listeners"][int(arg or 0)] if ids else ""
        if kind == "lb":
            return ids["load_balancer"] if ids else ""
        return str(world.spec["account"])

    return resolve


def _change_resource(world: World, change: dict[str, Any], where: str) -> tuple[str, Any]:
    """The one resource a change names: (kind, value)."""
    f = world.file
    named = [k for k in CHANGE_RESOURCES if k in change]
    if len(named) != 1:
        raise WorldError(f, where, "exactly one resource: one of " + ", ".join(CHANGE_RESOURCES)
                         + (f" (this change names {len(named)}: {', '.join(named)})" if named else " (this change names none)"))
    kind = named[0]
    value = change[kind]
    field = f"{where}.{kind}"
    if kind == "target_group":
        groups = [tg["name"] for tg in world.spec["load_balancer"]["target_groups"]]
        if value not in groups:
            raise WorldError(f, field, f"the name of a target group in load_balancer.target_groups ({', '.join(groups)})", value)
    elif kind == "load_balancer":
        if value is not True:
            raise WorldError(f, field, "true (the world's load balancer)", value)
    elif kind == "listener":
        ports = listener_ports(world)
        if isinstance(value, bool) or not isinstance(value, int) or value not in ports:
            raise WorldError(f, field, f"the port of one of the load balancer's listeners ({', '.join(map(str, ports))})", value)
    elif kind == "security_group":
        names = security_group_names(world)
        if value not in names:
            raise WorldError(f, field, f"the name of a security group of the world ({', '.join(names)})", value)
    elif kind == "nodegroup":
        if not isinstance(value, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_-]{0,62}", value):
            raise WorldError(f, field, "a node group name (letters, digits, - and _, at most 63)", value)
    else:
        _only_keys(value, f, field, ("type", "name"), "a mapping {type, name}, e.g. {type: AWS::AutoScaling::AutoScalingGroup, name: NAME}")
        for key in ("type", "name"):
            if not isinstance(_require(value, key, f, field, f"the resource's {key}"), str) or not value[key]:
                raise WorldError(f, f"{field}.{key}", "a non-empty string", value[key])
        if not re.fullmatch(r"AWS::\w+::\w+", value["type"]):
            raise WorldError(f, f"{field}.type", "a CloudFormation-style type such as AWS::AutoScaling::AutoScalingGroup", value["type"])
    return kind, value


def _change_source(world: World, change: dict[str, Any], kind: str, value: Any, where: str) -> str:
    f = world.file
    if "source" in change:
        if not isinstance(change["source"], str) or not EVENT_SOURCE.match(change["source"]):
            raise WorldError(f, f"{where}.source", "a service's event source such as elasticloadbalancing.amazonaws.com", change["source"])
        return change["source"]
    for source, names in EVENT_SOURCES.items():
        if change["event"] in names:
            return source
    if kind in RESOURCE_SOURCES:
        return RESOURCE_SOURCES[kind]
    for prefix, source in TYPE_SOURCES.items():
        if value["type"].startswith(prefix):
            return source
    raise WorldError(f, f"{where}.source", f"the event's source (e.g. autoscaling.amazonaws.com): it cannot be told "
                     f"from {change['event']} and {value['type']}")


def _validate_by(world: World, by: Any, field: str) -> None:
    if by in ("controller",) or (isinstance(by, str) and (ASSUMED_ROLE_ARN.match(by) or IAM_USER_ARN.match(by)
                                                        or ROOT_ARN.match(by) or SERVICE_PRINCIPAL.match(by))):
        return
    raise WorldError(world.file, field, BY_EXPECTED, by)


def changes(world: World) -> list[dict[str, Any]]:
    """The `changes` section, validated: each entry with its resource
    (`kind`, `value`), event source, read-only flag and time, oldest first."""
    f, spec = world.file, world.spec.get("changes")
    if spec is None:
        return []
    if not isinstance(spec, list):
        raise WorldError(f, "changes", "a list of CloudTrail events {at, event, <resource>, by, request, ...}", spec)
    resolve = _identifiers_resolver(world, None)
    out = []
    for i, change in enumerate(spec):
        where = f"changes[{i}]"
        _only_keys(change, f, where, CHANGE_KEYS, "a CloudTrail event {at, event, <resource>, by, user_agent, request, response, read_only}")
        at = parse_offset(_require(change, "at", f, where, "when the call was made, an offset such as -10m"), f, f"{where}.at")
        if at > timedelta(0):
            raise WorldError(f, f"{where}.at", "an offset at or before now (0): a change the world has not made yet is in no event history", change["at"])
        event = _require(change, "event", f, where, "the API call, CloudTrail's eventName, e.g. ModifyTargetGroup")
        if not isinstance(event, str) or not EVENT_NAME.match(event):
            raise WorldError(f, f"{where}.event", "an API operation name such as ModifyTargetGroup", event)
        kind, value = _change_resource(world, change, where)
        source = _change_source(world, change, kind, value, where)
        if "by" in change:
            _validate_by(world, change["by"], f"{where}.by")
        if "user_agent" in change and not (isinstance(change["user_agent"], str) and change["user_agent"]):
            raise WorldError(f, f"{where}.user_agent", "a non-empty string", change["user_agent"])
        for key in ("request", "response"):
            if key in change and change[key] is not None:
                if not isinstance(change[key], dict):
                    raise WorldError(f, f"{where}.{key}", "a mapping (the call's " + ("requestParameters" if key == "request" else "responseElements") + ")", change[key])
                _render_placeholders(change[key], resolve, world.now, f"{where}.{key}", f)
        read_only = change.get("read_only", event.startswith(("Describe", "List", "Get")))
        if not isinstance(read_only, bool):
            raise WorldError(f, f"{where}.read_only", "true or false", read_only)
        out.append({"index": i, "spec": change, "at": world.now + at, "event": event, "kind": kind, "value": value,
                    "source": source, "read_only": read_only})
    return sorted(out, key=lambda c: (c["at"], c["index"]))


def _aws_id(prefix: str, seed: str, length: int) -> str:
    """A stable IAM-style identifier (AROA..., ASIA..., AIDA...) for `seed`."""
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
    digest = hashlib.sha256(seed.encode()).digest()
    return prefix + "".join(alphabet[b % 32] for b in digest[:length - len(prefix)])


def _iso(t: datetime) -> str:
    return t.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _identity(world: World, by: str, at: datetime, first: datetime) -> dict[str, Any]:
    """userIdentity, the default user agent and the source address of a
    caller at `at`. A role session began a little before the first change
    `by` made (`first`), so its changes share one session and access key; the
    controller's web-identity credentials are renewed every hour."""
    account, region = str(world.spec["account"]), world.spec["region"]
    seeded = random.Random(f"{world.spec.get('seed', 1)}/cloudtrail/{by}")
    service = SERVICE_PRINCIPAL.match(by)
    if service:
        name = service.group("service")
        return {"identity": {"type": "AWSService", "invokedBy": name}, "user_agent": name, "source_ip": name, "console": False}
    if by == "controller":
        cluster = world.spec["cluster"]["name"]
        # Renewed hourly, at a minute of the hour of the world's own.
        anchor = timedelta(minutes=seeded.randint(0, 59), seconds=seeded.randint(0, 59))
        issued = (at - anchor).replace(minute=0, second=0, microsecond=0) + anchor
        session = str(int(issued.timestamp()) * 10**9 + random.Random(f"{world.spec.get('seed', 1)}/{issued}").randint(0, 10**9 - 1))
        oidc = hashlib.sha256(f"{account}/{region}/{cluster}".encode()).hexdigest()[:32].upper()
        role_arn = f"arn:aws:iam::{account}:role/{CONTROLLER_ROLE}"
        role_id = _aws_id("AROA", role_arn, 21)
        identity = {
            "type": "AssumedRole",
            "principalId": f"{role_id}:{session}",
            "arn": f"arn:aws:sts::{account}:assumed-role/{CONTROLLER_ROLE}/{session}",
            "accountId": account,
            "accessKeyId": _aws_id("ASIA", f"{role_arn}/{session}", 20),
            "sessionContext": {
                "sessionIssuer": {"type": "Role", "principalId": role_id, "arn": role_arn, "accountId": account, "userName": CONTROLLER_ROLE},
                "webIdFederationData": {"federatedProvider": f"arn:aws:iam::{account}:oidc-provider/oidc.eks.{region}.amazonaws.com/id/{oidc}",
                                        "attributes": {}},
                "attributes": {"creationDate": _iso(issued), "mfaAuthenticated": "false"},
            },
        }
        return {"identity": identity, "user_agent": CONTROLLER_USER_AGENT, "source_ip": f"203.0.113.{seeded.randint(10, 250)}", "console": False}
    source_ip = f"198.51.100.{seeded.randint(10, 250)}"
    assumed = ASSUMED_ROLE_ARN.match(by)
    if assumed:
        caller_account, role, session = assumed.group("account"), assumed.group("role"), assumed.group("session")
        role_arn = f"arn:aws:iam::{caller_account}:role/{role}"
        role_id = _aws_id("AROA", role_arn, 21)
        issued = first - timedelta(minutes=seeded.randint(5, 55), seconds=seeded.randint(0, 59))
        identity = {
            "type": "AssumedRole",
            "principalId": f"{role_id}:{session}",
            "arn": by,
            "accountId": caller_account,
            "accessKeyId": _aws_id("ASIA", f"{by}/{issued.isoformat()}", 20),
            "sessionContext": {
                "sessionIssuer": {"type": "Role", "principalId": role_id, "arn": role_arn, "accountId": caller_account, "userName": role},
                "webIdFederationData": {},
                "attributes": {"creationDate": _iso(issued), "mfaAuthenticated": "false"},
            },
        }
        return {"identity": identity, "user_agent": CONSOLE_USER_AGENT, "source_ip": source_ip, "console": True}
    user = IAM_USER_ARN.match(by)
    if user:
        # An IAM user's long-term access key: the CLI, most likely.
        identity = {"type": "IAMUser", "principalId": _aws_id("AIDA", by, 21), "arn": by, "accountId": user.group("account"),
                    "accessKeyId": _aws_id("AKIA", by, 20), "userName": user.group("user")}
        return {"identity": identity, "user_agent": None, "source_ip": source_ip, "console": False}
    root = ROOT_ARN.match(by)
    assert root is not None, by
    identity = {"type": "Root", "principalId": root.group("account"), "arn": by, "accountId": root.group("account"),
                "accessKeyId": _aws_id("ASIA", f"{by}/{first.isoformat()}", 20)}
    return {"identity": identity, "user_agent": CONSOLE_USER_AGENT, "source_ip": source_ip, "console": True}


CLI_COMMANDS = {"elasticloadbalancing": "elbv2", "monitoring": "cloudwatch"}


def cli_user_agent(source: str, event: str) -> str:
    """The user agent of the AWS CLI making `event` (ModifyTargetGroup ->
    command/elbv2.modify-target-group)."""
    service = source.split(".")[0]
    command = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "-", event).lower()
    return f"aws-cli/2.15.30 Python/3.11.8 Linux/6.1.79 exe/x86_64.amzn.2023 prompt/off command/{CLI_COMMANDS.get(service, service)}.{command}"


def cloudtrail_events(world: World, ids: dict[str, Any]) -> list[dict[str, Any]]:
    """The world's `changes` as CloudTrail records, each `{"record",
    "resources"}` as the admin endpoint cloudtrail-events takes them.
    `ids` holds what AWS named the world's resources: `load_balancer` (ARN),
    `target_groups` (name -> ARN), `listeners` (port -> ARN),
    `security_groups` (name -> group id)."""
    account, region = str(world.spec["account"]), world.spec["region"]
    resolve = _identifiers_resolver(world, ids)
    out = []
    listed = changes(world)
    first: dict[str, datetime] = {}
    for change in listed:
        first.setdefault(str(change["spec"].get("by", DEFAULT_ADMIN.format(account=account))), change["at"])
    for change in listed:
        spec, kind, value, at = change["spec"], change["kind"], change["value"], change["at"]
        where = f"changes[{change['index']}]"
        rng = random.Random(f"{world.spec.get('seed', 1)}/cloudtrail/{change['index']}/{change['event']}")
        if kind == "target_group":
            identifier, parameters = ids["target_groups"][value], {"targetGroupArn": ids["target_groups"][value]}
        elif kind == "load_balancer":
            identifier, parameters = ids["load_balancer"], {"loadBalancerArn": ids["load_balancer"]}
        elif kind == "listener":
            identifier, parameters = ids["listeners"][value], {"listenerArn": ids["listeners"][value]}
        elif kind == "security_group":
            identifier, parameters = ids["security_groups"][value], {"groupId": ids["security_groups"][value]}
        elif kind == "nodegroup":
            identifier, parameters = value, {"clusterName": world.spec["cluster"]["name"], "nodegroupName": value}
        else:
            identifier, parameters = value["name"], {}
        resource_type = RESOURCE_TYPES.get(kind) or value["type"]
        request = _render_placeholders(spec.get("request"), resolve, world.now, f"{where}.request", world.file)
        if request is not None or parameters:
            request = {**parameters, **(request or {})}
        response = _render_placeholders(spec.get("response"), resolve, world.now, f"{where}.response", world.file)
        by = str(spec.get("by", DEFAULT_ADMIN.format(account=account)))
        caller = _identity(world, by, at, first[by])
        source = change["source"]
        user_agent = spec.get("user_agent", caller["user_agent"] or cli_user_agent(source, change["event"]))
        record: dict[str, Any] = {
            "eventVersion": "1.09",
            "userIdentity": caller["identity"],
            "eventTime": _iso(at),
            "eventSource": source,
            "eventName": change["event"],
            "awsRegion": region,
            "sourceIPAddress": caller["source_ip"],
            "userAgent": user_agent,
            "requestParameters": request,
            "responseElements": response,
            "requestID": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
            "eventID": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
            "readOnly": change["read_only"],
            "eventType": "AwsApiCall",
        }
        if source == "elasticloadbalancing.amazonaws.com":
            record["apiVersion"] = "2015-12-01"
        record.update({"managementEvent": True, "recipientAccountId": account, "eventCategory": "Management"})
        if caller["identity"]["type"] != "AWSService":
            record["tlsDetails"] = {"tlsVersion": "TLSv1.3", "cipherSuite": "TLS_AES_128_GCM_SHA256",
                                    "clientProvidedHostHeader": f"{source.split('.')[0]}.{region}.amazonaws.com"}
        if caller["console"] and user_agent == CONSOLE_USER_AGENT:
            record["sessionCredentialFromConsole"] = "true"
        out.append({"record": record, "resources": [{"ResourceType": resource_type, "ResourceName": identifier}]})
    return out


# --- Kubernetes -----------------------------------------------------------------------

def render_manifests(world: World, out: Path, target_group_arns: dict[str, str]) -> int:
    """Copies DIR/kubernetes/*.yaml to `out`, replacing {{now-15m}}-style
    placeholders with RFC 3339 times and {{target_group_arn NAME}} with the ARN
    the seeded target group got. Returns the number of files."""
    source = world.directory / "kubernetes"
    out.mkdir(parents=True, exist_ok=True)
    count = 0
    if not source.is_dir():
        return 0
    for path in sorted(source.glob("*.y*ml")):
        def substitute(match: re.Match[str]) -> str:
            offset = match.group("offset") or "0"
            t = world.at(offset, f"{path.name} placeholder {match.group(0)}")
            return t.strftime("%Y-%m-%dT%H:%M:%SZ")

        def arn(match: re.Match[str]) -> str:
            name = match.group("name")
            if name not in target_group_arns:
                raise WorldError(path, match.group(0), f"the name of a target group in world.yaml ({', '.join(sorted(target_group_arns))})", name)
            return target_group_arns[name]

        text = ARN_RE.sub(arn, TEMPLATE_RE.sub(substitute, path.read_text()))
        try:
            list(yaml.safe_load_all(text))
        except yaml.YAMLError as error:
            raise WorldError(path, "(syntax)", f"valid YAML ({error})")
        (out / path.name).write_text(text)
        count += 1
    return count


# --- logs -------------------------------------------------------------------------------
#
# What the world's containers print: `logs` says which pods print which lines
# (patterns spread over a time range, and literal lines at given times), and
# `log_group` says that the cluster ships them to CloudWatch Logs, as Container
# Insights' Fluent Bit does. The Kubernetes API serves them as pods/log, and
# the log group (Logs Insights, moto_world/logs_insights_ext.py) holds the same
# lines as Fluent Bit's JSON records.

LOG_ENTRY_KEYS = ("namespace", "pods", "pod_prefix", "container", "previous", "deleted", "node", "patterns", "lines")
LOG_PATTERN_KEYS = ("text", "per_minute", "from", "to")
LOG_LINE_KEYS = ("at", "text")
LOG_ENTRY_EXPECTED = "a mapping {namespace, pods | pod_prefix, container, previous, deleted, node, patterns, lines}"
MAX_LOG_LINES = 200_000
MAX_LINES_PER_MINUTE = 60_000
LOG_PLACEHOLDERS = ("n", "float", "uuid", "hex", "ip", "port", "ms", "pod", "word")
LOG_PLACEHOLDER = re.compile(r"\{(" + "|".join(LOG_PLACEHOLDERS) + r")\}")
LOG_GROUP_NAME = re.compile(r"^[\w.\-/#]{1,512}$")
CONTAINER_INSIGHTS_GROUP = re.compile(r"^/aws/containerinsights/(?P<cluster>[^/]+)/(?P<kind>[^/]+)$")
CONTAINER_ID = re.compile(r"^(?:[a-z]+://)?(?P<id>[0-9a-f]{64})$")
LOG_WORDS = ("alpha", "basket", "cache", "delta", "export", "fare", "gateway", "harbor", "invoice", "journey", "kernel",
             "ledger", "mirror", "nightly", "orbit", "parcel", "quota", "refund", "session", "ticket", "upload",
             "voucher", "window", "yield", "zone")
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def log_group(world: World) -> str | None:
    """`log_group`: the CloudWatch Logs group the cluster ships container logs
    to (Container Insights': /aws/containerinsights/<cluster>/application), or None."""
    f, spec = world.file, world.spec.get("log_group")
    if spec is None:
        return None
    expected = "a CloudWatch Logs log group name such as /aws/containerinsights/<cluster>/application"
    if not isinstance(spec, str) or not LOG_GROUP_NAME.match(spec):
        raise WorldError(f, "log_group", expected, spec)
    if spec.startswith("/aws/containerinsights/"):
        cluster = world.spec["cluster"]["name"]
        match = CONTAINER_INSIGHTS_GROUP.match(spec)
        if not match or match.group("cluster") != cluster or match.group("kind") != "application":
            raise WorldError(f, "log_group", f"/aws/containerinsights/{cluster}/application (Container Insights ships "
                             "container logs to the group of the world's cluster named application)", spec)
    return spec


@dataclass
class ManifestPod:
    """What the logs need to know of a Pod in the world's manifests."""

    namespace: str
    name: str
    containers: list[str]
    init_containers: list[str]
    images: dict[str, str]
    node: str | None
    labels: dict[str, str]
    created: datetime | None
    statuses: dict[str, dict[str, Any]]  # container name -> its containerStatus


def _manifest_time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def manifest_pods(world: World) -> dict[tuple[str, str], ManifestPod]:
    """The Pods of DIR/kubernetes/*.yaml by (namespace, name), with their
    `{{ now-15m }}` times rendered as render_manifests renders them."""
    source = world.directory / "kubernetes"
    pods: dict[tuple[str, str], ManifestPod] = {}
    if not source.is_dir():
        return pods
    for path in sorted(source.glob("*.y*ml")):
        def moment(match: re.Match[str]) -> str:
            return world.at(match.group("offset") or "0", f"{path.name} placeholder {match.group(0)}").strftime("%Y-%m-%dT%H:%M:%SZ")

        text = ARN_RE.sub("arn-placeholder", TEMPLATE_RE.sub(moment, path.read_text()))
        try:
            documents = list(yaml.safe_load_all(text))
        except yaml.YAMLError as error:
            raise WorldError(path, "(syntax)", f"valid YAML ({error})")
        for document in documents:
            if not isinstance(document, dict):
                continue
            items = document.get("items") or [] if str(document.get("kind", "")).endswith("List") else [document]
            for obj in items:
                if not isinstance(obj, dict) or obj.get("kind") != "Pod" or obj.get("apiVersion") != "v1":
                    continue
                metadata, spec, status = obj.get("metadata") or {}, obj.get("spec") or {}, obj.get("status") or {}
                if not metadata.get("name"):
                    continue
                containers = [c for c in spec.get("containers") or [] if isinstance(c, dict) and c.get("name")]
                inits = [c for c in spec.get("initContainers") or [] if isinstance(c, dict) and c.get("name")]
                statuses = {s["name"]: s for s in [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])]
                            if isinstance(s, dict) and s.get("name")}
                namespace = str(metadata.get("namespace") or "default")
                pods[(namespace, str(metadata["name"]))] = ManifestPod(
                    namespace=namespace, name=str(metadata["name"]),
                    containers=[str(c["name"]) for c in containers], init_containers=[str(c["name"]) for c in inits],
                    images={str(c["name"]): str(c["image"]) for c in [*inits, *containers] if c.get("image")},
                    node=spec.get("nodeName") or None, labels={str(k): str(v) for k, v in (metadata.get("labels") or {}).items()},
                    created=_manifest_time(metadata.get("creationTimestamp")), statuses=statuses)
    return pods


def _container_id(value: Any) -> str | None:
    match = CONTAINER_ID.match(value) if isinstance(value, str) else None
    return match.group("id") if match else None


def _later(a: datetime | None, b: datetime | None) -> datetime | None:
    return max(a, b) if a and b else a or b


def _container_instance(f: Path, where: str, pod: ManifestPod, container: str,
                        previous: bool) -> tuple[datetime | None, datetime | None, str | None]:
    """(first moment, last moment, container id) of the instance of a
    container the lines belong to: the current one, or with `previous` the
    one before it (lastState.terminated). A line can only be printed while
    its instance runs."""
    status = pod.statuses.get(container) or {}
    last = (status.get("lastState") or {}).get("terminated")
    if previous:
        if not isinstance(last, dict):
            raise WorldError(f, f"{where}.previous", f"a container with a previous instance: the status of {pod.name}'s "
                             f"{container} has no lastState.terminated (give it one, with restartCount, or drop previous)", True)
        return (_later(pod.created, _manifest_time(last.get("startedAt"))), _manifest_time(last.get("finishedAt")),
                _container_id(last.get("containerID")))
    state = status.get("state") or {}
    if "waiting" in state and "running" not in state and "terminated" not in state:
        reason = (state.get("waiting") or {}).get("reason") or "ContainerCreating"
        if isinstance(last, dict):
            raise WorldError(f, f"{where}.previous", f"previous: true: {pod.name}'s {container} is waiting ({reason}), so it "
                             "has no current instance; its lines are those of the instance that ended (lastState.terminated), "
                             "which the API server serves with and without previous=true", False)
        raise WorldError(f, where, f"no lines for {pod.name}'s {container}: it is waiting to start ({reason}) and has never run")
    if "terminated" in state:
        ended = state.get("terminated") or {}
        return (_later(pod.created, _manifest_time(ended.get("startedAt"))), _manifest_time(ended.get("finishedAt")),
                _container_id(ended.get("containerID") or status.get("containerID")))
    running = state.get("running") or {}
    return _later(pod.created, _manifest_time(running.get("startedAt"))), None, _container_id(status.get("containerID"))


def _node_name(world: World, pod: str) -> str:
    """A node name of the region's form for a pod whose node is unknown."""
    digest = hashlib.sha256(f"{world.spec.get('seed', 1)}/node/{pod}".encode()).digest()
    region = world.spec["region"]
    domain = "ec2.internal" if region == "us-east-1" else f"{region}.compute.internal"
    return f"ip-10-{digest[0]}-{digest[1]}-{digest[2] % 254 + 1}.{domain}"


def log_entries(world: World) -> list[dict[str, Any]]:
    """The `logs` section, validated and resolved: one plan per (entry, pod),
    with the container, the instance's window, the patterns' ranges clipped
    to it and the literal lines' times. Refuses a world that would print more
    than MAX_LOG_LINES lines."""
    f, spec = world.file, world.spec.get("logs")
    if spec is None:
        return []
    if not isinstance(spec, list):
        raise WorldError(f, "logs", "a list of " + LOG_ENTRY_EXPECTED, spec)
    pods = manifest_pods(world)
    default_from = world.now - parse_duration(world.spec.get("metrics_span", "6h"), f, "metrics_span")
    plans: list[dict[str, Any]] = []
    total = 0.0
    for i, entry in enumerate(spec):
        where = f"logs[{i}]"
        _only_keys(entry, f, where, LOG_ENTRY_KEYS, LOG_ENTRY_EXPECTED)
        namespace = _require(entry, "namespace", f, where, "the pods' namespace")
        if not isinstance(namespace, str) or not namespace:
            raise WorldError(f, f"{where}.namespace", "a namespace name", namespace)
        for key in ("previous", "deleted"):
            if not isinstance(entry.get(key, False), bool):
                raise WorldError(f, f"{where}.{key}", "true or false", entry[key])
        previous, deleted = entry.get("previous", False), entry.get("deleted", False)
        if ("pods" in entry) == ("pod_prefix" in entry):
            raise WorldError(f, where, "exactly one of pods (a list of pod names) or pod_prefix (the start of their names)")
        if "node" in entry and not deleted:
            raise WorldError(f, f"{where}.node", "nothing here unless deleted: true (a pod of the manifests is on its spec.nodeName)", entry["node"])
        if "node" in entry and not (isinstance(entry["node"], str) and entry["node"]):
            raise WorldError(f, f"{where}.node", "a node name", entry["node"])
        in_namespace = sorted(name for (ns, name) in pods if ns == namespace)
        if "pod_prefix" in entry:
            prefix = entry["pod_prefix"]
            if deleted:
                raise WorldError(f, f"{where}.pod_prefix", "pods: [NAMES] with deleted: true (a pod that is gone is in no manifest to match)", prefix)
            if not isinstance(prefix, str) or not prefix:
                raise WorldError(f, f"{where}.pod_prefix", "the start of pod names, e.g. itinerary-7f4c9b6d52-", prefix)
            names = [name for name in in_namespace if name.startswith(prefix)]
            if not names:
                raise WorldError(f, f"{where}.pod_prefix", f"the start of the names of pods of namespace {namespace} in the "
                                 f"manifests ({', '.join(in_namespace) or 'none'})", prefix)
        else:
            names = entry["pods"]
            if not isinstance(names, list) or not names or not all(isinstance(n, str) and n for n in names) or len(set(names)) != len(names):
                raise WorldError(f, f"{where}.pods", "a non-empty list of distinct pod names", names)
            for j, name in enumerate(names):
                if deleted and (namespace, name) in pods:
                    raise WorldError(f, f"{where}.pods[{j}]", "a pod that is gone (deleted: true), yet it is in the manifests; "
                                     "drop deleted", name)
                if not deleted and (namespace, name) not in pods:
                    raise WorldError(f, f"{where}.pods[{j}]", f"a pod of namespace {namespace} in the manifests "
                                     f"({', '.join(in_namespace) or 'none'}), or deleted: true for a pod that is gone", name)
        container = entry.get("container")
        if container is not None and not (isinstance(container, str) and container):
            raise WorldError(f, f"{where}.container", "a container name", container)
        if deleted and container is None:
            raise WorldError(f, f"{where}.container", "the container's name (a pod that is gone has no manifest to tell it)")
        patterns = entry.get("patterns", [])
        lines = entry.get("lines", [])
        if not isinstance(patterns, list):
            raise WorldError(f, f"{where}.patterns", "a list of {text, per_minute, from, to}", patterns)
        if not isinstance(lines, list):
            raise WorldError(f, f"{where}.lines", "a list of {at, text}", lines)
        if not patterns and not lines:
            raise WorldError(f, where, "patterns or lines: what the pods print")
        parsed_patterns = []
        for j, pattern in enumerate(patterns):
            pwhere = f"{where}.patterns[{j}]"
            _only_keys(pattern, f, pwhere, LOG_PATTERN_KEYS, "a pattern {text, per_minute, from, to}")
            text = _log_text(f, f"{pwhere}.text", _require(pattern, "text", f, pwhere, "the line printed, with placeholders such as {uuid}"))
            rate = _require(pattern, "per_minute", f, pwhere, "how many lines each pod prints a minute")
            if not _is_number(rate) or not 0 < rate <= MAX_LINES_PER_MINUTE:
                raise WorldError(f, f"{pwhere}.per_minute", f"a number of lines a minute per pod, above 0 and at most {MAX_LINES_PER_MINUTE}", rate)
            start = world.at(pattern["from"], f"{pwhere}.from") if "from" in pattern else default_from
            end = world.now + parse_offset(pattern.get("to", 0), f, f"{pwhere}.to")
            if end <= start:
                raise WorldError(f, f"{pwhere}.to", f"an offset after from ({pattern.get('from', 'the start of metrics_span')})", pattern.get("to", 0))
            parsed_patterns.append({"index": j, "text": text, "per_minute": float(rate), "start": start, "end": end})
        parsed_lines = []
        for j, line in enumerate(lines):
            lwhere = f"{where}.lines[{j}]"
            _only_keys(line, f, lwhere, LOG_LINE_KEYS, "a line {at, text}")
            at = world.now + parse_offset(_require(line, "at", f, lwhere, "when it is printed, an offset such as -3m"), f, f"{lwhere}.at")
            parsed_lines.append({"index": j, "at": at, "text": _log_text(f, f"{lwhere}.text", _require(line, "text", f, lwhere, "the line printed"))})
        for name in names:
            pod = pods.get((namespace, name))
            if pod is None:
                chosen, window, container_id = str(container), (None, None), None
                host, image, labels = entry.get("node") or _node_name(world, name), None, {}
            else:
                chosen = _log_container(f, where, pod, container)
                first, last, container_id = _container_instance(f, where, pod, chosen, previous)
                window = (first, last)
                host, image, labels = pod.node or _node_name(world, name), pod.images.get(chosen), pod.labels
            clipped = []
            for pattern in parsed_patterns:
                start = _later(pattern["start"], window[0]) or pattern["start"]
                end = min(pattern["end"], window[1]) if window[1] else pattern["end"]
                if end > start:
                    clipped.append({**pattern, "start": start, "end": end})
                    total += pattern["per_minute"] * (end - start).total_seconds() / 60
            for line in parsed_lines:
                if (window[0] and line["at"] < window[0]) or (window[1] and line["at"] > window[1]):
                    instance = "previous instance" if previous else "current instance"
                    bounds = f"from {_relative(world, window[0]) if window[0] else 'ever'} to {_relative(world, window[1]) if window[1] else 'now'}"
                    raise WorldError(f, f"{where}.lines[{line['index']}].at", f"a time while the {instance} of {name}'s {chosen} "
                                     f"runs ({bounds}, from the pod's creationTimestamp and its container status)", lines[line["index"]]["at"])
            total += len(parsed_lines)
            if not container_id:
                seed = f"{world.spec.get('seed', 1)}/container/{namespace}/{name}/{chosen}/{'previous' if previous else 'current'}"
                container_id = hashlib.sha256(seed.encode()).hexdigest()
            plans.append({"entry": i, "namespace": namespace, "pod": name, "container": chosen, "previous": previous,
                          "deleted": pod is None, "host": host, "image": image, "labels": labels, "container_id": container_id,
                          "patterns": clipped, "lines": parsed_lines})
        if total > MAX_LOG_LINES:
            raise WorldError(f, "logs", f"at most {MAX_LOG_LINES} lines in all (up to {where} the world prints about "
                             f"{int(total)}): lower per_minute, or narrow from and to")
    return plans


def _relative(world: World, t: datetime) -> str:
    """`t` as an offset from the world's now, e.g. -3m or -1h30m."""
    seconds = int((t - world.now).total_seconds())
    sign, seconds = ("-" if seconds < 0 else "+"), abs(seconds)
    text = "".join(f"{v}{u}" for v, u in ((seconds // 3600, "h"), (seconds % 3600 // 60, "m"), (seconds % 60, "s")) if v)
    return f"{sign}{text}" if text else "0"


def _log_text(f: Path, field: str, text: Any) -> str:
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        text = str(text)
    if not isinstance(text, str):
        raise WorldError(f, field, "a line of text", text)
    if "\n" in text or "\r" in text:
        raise WorldError(f, field, "one line, without a newline (a stack trace is one `lines` entry per line; "
                         "a YAML block scalar `|` adds a newline)", text)
    return text


def _log_container(f: Path, where: str, pod: ManifestPod, container: str | None) -> str:
    names = [*pod.init_containers, *pod.containers]
    if container is None:
        if len(pod.containers) != 1:
            raise WorldError(f, f"{where}.container", f"the container, since {pod.name} has {len(pod.containers)} "
                             f"({', '.join(pod.containers) or 'none'})")
        return pod.containers[0]
    if container not in names:
        raise WorldError(f, f"{where}.container", f"a container of {pod.name} ({', '.join(names) or 'none'})", container)
    return container


def _ns(t: datetime) -> int:
    """Nanoseconds since the epoch."""
    return (t - _EPOCH) // timedelta(microseconds=1) * 1000


def rfc3339_nano(ns: int) -> str:
    """2026-12-04T08:10:00.123456789Z, as the kubelet writes a line's timestamp."""
    seconds, fraction = divmod(ns, 10**9)
    return f"{datetime.fromtimestamp(seconds, timezone.utc):%Y-%m-%dT%H:%M:%S}.{fraction:09d}Z"


def _fill(text: str, rng: random.Random, pod: str) -> str:
    def value(match: re.Match[str]) -> str:
        kind = match.group(1)
        if kind == "n":
            return str(int(10 ** rng.uniform(0, 4)))
        if kind == "float":
            return f"{rng.uniform(0, 10):.3f}"
        if kind == "uuid":
            return str(uuid.UUID(int=rng.getrandbits(128), version=4))
        if kind == "hex":
            return "".join(rng.choice("0123456789abcdef") for _ in range(rng.randint(12, 16)))
        if kind == "ip":
            return f"10.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}"
        if kind == "port":
            return str(rng.randint(1024, 65535))
        if kind == "ms":
            return f"{max(1, int(rng.lognormvariate(4.5, 0.8)))}ms"
        if kind == "pod":
            return pod
        return rng.choice(LOG_WORDS)

    return LOG_PLACEHOLDER.sub(value, text)


def pod_logs(world: World) -> list[dict[str, Any]]:
    """What each container instance printed, oldest first: one item per
    (namespace, pod, container, previous) with `lines` as [nanoseconds, text]
    and what Fluent Bit adds (`host`, `container_id`, `image`, `labels`).
    Deterministic for a seed and a now: patterns put their lines evenly over
    their range, each at a seeded place within its slot; literal lines sharing
    one `at` follow each other a microsecond apart, in the order given."""
    seed = world.spec.get("seed", 1)
    merged: dict[tuple[str, str, str, bool], dict[str, Any]] = {}
    for plan in log_entries(world):
        key = (plan["namespace"], plan["pod"], plan["container"], plan["previous"])
        item = merged.setdefault(key, {k: plan[k] for k in ("namespace", "pod", "container", "previous", "deleted", "host",
                                                             "image", "labels", "container_id")} | {"lines": []})
        lines = item["lines"]
        for pattern in plan["patterns"]:
            rng = random.Random(f"{seed}/logs/{plan['entry']}/{pattern['index']}/{plan['pod']}")
            start, span = _ns(pattern["start"]), _ns(pattern["end"]) - _ns(pattern["start"])
            count = int(round(pattern["per_minute"] * span / 60e9))
            slot = span / count if count else 0
            for k in range(count):
                lines.append((start + int((k + rng.random()) * slot), _fill(pattern["text"], rng, plan["pod"])))
        rng = random.Random(f"{seed}/logs/{plan['entry']}/lines/{plan['pod']}")
        shared: dict[datetime, int] = {}
        for line in plan["lines"]:
            k = shared.get(line["at"], 0)
            shared[line["at"]] = k + 1
            lines.append((_ns(line["at"]) + 1000 * k, _fill(line["text"], rng, plan["pod"])))
    out = []
    for item in merged.values():
        item["lines"] = sorted(item["lines"], key=lambda line: line[0])  # stable: equal times keep their order
        out.append(item)
    return out


def log_stream_name(item: dict[str, Any]) -> str:
    """The log stream Container Insights' Fluent Bit writes a container's lines to."""
    return (f"{item['host']}-application.var.log.containers.{item['pod']}_{item['namespace']}_"
            f"{item['container']}-{item['container_id']}.log")


def fluent_bit_record(item: dict[str, Any], ns: int, text: str) -> str:
    """One line as the JSON record Container Insights' Fluent Bit sends to CloudWatch Logs."""
    kubernetes: dict[str, Any] = {"pod_name": item["pod"], "namespace_name": item["namespace"],
                                  "container_name": item["container"], "docker_id": item["container_id"]}
    if item.get("image"):
        kubernetes["container_image"] = item["image"]
    kubernetes["host"] = item["host"]
    if item.get("labels"):
        kubernetes["labels"] = item["labels"]
    record = {"log": text, "stream": "stdout", "time": rfc3339_nano(ns), "kubernetes": kubernetes}
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"))


def log_group_streams(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The log group's streams: `{"name", "events": [{"timestamp" (ms), "message"}]}`,
    every instance's lines, as Fluent Bit shipped them when they were printed."""
    return [{"name": log_stream_name(item),
             "events": [{"timestamp": ns // 10**6, "message": fluent_bit_record(item, ns, text)} for ns, text in item["lines"]]}
            for item in items]


def describe(world: World) -> str:
    return json.dumps({"world": world.name, "now": world.now.isoformat()})

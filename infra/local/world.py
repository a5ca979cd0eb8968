"""Reading a world: validation with clear errors, and the generators that turn
a world's description into CloudWatch datapoints, alarm history, Prometheus
series and Kubernetes manifests. Pure: no network, no processes.

The format is documented in docs/worlds.md.
"""

from __future__ import annotations

import json
import math
import random
import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import yaml

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
    groups = _require(lb, "target_groups", f, "load_balancer", "a list of target groups")
    if not isinstance(groups, list) or not groups:
        raise WorldError(f, "load_balancer.target_groups", "a non-empty list")
    for i, tg in enumerate(groups):
        where = f"load_balancer.target_groups[{i}]"
        name = _require(tg, "name", f, where, "a target group name")
        if len(name) > 32:
            raise WorldError(f, f"{where}.name", "at most 32 characters, as on AWS", name)
        if tg.get("target_type", "instance") not in ("instance", "ip", "lambda"):
            raise WorldError(f, f"{where}.target_type", "instance, ip or lambda", tg.get("target_type"))
        if tg.get("algorithm", "round_robin") not in ("round_robin", "least_outstanding_requests", "weighted_random"):
            raise WorldError(f, f"{where}.algorithm", "round_robin, least_outstanding_requests or weighted_random", tg.get("algorithm"))
        for j, target in enumerate(tg.get("targets", [])):
            if target.get("health", "healthy") not in ("healthy", "unhealthy", "initial", "draining", "unused", "unavailable"):
                raise WorldError(f, f"{where}.targets[{j}].health", "healthy, unhealthy, initial, draining, unused or unavailable", target.get("health"))
        _require(tg, "metrics", f, where, "a metrics mapping (requests_per_minute, latency)")
        _require(tg["metrics"], "requests_per_minute", f, f"{where}.metrics", "a level such as {base: 600}")
        _require(tg["metrics"], "latency", f, f"{where}.metrics", "latency buckets such as {base: [[0.1, 0.99], [0.5, 0.01]]}")
        for phase in ("base", "burst"):
            buckets = tg["metrics"]["latency"].get(phase)
            if buckets is None:
                continue
            if not isinstance(buckets, list) or not all(isinstance(b, list) and len(b) == 2 for b in buckets):
                raise WorldError(f, f"{where}.metrics.latency.{phase}", "a list of [seconds, share] pairs", buckets)
    alarm = _require(s, "alarm", f, "", "an alarm mapping")
    for key in ("name", "metric", "statistic", "threshold", "comparison", "period", "evaluation_periods"):
        _require(alarm, key, f, "alarm", f"the alarm's {key}")
    statistic_kind(alarm["statistic"], f)
    names = [tg.get("name") for tg in s.get("load_balancer", {}).get("target_groups", [])]
    if "target_group" in alarm and alarm["target_group"] not in names:
        raise WorldError(f, "alarm.target_group", f"the name of a target group in world.yaml ({', '.join(map(str, names))})", alarm["target_group"])
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
    if (world.directory / "kubernetes").exists() and not (world.directory / "kubernetes").is_dir():
        raise WorldError(world.directory / "kubernetes", "(path)", "a directory of manifests")


STATISTICS = ("Average", "Sum", "SampleCount", "Minimum", "Maximum")
EXTENDED_STATISTIC = re.compile(r"^(p|tm|wm|tc|ts)\d{1,2}(\.\d{1,2})?$")


def statistic_kind(statistic: Any, f: Path | None = None) -> str:
    """`Statistic` for the five plain statistics, `ExtendedStatistic` for
    percentiles (`p99`, `p99.9`) and trimmed means (`tm99`), as PutMetricAlarm takes them."""
    if statistic in STATISTICS:
        return "Statistic"
    if isinstance(statistic, str) and EXTENDED_STATISTIC.match(statistic):
        return "ExtendedStatistic"
    raise WorldError(f or Path("world.yaml"), "alarm.statistic",
                     "Average, Sum, SampleCount, Minimum, Maximum, a percentile such as p99 or a trimmed mean such as tm99",
                     statistic)


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

def _level(spec: Any, burst: bool, minute_index: int, rng: random.Random) -> float:
    if isinstance(spec, (int, float)):
        return float(spec)
    base = float(spec.get("base", 0))
    value = float(spec.get("burst", base)) if burst else base
    noise = float(spec.get("noise", 0))
    if noise:
        value *= max(0.0, 1 + rng.uniform(-noise, noise))
    return value


def target_group_minutes(world: World, tg: dict[str, Any], minutes: int) -> list[dict[str, Any]]:
    """Per-minute figures for one target group, oldest first: request count, a
    latency histogram (values, counts), 5xx count."""
    rng = random.Random(f"{world.spec.get('seed', 1)}/{tg['name']}")
    windows = bursts(world) if tg.get("bursts", True) else []
    metrics = tg["metrics"]
    out = []
    for i in range(minutes, 0, -1):
        t = world.now - timedelta(minutes=i)
        burst = in_burst(windows, t)
        requests = int(round(_level(metrics["requests_per_minute"], burst, i, rng)))
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
                at = world.at(event["at"], f"metrics.slow_requests[{j}].at")
                if at == t:
                    values.append(float(event["seconds"]))
                    counts.append(float(event.get("count", 1)))
                    requests += int(event.get("count", 1))
        errors = int(round(_level(metrics.get("http_5xx_per_minute", 0), burst, i, rng)))
        out.append({"timestamp": t, "requests": requests, "values": values, "counts": counts, "errors": errors})
    return out


def tg_dimension(arn: str) -> str:
    """targetgroup/<name>/<id>, the TargetGroup dimension value."""
    return arn.split(":", 5)[5]


def lb_dimension(arn: str) -> str:
    """app/<name>/<id>, the LoadBalancer dimension value."""
    return arn.split(":loadbalancer/", 1)[1]


# --- Prometheus ---------------------------------------------------------------------

def openmetrics(world: World) -> str:
    """OpenMetrics text for the world's pods (counters integrate the usage profile),
    ready for `promtool tsdb create-blocks-from openmetrics`."""
    spec = world.spec.get("prometheus")
    if not spec:
        return ""
    f = world.file
    step = int(parse_duration(spec.get("step", "30s"), f, "prometheus.step").total_seconds())
    span = parse_duration(spec.get("span", "6h"), f, "prometheus.span")
    windows = bursts(world)
    families: dict[str, list[str]] = {
        "container_cpu_usage_seconds": [],
        "container_cpu_cfs_periods": [],
        "container_cpu_cfs_throttled_periods": [],
        "container_memory_working_set_bytes": [],
    }
    start = world.now - span
    steps = int(span.total_seconds() // step)
    for i, group in enumerate(_require(spec, "pods", f, "prometheus", "a list of pod groups")):
        where = f"prometheus.pods[{i}]"
        names = _require(group, "names", f, where, "the pod names")
        namespace = _require(group, "namespace", f, where, "the namespace")
        container = group.get("container", "app")
        for name in names:
            rng = random.Random(f"{world.spec.get('seed', 1)}/{name}")
            cpu = _require(group, "cpu_cores", f, where, "a level such as {base: 0.1, burst: 0.9}")
            per_pod = (group.get("per_pod") or {}).get(name, {})
            cpu = {**cpu, **per_pod.get("cpu_cores", {})} if isinstance(cpu, dict) else cpu
            throttled = per_pod.get("throttled_share", group.get("throttled_share", 0))
            memory = group.get("memory_mib", {"base": 256})
            used = periods = throttled_periods = 0.0
            labels = f'namespace="{namespace}",pod="{name}",container="{container}"'
            for k in range(steps + 1):
                t = start + timedelta(seconds=k * step)
                burst = in_burst(windows, t)
                cores = _level(cpu, burst, k, rng)
                used += cores * step
                periods += step * 10  # 100 ms CFS periods
                throttled_periods += step * 10 * _level(throttled, burst, k, rng)
                ts = int(t.timestamp())
                families["container_cpu_usage_seconds"].append(f"container_cpu_usage_seconds_total{{{labels}}} {used:.4f} {ts}")
                families["container_cpu_cfs_periods"].append(f"container_cpu_cfs_periods_total{{{labels}}} {periods:.0f} {ts}")
                families["container_cpu_cfs_throttled_periods"].append(f"container_cpu_cfs_throttled_periods_total{{{labels}}} {throttled_periods:.0f} {ts}")
                families["container_memory_working_set_bytes"].append(
                    f"container_memory_working_set_bytes{{{labels}}} {_level(memory, burst, k, rng) * 1048576:.0f} {ts}"
                )
    lines = []
    for family, samples in families.items():
        kind = "gauge" if family.endswith("_bytes") else "counter"
        lines.append(f"# TYPE {family} {kind}")
        lines.extend(samples)
    lines.append("# EOF")
    return "\n".join(lines) + "\n"


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


def describe(world: World) -> str:
    return json.dumps({"world": world.name, "now": world.now.isoformat()})

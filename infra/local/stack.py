"""The local AWS world: start, seed, deliver, stop.

    stack.py up WORLD_DIR [--state DIR] [--lambda] [--notify webhook|bot] [--feedback]
        [--hold SECONDS] [--email-incidents] [--digest] [--json]
                          [--lambda-instances N] [--lambda-retries N] [--lambda-retry-delays S,S]
                                                              start everything, seed the world, print the environment
    stack.py deliver [--state DIR] [--to STATE] [--via sns|eventbridge|both] [--invoke URL]
                                                              make the world's alarm change state; the function hears of it
                                                              through SNS (default), EventBridge (default with an organisation)
                                                              or both; prints the event file
    stack.py storm [--state DIR] [--alarms 20] [--load-balancers 3] [--notifications 200] [--within 10] [--json]
                                                              an alarm storm: more ALBs and alarms, many real state changes
    stack.py down [--state DIR]                               stop every process this stack started (by PID) and free its ports

Everything listens on 127.0.0.1 on free ports. The state directory (default
.world/) holds the logs, the PIDs, the generated data and `env`, a file of
`export` lines for the AWS SDK, Prometheus and Kubernetes endpoints.

moto's DescribeCluster returns the local API server's URL as the cluster
endpoint (the blackhole's for a private endpoint), so the bot's production
path, EKS token and all, works without KUBECONFIG. Prometheus also gets a
fault proxy in front (fault_proxy.py, PROMETHEUS_FAULT_URL) for tests that
set PROMETHEUS_URL to it.

With --lambda, the diagnose function runs as Lambda runs it for SNS: invoked
asynchronously by sns_bridge.py, on --lambda-instances warm instances polling
one emulator, retried --lambda-retries times (default 0, so a test can retry
by hand), then recorded in the failed-events queue (FAILED_EVENTS_QUEUE_URL).
EventBridge events go through the same bridge (POST /eventbridge).

With --notify bot --feedback, notify-slack records each diagnosis in the
feedback table and puts verdict buttons on it, and the feedback function runs
behind cargo-lambda's function URL (FEEDBACK_URL); the local Slack signs the
clicks it is told to make (POST /_recorder/interact) and sends them there.

A world's `changes` become CloudTrail's event history (LookupEvents, see
moto_world/cloudtrail_ext.py), loaded in the world's account and region with
the ARNs and ids moto gave its resources.

A world's `logs` are what its containers printed: the Kubernetes API serves
them as pods/log (kube_api.py --logs STATE/pod-logs.json), and with
`log_group` they are also in that CloudWatch Logs group as Container
Insights' Fluent Bit ships them (loaded through POST
/_alarm_triage/log-events), for Logs Insights (moto_world/logs_insights_ext.py).

A world with an `organisation` lives in a member account: everything of the
world is seeded there through a role assumed from the central account, where
the function runs with the credentials of its role alarm-triage-diagnose
(HOME_ACCOUNT_ID, MEMBER_ROLE_NAME); see docs/worlds.md.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import secrets
import shutil
import signal
import socket
import string
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))

import world as worlds  # noqa: E402

PYTHON = sys.executable
CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_EC2_METADATA_DISABLED": "true",
}
ALARM_TOPIC = "alarm-triage-alarms"
DIAGNOSIS_TOPIC = "alarm-triage-diagnoses"
CAPTURE_QUEUE = "alarm-triage-captured-alarms"
DIAGNOSIS_QUEUE = "alarm-triage-diagnoses"
FAILED_EVENTS_QUEUE = "alarm-triage-failed-events"
# Where the function finds Prometheus; set only by a world that has one.
PROMETHEUS_VARIABLES = ("PROMETHEUS_SERVICE", "PROMETHEUS_URL", "PROMETHEUS_SIGV4_REGION")
# As the template's EmailSubscription: only reports marked email=send (one per incident).
EMAIL_SUBSCRIBERS = {"oncall@example.com": {"email": ["send"]},
                     "escalations@example.com": {"email": ["send"], "classification": ["sustained"]}}
HOLD_QUEUE = "alarm-triage-hold"
EMAIL_INCIDENT_TABLE = "alarm-triage-email-incidents"


class StackError(Exception):
    pass


# --- processes -------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def log_tail(path: Path, lines: int = 20) -> str:
    if not path.exists():
        return "(no log)"
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


class Processes:
    """Processes started by this stack, recorded in STATE/pids as they start."""

    def __init__(self, state: Path):
        self.state = state
        self.file = state / "pids"

    def start(self, name: str, argv: list[str], env: dict[str, str] | None = None, cwd: Path | None = None,
              unset: tuple[str, ...] = ()) -> subprocess.Popen:
        """Starts `argv` with this environment on top of ours, less the `unset` variables."""
        log = open(self.state / f"{name}.log", "w")
        environment = {k: v for k, v in {**os.environ, **(env or {})}.items() if k not in unset}
        process = subprocess.Popen(
            argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env=environment, cwd=str(cwd or ROOT), start_new_session=True,
        )
        with open(self.file, "a") as pids:
            pids.write(f"{process.pid} {name}\n")
        return process

    def stop_all(self) -> list[str]:
        stopped = []
        if not self.file.exists():
            return stopped
        entries = [line.split(maxsplit=1) for line in self.file.read_text().splitlines() if line.strip()]
        for pid, name in reversed(entries):
            try:
                os.killpg(int(pid), signal.SIGTERM)
                stopped.append(name)
            except ProcessLookupError:
                continue
            except PermissionError:
                os.kill(int(pid), signal.SIGTERM)
        deadline = time.time() + 5
        for pid, _ in entries:
            while time.time() < deadline and _alive(int(pid)):
                time.sleep(0.05)
            if _alive(int(pid)):
                try:
                    os.killpg(int(pid), signal.SIGKILL)
                except ProcessLookupError:
                    pass
        self.file.unlink()
        return stopped


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        waited, _ = os.waitpid(pid, os.WNOHANG)
        return waited == 0
    except ChildProcessError:
        # Not our child (started by an earlier `up`): check /proc for a zombie.
        stat = Path(f"/proc/{pid}/stat")
        return stat.exists() and ") Z " not in stat.read_text()


def wait_http(name: str, url: str, process: subprocess.Popen, log: Path, timeout: float = 15.0) -> None:
    deadline = time.time() + timeout
    last_error: Exception | None = None
    while time.time() < deadline:
        if process.poll() is not None:
            raise StackError(f"{name} exited with code {process.returncode} while starting; last lines of {log}:\n{log_tail(log)}")
        try:
            with urllib.request.urlopen(url, timeout=1) as response:
                if response.status < 500:
                    return
        except (urllib.error.URLError, OSError) as error:
            last_error = error
        time.sleep(0.1)
    raise StackError(f"{name} did not answer {url} within {timeout:.0f} s ({last_error}); last lines of {log}:\n{log_tail(log)}")


# --- seeding ----------------------------------------------------------------------------

def clients(endpoint: str, region: str, names: tuple[str, ...] = ("ec2", "elbv2", "eks", "sns", "sqs", "cloudwatch", "iam"),
            credentials: dict[str, str] | None = None) -> dict[str, Any]:
    """Clients signed with the fake `testing` keys (the world's account, or the
    central account of an organisation), or with these STS credentials."""
    import boto3

    keys = credentials or {"AccessKeyId": "testing", "SecretAccessKey": "testing", "SessionToken": "testing"}
    session = boto3.session.Session(
        aws_access_key_id=keys["AccessKeyId"], aws_secret_access_key=keys["SecretAccessKey"],
        aws_session_token=keys["SessionToken"], region_name=region,
    )
    return {name: session.client(name, endpoint_url=endpoint) for name in names}


# --- organisation: a member account read from a central one ------------------------------

TRANSITIONS_TABLE = "alarm-triage-transitions"


def create_transitions_table(endpoint: str, region: str, credentials: dict[str, str]) -> str:
    """The table template.yaml creates with EventBridge intake (key `transition`)."""
    import boto3

    dynamodb = boto3.client("dynamodb", endpoint_url=endpoint, region_name=region,
                            aws_access_key_id=credentials["AccessKeyId"],
                            aws_secret_access_key=credentials["SecretAccessKey"],
                            aws_session_token=credentials["SessionToken"])
    dynamodb.create_table(TableName=TRANSITIONS_TABLE, BillingMode="PAY_PER_REQUEST",
                          AttributeDefinitions=[{"AttributeName": "transition", "AttributeType": "S"}],
                          KeySchema=[{"AttributeName": "transition", "KeyType": "HASH"}])
    return TRANSITIONS_TABLE

DIAGNOSE_ROLE = "alarm-triage-diagnose"
# What AWS Organizations creates in every account it creates, trusted by the management account.
BOOTSTRAP_ROLE = "OrganizationAccountAccessRole"
MEMBER_ROLE_ACTIONS = ["cloudwatch:DescribeAlarms", "cloudwatch:DescribeAlarmHistory", "cloudwatch:GetMetricData",
                       "cloudwatch:ListMetrics", "elasticloadbalancing:Describe*", "eks:DescribeCluster",
                       "ec2:DescribeInstances", "tag:GetResources", "logs:DescribeLogGroups", "logs:StartQuery",
                       "logs:GetQueryResults", "logs:StopQuery"]


def _policy(statements: list[dict[str, Any]]) -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": statements})


def assume(endpoint: str, region: str, role_arn: str, session: str, credentials: dict[str, str] | None = None,
           duration: int = 3600) -> dict[str, str]:
    """sts:AssumeRole through moto (which checks the trust policy, see
    moto_world/sts_ext.py); returns AccessKeyId, SecretAccessKey, SessionToken."""
    import botocore.exceptions

    sts = clients(endpoint, region, ("sts",), credentials)["sts"]
    try:
        answer = sts.assume_role(RoleArn=role_arn, RoleSessionName=session, DurationSeconds=duration)["Credentials"]
    except botocore.exceptions.ClientError as error:
        raise StackError(f"could not assume {role_arn}: {error}")
    return {k: answer[k] for k in ("AccessKeyId", "SecretAccessKey", "SessionToken")}


def set_up_organisation(world: worlds.World, endpoint: str) -> dict[str, Any]:
    """The roles of a world with an organisation. In the central account A
    (where keys moto did not issue act): `alarm-triage-diagnose`, the
    function's role. In the member account B: OrganizationAccountAccessRole,
    trusted by A's root as AWS Organizations makes it (created with moto's
    x-moto-account-id header, the one request that acts in B without B's
    credentials), then through it, with B's credentials, the member role
    (when `present`) that only alarm-triage-diagnose may assume. Returns the
    roles' ARNs, B's credentials (for seeding) and the function's."""
    org = worlds.organisation(world)
    assert org is not None
    region = world.spec["region"]
    home, member, reader = org["central_account"], org["member_account"], org["member_role"]["name"]
    iam = clients(endpoint, region, ("iam",))["iam"]
    diagnose_role = iam.create_role(
        RoleName=DIAGNOSE_ROLE, MaxSessionDuration=43200, Description="alarm-triage diagnose function",
        AssumeRolePolicyDocument=_policy([
            {"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"},
            # The local stack stands in for the Lambda service when it hands the function its credentials.
            {"Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam::{home}:root"}, "Action": "sts:AssumeRole"},
        ]),
    )["Role"]["Arn"]
    iam.put_role_policy(RoleName=DIAGNOSE_ROLE, PolicyName="read-member-accounts", PolicyDocument=_policy(
        [{"Effect": "Allow", "Action": "sts:AssumeRole", "Resource": f"arn:aws:iam::*:role/{reader}"}]))

    in_member = clients(endpoint, region, ("iam",))["iam"]
    in_member.meta.events.register("before-sign.iam.*", lambda request, **_: request.headers.__setitem__("x-moto-account-id", member))
    bootstrap_role = in_member.create_role(
        RoleName=BOOTSTRAP_ROLE, AssumeRolePolicyDocument=_policy(
            [{"Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam::{home}:root"}, "Action": "sts:AssumeRole"}]),
    )["Role"]["Arn"]
    member_credentials = assume(endpoint, region, bootstrap_role, "alarm-triage-local-seed")
    identity = clients(endpoint, region, ("sts",), member_credentials)["sts"].get_caller_identity()
    if identity["Account"] != member:
        raise StackError(f"the credentials of {bootstrap_role} act in {identity['Account']}, not in the member account {member}")

    member_role = f"arn:aws:iam::{member}:role/{reader}"
    if org["member_role"]["present"]:
        member_iam = clients(endpoint, region, ("iam",), member_credentials)["iam"]
        member_role = member_iam.create_role(
            RoleName=reader, Description="alarm-triage: read-only access for the central diagnose function",
            AssumeRolePolicyDocument=_policy(
                [{"Effect": "Allow", "Principal": {"AWS": diagnose_role}, "Action": "sts:AssumeRole"}]),
        )["Role"]["Arn"]
        member_iam.put_role_policy(RoleName=reader, PolicyName="alarm-triage-read", PolicyDocument=_policy(
            [{"Effect": "Allow", "Action": MEMBER_ROLE_ACTIONS, "Resource": "*"}]))
    function_credentials = assume(endpoint, region, diagnose_role, "diagnose", duration=43200)
    return {
        "public": {
            "home_account": home, "member_account": member, "diagnose_role_arn": diagnose_role,
            "bootstrap_role_arn": bootstrap_role, "member_role_name": reader, "member_role_arn": member_role,
            "member_role_present": org["member_role"]["present"],
        },
        "member_credentials": member_credentials,
        "function_credentials": function_credentials,
    }


def world_clients(endpoint: str, facts: dict[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
    """Clients acting in the world's own account: the `testing` keys, or for a
    member account of an organisation, credentials of its bootstrap role."""
    org = facts.get("organisation")
    if not org:
        return clients(endpoint, facts["region"], names)
    credentials = assume(endpoint, facts["region"], org["bootstrap_role_arn"], "alarm-triage-local")
    return clients(endpoint, facts["region"], names, credentials)


def admin(endpoint: str, route: str, body: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(
        f"{endpoint}/_alarm_triage/{route}", data=json.dumps(body, default=str).encode(),
        headers={"Content-Type": "application/json"}, method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as error:
        raise StackError(f"admin endpoint {route} refused the world: {error.read().decode(errors='replace')}")


def metric_datums(world: worlds.World, lb_dimension: str,
                  groups: list[tuple[dict[str, Any], str, Callable[[datetime], tuple[int, int]]]]) -> list[dict[str, Any]]:
    """The CloudWatch datapoints of one load balancer over the world's
    metrics_span: per target group (its spec, TargetGroup dimension, and its
    (healthy, unhealthy) target counts at a moment) and summed for the load
    balancer, as the ALB reports them. The ELB's own 5xx and rejected
    connections exist per load balancer only. Shared by seed() and the storm's
    extra load balancers. A network load balancer's are network_metric_datums'."""
    minutes = int(worlds.parse_duration(world.spec.get("metrics_span", "6h"), world.file, "metrics_span").total_seconds() // 60)
    if worlds.load_balancer_type(world) == "network":
        return network_metric_datums(world, lb_dimension, groups, minutes)
    lb_minutes: dict[Any, dict[str, Any]] = {}
    datums: list[dict[str, Any]] = []
    for tg, tg_dimension, hosts in groups:
        dims = [{"Name": "LoadBalancer", "Value": lb_dimension}, {"Name": "TargetGroup", "Value": tg_dimension}]
        for minute in worlds.target_group_minutes(world, tg, minutes):
            t = minute["timestamp"]
            healthy, unhealthy = hosts(t)
            if minute["requests"] > 0:
                datums.append({"MetricName": "TargetResponseTime", "Dimensions": dims, "Timestamp": t, "Values": minute["values"], "Counts": minute["counts"], "Unit": "Seconds"})
            datums.append({"MetricName": "RequestCount", "Dimensions": dims, "Timestamp": t, "Value": minute["requests"], "Unit": "Count"})
            datums.append({"MetricName": "HTTPCode_Target_5XX_Count", "Dimensions": dims, "Timestamp": t, "Value": minute["errors"], "Unit": "Count"})
            datums.append({"MetricName": "UnHealthyHostCount", "Dimensions": dims, "Timestamp": t, "Value": unhealthy, "Unit": "Count"})
            datums.append({"MetricName": "HealthyHostCount", "Dimensions": dims, "Timestamp": t, "Value": healthy, "Unit": "Count"})
            datums.append({"MetricName": "HTTPCode_Target_4XX_Count", "Dimensions": dims, "Timestamp": t, "Value": minute["errors_4xx"], "Unit": "Count"})
            total = lb_minutes.setdefault(t, {"requests": 0, "values": [], "counts": [], "errors": 0, "errors_4xx": 0,
                                              "elb_5xx": dict.fromkeys(worlds.ELB_5XX_CODES, 0)})
            total["requests"] += minute["requests"]
            total["values"] += minute["values"]
            total["counts"] += minute["counts"]
            total["errors"] += minute["errors"]
            total["errors_4xx"] += minute["errors_4xx"]
            for code, count in minute["elb_5xx"].items():
                total["elb_5xx"][code] += count
    lb_dims = [{"Name": "LoadBalancer", "Value": lb_dimension}]
    for t, total in sorted(lb_minutes.items()):
        if total["requests"] > 0:
            datums.append({"MetricName": "TargetResponseTime", "Dimensions": lb_dims, "Timestamp": t, "Values": total["values"], "Counts": total["counts"], "Unit": "Seconds"})
        datums.append({"MetricName": "RequestCount", "Dimensions": lb_dims, "Timestamp": t, "Value": total["requests"], "Unit": "Count"})
        datums.append({"MetricName": "HTTPCode_Target_5XX_Count", "Dimensions": lb_dims, "Timestamp": t, "Value": total["errors"], "Unit": "Count"})
        datums.append({"MetricName": "HTTPCode_Target_4XX_Count", "Dimensions": lb_dims, "Timestamp": t, "Value": total["errors_4xx"], "Unit": "Count"})
        for code, count in total["elb_5xx"].items():
            datums.append({"MetricName": f"HTTPCode_ELB_{code}_Count", "Dimensions": lb_dims, "Timestamp": t, "Value": count, "Unit": "Count"})
        datums.append({"MetricName": "HTTPCode_ELB_5XX_Count", "Dimensions": lb_dims, "Timestamp": t, "Value": sum(total["elb_5xx"].values()), "Unit": "Count"})
    for t, rejected in worlds.rejected_connection_minutes(world, minutes):
        datums.append({"MetricName": "RejectedConnectionCount", "Dimensions": lb_dims, "Timestamp": t, "Value": rejected, "Unit": "Count"})
    return datums


# Per target group and minute: (metric, key of worlds.flow_minutes, unit); all
# but ActiveFlowCount (a gauge, whose per-minute value is its average) are counts
# summed over the minute. Each is also summed over the groups for the load balancer.
NLB_FLOW_METRICS = (("NewFlowCount", "new_flows", "Count"), ("ActiveFlowCount", "active_flows", "Count"),
                    ("ProcessedBytes", "bytes", "Bytes"), ("TCP_Target_Reset_Count", "target_resets", "Count"))


def network_metric_datums(world: worlds.World, lb_dimension: str,
                          groups: list[tuple[dict[str, Any], str, Callable[[datetime], tuple[int, int]]]],
                          minutes: int) -> list[dict[str, Any]]:
    """A network load balancer's datapoints in AWS/NetworkELB, as it publishes
    them: flows, bytes and target resets per target group (LoadBalancer +
    TargetGroup) and summed per load balancer (LoadBalancer), healthy and
    unhealthy hosts per target group only, and the load balancer's own
    resets and port allocation errors per load balancer only. No requests,
    latency or HTTP codes: an NLB never sees them."""
    datums: list[dict[str, Any]] = []
    totals: dict[datetime, dict[str, float]] = {}
    for tg, tg_dimension, hosts in groups:
        dims = [{"Name": "LoadBalancer", "Value": lb_dimension}, {"Name": "TargetGroup", "Value": tg_dimension}]
        for minute in worlds.flow_minutes(world, tg, minutes):
            t = minute["timestamp"]
            total = totals.setdefault(t, dict.fromkeys((key for _, key, _ in NLB_FLOW_METRICS), 0.0))
            for metric, key, unit in NLB_FLOW_METRICS:
                datums.append({"MetricName": metric, "Dimensions": dims, "Timestamp": t, "Value": minute[key], "Unit": unit})
                total[key] += minute[key]
            healthy, unhealthy = hosts(t)
            datums.append({"MetricName": "HealthyHostCount", "Dimensions": dims, "Timestamp": t, "Value": healthy, "Unit": "Count"})
            datums.append({"MetricName": "UnHealthyHostCount", "Dimensions": dims, "Timestamp": t, "Value": unhealthy, "Unit": "Count"})
    lb_dims = [{"Name": "LoadBalancer", "Value": lb_dimension}]
    for t, total in sorted(totals.items()):
        for metric, key, unit in NLB_FLOW_METRICS:
            datums.append({"MetricName": metric, "Dimensions": lb_dims, "Timestamp": t, "Value": round(total[key], 1), "Unit": unit})
    for minute in worlds.nlb_load_balancer_minutes(world, minutes):
        for metric in worlds.NLB_LOAD_BALANCER_LEVELS.values():
            datums.append({"MetricName": metric, "Dimensions": lb_dims, "Timestamp": minute["timestamp"],
                           "Value": minute[metric], "Unit": "Count"})
    return datums


def health_check_arguments(tg: dict[str, Any], network: bool = False) -> dict[str, Any]:
    """CreateTargetGroup's health-check parameters from `health_check` (and the
    older `health_check_path`); what is not given is left to the defaults.
    A network load balancer's check is a TCP connection: no path, no matcher."""
    spec = tg.get("health_check") or {}
    if network:
        arguments: dict[str, Any] = {"HealthCheckProtocol": "TCP"}
        spec = {k: v for k, v in spec.items() if k not in ("protocol", "path", "matcher")}
    else:
        arguments = {"HealthCheckPath": spec.get("path", tg.get("health_check_path", "/healthz"))}
    names = {"protocol": "HealthCheckProtocol", "port": "HealthCheckPort", "interval": "HealthCheckIntervalSeconds",
             "timeout": "HealthCheckTimeoutSeconds", "healthy_threshold": "HealthyThresholdCount",
             "unhealthy_threshold": "UnhealthyThresholdCount"}
    for key, name in names.items():
        if key in spec:
            arguments[name] = str(spec[key]) if key == "port" else spec[key]
    if "matcher" in spec:
        arguments["Matcher"] = {"HttpCode": str(spec["matcher"])}
    return arguments


def alarm_dimensions(alarm: dict[str, Any], lb_dims: list[dict[str, str]], groups: list[dict[str, Any]]) -> list[dict[str, str]]:
    """The alarm's own `dimensions`, or the load balancer's (and its target group's)."""
    if alarm.get("dimensions"):
        return [{"Name": str(k), "Value": str(v)} for k, v in alarm["dimensions"].items()]
    dims = list(lb_dims)
    if alarm.get("target_group"):
        # An alarm on one target group: its own TargetGroup dimension beside the load balancer's.
        group = next(g for g in groups if g["name"] == alarm["target_group"])
        dims.append({"Name": "TargetGroup", "Value": group["dimension"]})
    return dims


def alarm_metric_arguments(alarm: dict[str, Any], dimensions: list[dict[str, str]],
                           namespace: str | None = None, lb_type: str = "application") -> dict[str, Any]:
    """What PutMetricAlarm watches: the alarm's metric (Namespace, MetricName,
    Statistic or ExtendedStatistic, Dimensions, Period), or for a metric-math
    alarm (`metrics`) its queries as `Metrics`: the expression, which returns
    data, and a MetricStat per metric with these dimensions and the alarm's
    period (PutMetricAlarm then takes no Period, MetricName or Dimensions of its own).
    The namespace is the alarm's, else that of its load balancer (`lb_type`)."""
    namespace = namespace or worlds.alarm_namespace(alarm, lb_type)
    period = int(alarm["period"])
    if "metrics" not in alarm:
        return {"Namespace": namespace, "MetricName": alarm["metric"], **statistic_argument(alarm),
                "Dimensions": dimensions, "Period": period}
    queries = []
    for query in worlds.alarm_queries(alarm, lb_type=lb_type):
        if "expression" in query:
            entry: dict[str, Any] = {"Id": query["id"], "Expression": query["expression"], "ReturnData": True}
        else:
            entry = {"Id": query["id"], "ReturnData": False, "MetricStat": {
                "Metric": {"Namespace": namespace, "MetricName": query["metric"], "Dimensions": dimensions},
                "Period": period, "Stat": query["stat"]}}
        if query.get("label"):
            entry["Label"] = query["label"]
        queries.append(entry)
    return {"Metrics": queries}


def target_group_attributes(tg: dict[str, Any], network: bool) -> list[dict[str, str]]:
    """ModifyTargetGroupAttributes' attributes: an ALB group's algorithm, slow
    start and deregistration delay; a network group's deregistration delay
    alone (an NLB has neither a routing algorithm nor slow start)."""
    attributes = tg.get("attributes", {})
    delay = {"Key": "deregistration_delay.timeout_seconds", "Value": str(attributes.get("deregistration_delay", 300))}
    if network:
        termination = str(bool(attributes.get("connection_termination", False))).lower()
        return [delay, {"Key": "deregistration_delay.connection_termination.enabled", "Value": termination}]
    return [
        {"Key": "load_balancing.algorithm.type", "Value": tg.get("algorithm", "round_robin")},
        {"Key": "slow_start.duration_seconds", "Value": str(attributes.get("slow_start", 0))},
        delay,
    ]


def listener_certificate(endpoint: str, region: str, credentials: dict[str, str] | None, name: str) -> str:
    """An ACM certificate for a TLS listener (ELBv2 refuses one ACM does not know)."""
    acm = clients(endpoint, region, ("acm",), credentials)["acm"]
    return acm.request_certificate(DomainName=f"{name}.example.internal")["CertificateArn"]


def create_listeners(elbv2: Any, lb_arn: str, groups: list[tuple[dict[str, Any], str]], network: bool,
                     certificate: Callable[[], str] | None = None) -> None:
    """An ALB: one HTTP listener forwarding to the first group, path rules for
    the others, as an Ingress would. An NLB: one listener per group on its
    `listener_port` (default its port), in the group's protocol (a TLS
    listener gets the ACM certificate `certificate()` makes)."""
    if network:
        for spec, arn in groups:
            protocol = spec.get("protocol", "TCP")
            extra: dict[str, Any] = {}
            if protocol == "TLS" and certificate is not None:
                extra["Certificates"] = [{"CertificateArn": certificate()}]
            elbv2.create_listener(LoadBalancerArn=lb_arn, Protocol=protocol, Port=int(spec.get("listener_port", spec.get("port", 80))),
                                  DefaultActions=[{"Type": "forward", "TargetGroupArn": arn}], **extra)
        return
    listener = elbv2.create_listener(
        LoadBalancerArn=lb_arn, Protocol="HTTP", Port=80,
        DefaultActions=[{"Type": "forward", "TargetGroupArn": groups[0][1]}],
    )["Listeners"][0]["ListenerArn"]
    for priority, (spec, arn) in enumerate(groups[1:], start=1):
        elbv2.create_rule(
            ListenerArn=listener, Priority=priority,
            Conditions=[{"Field": "path-pattern", "Values": [f"/{spec['name']}/*"]}],
            Actions=[{"Type": "forward", "TargetGroupArn": arn}],
        )


def seed(world: worlds.World, endpoint: str, member_credentials: dict[str, str] | None = None,
         logs: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Loads the world into moto through the public APIs (and the admin
    endpoints for what no public API can set). With `member_credentials`
    (a world with an organisation) everything of the world is made with them,
    in the member account, and what the function writes to (the diagnosis
    topic and queue, the failed-events queue) in the central account."""
    spec, region, account = world.spec, world.spec["region"], str(world.spec["account"])
    c = clients(endpoint, region, credentials=member_credentials)
    home = c if member_credentials is None else clients(endpoint, region)
    facts: dict[str, Any] = {"region": region, "account": account}

    vpc = c["ec2"].create_vpc(CidrBlock="10.20.0.0/16")["Vpc"]["VpcId"]
    # The first two zones the emulator offers for the region (ap-northeast-1
    # has no "b", say): a zone named by letter would be refused there.
    zones = [z["ZoneName"] for z in c["ec2"].describe_availability_zones()["AvailabilityZones"]][:2]
    subnets = [
        c["ec2"].create_subnet(VpcId=vpc, CidrBlock=f"10.20.{i}.0/24", AvailabilityZone=zone)["Subnet"]["SubnetId"]
        for i, zone in enumerate(zones)
    ]
    security_group_ids = {worlds.DEFAULT_SECURITY_GROUP: c["ec2"].create_security_group(
        GroupName=worlds.DEFAULT_SECURITY_GROUP, Description="alb", VpcId=vpc)["GroupId"]}
    # The world's other groups (the nodes', say), so a change can name them.
    for group in worlds.security_groups(world):
        security_group_ids[group["name"]] = c["ec2"].create_security_group(
            GroupName=group["name"], Description=group["description"], VpcId=vpc)["GroupId"]
    facts["security_groups"] = security_group_ids

    lb_spec = spec["load_balancer"]
    lb_type = worlds.load_balancer_type(world)
    network = lb_type == "network"
    lb = c["elbv2"].create_load_balancer(
        Name=lb_spec["name"], Subnets=subnets,
        SecurityGroups=[security_group_ids[name] for name in worlds.load_balancer_security_groups(world)],
        Scheme=lb_spec.get("scheme", "internet-facing"), Type=lb_type,
        Tags=[{"Key": k, "Value": str(v)} for k, v in (lb_spec.get("tags") or {}).items()] or [{"Key": "world", "Value": world.name}],
    )["LoadBalancers"][0]
    lb_arn = lb["LoadBalancerArn"]
    facts["load_balancer_arn"] = lb_arn
    facts["load_balancer_dimension"] = worlds.lb_dimension(lb_arn)
    facts["load_balancer_type"] = lb_type
    facts["metrics_namespace"] = worlds.metrics_namespace(world)

    groups = []
    measured = []
    for i, tg in enumerate(lb_spec["target_groups"]):
        target_type = tg.get("target_type", "instance")
        created = c["elbv2"].create_target_group(
            Name=tg["name"], Protocol=tg.get("protocol", "TCP" if network else "HTTP"), Port=int(tg.get("port", 80)),
            VpcId=vpc, TargetType=target_type, **health_check_arguments(tg, network),
        )["TargetGroups"][0]
        arn = created["TargetGroupArn"]
        if tg.get("tags"):
            c["elbv2"].add_tags(ResourceArns=[arn], Tags=[{"Key": k, "Value": str(v)} for k, v in tg["tags"].items()])
        c["elbv2"].modify_target_group_attributes(TargetGroupArn=arn, Attributes=target_group_attributes(tg, network))
        targets = []
        health = []
        for target in tg.get("targets", []):
            if target_type == "instance":
                instance = c["ec2"].run_instances(ImageId="ami-12c6146b", MinCount=1, MaxCount=1, SubnetId=subnets[0])["Instances"][0]["InstanceId"]
                target_id = instance
            else:
                target_id = target["ip"]
            targets.append({"Id": target_id, "Port": int(target.get("port", tg.get("port", 80)))})
            # What DescribeTargetHealth says now: the health, or the schedule's entry as of now.
            state, reason, description = worlds.target_health(world, target, world.now)
            if state != "healthy":
                health.append({"id": target_id, "state": state, "reason": reason, "description": description})
        if targets:
            c["elbv2"].register_targets(TargetGroupArn=arn, Targets=targets)
        if health:
            admin(endpoint, "target-health", {"target_group_arn": arn, "targets": health})
        groups.append({"name": tg["name"], "arn": arn, "dimension": worlds.tg_dimension(arn), "targets": [t["Id"] for t in targets]})
        measured.append((tg, worlds.tg_dimension(arn), worlds.host_counts(world, tg)))
    create_listeners(c["elbv2"], lb_arn, [(tg, g["arn"]) for tg, g in zip(lb_spec["target_groups"], groups)],
                     network, lambda: listener_certificate(endpoint, region, member_credentials, lb_spec["name"]))
    if world.spec.get("changes"):
        seed_cloudtrail(world, endpoint, c["elbv2"], facts, {g["name"]: g["arn"] for g in groups}, security_group_ids)
    lb_dims = [{"Name": "LoadBalancer", "Value": facts["load_balancer_dimension"]}]
    datums = metric_datums(world, facts["load_balancer_dimension"], measured)
    for start in range(0, len(datums), 500):
        c["cloudwatch"].put_metric_data(Namespace=worlds.metrics_namespace(world), MetricData=datums[start:start + 500])
    facts["target_groups"] = groups
    facts["metric_datums"] = len(datums)
    insights = worlds.container_insights_datums(world)
    for start in range(0, len(insights), 500):
        c["cloudwatch"].put_metric_data(Namespace=worlds.CONTAINER_INSIGHTS_NAMESPACE, MetricData=insights[start:start + 500])
    facts["container_insights_datums"] = len(insights)

    # Topics and queues: alarms go to the alarm topic; a capture queue keeps
    # the raw notifications for replay; diagnoses go to the diagnosis topic and its queue;
    # events the diagnose Lambda failed on, retries exhausted, go to the failed-events
    # queue (its on-failure destination).
    alarm_topic = c["sns"].create_topic(Name=ALARM_TOPIC)["TopicArn"]
    diagnosis_topic = home["sns"].create_topic(Name=DIAGNOSIS_TOPIC)["TopicArn"]
    capture_queue = c["sqs"].create_queue(QueueName=CAPTURE_QUEUE)["QueueUrl"]
    diagnosis_queue = home["sqs"].create_queue(QueueName=DIAGNOSIS_QUEUE)["QueueUrl"]
    failed_events_queue = home["sqs"].create_queue(QueueName=FAILED_EVENTS_QUEUE)["QueueUrl"]
    for owner, topic, queue in ((c, alarm_topic, capture_queue), (home, diagnosis_topic, diagnosis_queue)):
        queue_arn = owner["sqs"].get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        owner["sns"].subscribe(TopicArn=topic, Protocol="sqs", Endpoint=queue_arn)
    # Email subscribers of the diagnosis topic: one hears everything, one only
    # sustained alarms (a subscription filter policy on the message attributes).
    for address, policy in EMAIL_SUBSCRIBERS.items():
        attributes = {"FilterPolicy": json.dumps(policy)} if policy else {}
        home["sns"].subscribe(TopicArn=diagnosis_topic, Protocol="email", Endpoint=address, Attributes=attributes)
    facts.update(alarm_topic_arn=alarm_topic, diagnosis_topic_arn=diagnosis_topic, capture_queue_url=capture_queue,
                 diagnosis_queue_url=diagnosis_queue, failed_events_queue_url=failed_events_queue)

    alarm = spec["alarm"]
    c["cloudwatch"].put_metric_alarm(
        AlarmName=alarm["name"], AlarmDescription=alarm.get("description", ""),
        **alarm_metric_arguments(alarm, alarm_dimensions(alarm, lb_dims, groups), lb_type=lb_type),
        EvaluationPeriods=int(alarm["evaluation_periods"]),
        DatapointsToAlarm=int(alarm.get("datapoints_to_alarm", alarm["evaluation_periods"])),
        Threshold=float(alarm["threshold"]), ComparisonOperator=alarm["comparison"],
        TreatMissingData=alarm.get("treat_missing_data", "missing"),
        AlarmActions=[alarm_topic], OKActions=[alarm_topic],
    )
    history = worlds.history(world)
    if history:
        admin(endpoint, "alarm-history", {"account": account, "region": region, "alarm_name": alarm["name"], "items": history})
    facts["alarm_name"] = alarm["name"]
    facts["alarm_history_items"] = len(history)
    composite = worlds.composite_alarm(world)
    if composite:
        seed_composite_alarm(endpoint, c["cloudwatch"], world, composite, alarm_topic, account, region)
        facts["composite_alarm_name"] = composite["name"]

    cluster_spec = spec["cluster"]
    role = c["iam"].create_role(RoleName="eks-cluster", AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": []}))["Role"]["Arn"]
    private = cluster_spec.get("endpoint", "public") == "private"
    c["eks"].create_cluster(
        name=cluster_spec["name"], roleArn=role, version=str(cluster_spec.get("version", "1.31")),
        resourcesVpcConfig={"subnetIds": subnets, "endpointPublicAccess": not private, "endpointPrivateAccess": True},
    )
    facts["cluster_name"] = cluster_spec["name"]
    facts["cluster_endpoint_access"] = "private" if private else "public"
    group = worlds.log_group(world)
    if group:
        seed_log_group(endpoint, clients(endpoint, region, ("logs",), member_credentials)["logs"], facts, group, logs or [])
    return facts


# Events per admin request: a few MB of JSON at most.
LOG_EVENTS_PER_REQUEST = 20000


def seed_log_group(endpoint: str, logs_client: Any, facts: dict[str, Any], group: str, items: list[dict[str, Any]]) -> None:
    """The cluster's container log group (CreateLogGroup, moto's own), and
    every line of every container instance in it as Fluent Bit shipped it.
    The events go through the admin endpoint: PutLogEvents refuses events
    older than 14 days and wants each batch in order, and the lines were
    printed before the world was loaded."""
    logs_client.create_log_group(logGroupName=group)
    streams = worlds.log_group_streams(items)
    batch: list[dict[str, Any]] = []
    size = 0
    sent = 0
    for stream in streams:
        events = stream["events"] or []
        for start in range(0, max(len(events), 1), LOG_EVENTS_PER_REQUEST):
            chunk = events[start:start + LOG_EVENTS_PER_REQUEST]
            batch.append({"name": stream["name"], "events": chunk})
            size += len(chunk)
            if size >= LOG_EVENTS_PER_REQUEST:
                sent += admin(endpoint, "log-events", {"account": facts["account"], "region": facts["region"],
                                                       "log_group": group, "streams": batch})["recorded"]
                batch, size = [], 0
    if batch:
        sent += admin(endpoint, "log-events", {"account": facts["account"], "region": facts["region"],
                                               "log_group": group, "streams": batch})["recorded"]
    facts["log_group"] = group
    facts["log_streams"] = len(streams)
    facts["log_events"] = sent


def seed_cloudtrail(world: worlds.World, endpoint: str, elbv2: Any, facts: dict[str, Any],
                    target_groups: dict[str, str], security_groups: dict[str, str]) -> None:
    """The world's `changes` as CloudTrail's event history, in the world's
    account and region, with the identifiers AWS gave its resources."""
    listeners = {int(listener["Port"]): listener["ListenerArn"]
                 for listener in elbv2.describe_listeners(LoadBalancerArn=facts["load_balancer_arn"])["Listeners"]}
    ids = {"load_balancer": facts["load_balancer_arn"], "target_groups": target_groups, "listeners": listeners,
           "security_groups": security_groups}
    events = worlds.cloudtrail_events(world, ids)
    lag = worlds.cloudtrail_lag(world).total_seconds()
    admin(endpoint, "cloudtrail-events", {"account": facts["account"], "region": facts["region"], "lag_seconds": lag, "events": events})
    facts["cloudtrail_events"] = len(events)
    facts["cloudtrail_lag_seconds"] = lag


def composite_reason(child_arn: str, child_state: str, at: datetime) -> str:
    """A composite's state reason as CloudWatch writes it."""
    at = at.astimezone(timezone.utc)
    return f"{child_arn} transitioned to {child_state} at {at:%A} {at.day} {at:%B}, {at:%Y %H:%M:%S} UTC"


def seed_composite_alarm(endpoint: str, cloudwatch: Any, world: worlds.World, composite: dict[str, Any],
                         alarm_topic: str, account: str, region: str) -> None:
    """The composite alarm ALARM("<the world's alarm>"), notifying the alarm
    topic like its child, with a history that follows the child's."""
    cloudwatch.put_composite_alarm(
        AlarmName=composite["name"], AlarmDescription=composite["description"], AlarmRule=composite["rule"],
        AlarmActions=[alarm_topic], OKActions=[alarm_topic],
    )
    child_arn = cloudwatch.describe_alarms(AlarmNames=[composite["child"]])["MetricAlarms"][0]["AlarmArn"]
    items = worlds.composite_history(world)
    for item in items:
        item["reason"] = composite_reason(child_arn, item.pop("child_state"), datetime.fromisoformat(item["timestamp"]))
    if items:
        admin(endpoint, "alarm-history", {"account": account, "region": region, "alarm_name": composite["name"], "items": items})


# --- commands ---------------------------------------------------------------------------

def up(world_dir: Path, state: Path, with_lambda: bool, as_json: bool, lambda_env: list[str],
       notify: str | None = None, notify_env: list[str] | None = None, lambda_instances: int = 1,
       lambda_retries: int = 0, lambda_retry_delays: str = "1,2", feedback: bool = False,
       hold: int = 0, email_incidents: bool = False, digest: bool = False) -> int:
    started = time.time()
    if lambda_instances < 1:
        raise StackError("--lambda-instances must be at least 1")
    if (state / "pids").exists():
        processes = Processes(state)
        entries = [line.split()[0] for line in (state / "pids").read_text().splitlines() if line.strip()]
        if any(_alive(int(pid)) for pid in entries):
            raise StackError(f"a stack is already running from {state}; run `stack.py down --state {state}` first")
        processes.stop_all()
    world = worlds.load(world_dir)
    logs = worlds.pod_logs(world)
    if state.exists():
        shutil.rmtree(state)
    state.mkdir(parents=True)
    processes = Processes(state)
    try:
        env = dict(CREDENTIALS, AWS_REGION=world.spec["region"], AWS_DEFAULT_REGION=world.spec["region"])
        organisation = worlds.organisation(world)

        moto_port = free_port()
        if organisation:
            # Two accounts: no MOTO_ACCOUNT_ID (it would pin every request to one);
            # the fake keys act in the central account, assumed roles in theirs.
            moto = processes.start(
                "moto", [PYTHON, "-m", "moto_world.server", "--port", str(moto_port),
                         "--home-account", organisation["central_account"]],
                env=CREDENTIALS, cwd=HERE, unset=("MOTO_ACCOUNT_ID",),
            )
        else:
            moto = processes.start(
                "moto", [PYTHON, "-m", "moto_world.server", "--port", str(moto_port)],
                env={**CREDENTIALS, "MOTO_ACCOUNT_ID": str(world.spec["account"])}, cwd=HERE,
            )
        endpoint = f"http://127.0.0.1:{moto_port}"
        wait_http("moto", f"{endpoint}/_alarm_triage/health", moto, state / "moto.log")
        env["AWS_ENDPOINT_URL"] = endpoint

        prometheus_url = start_prometheus(world, state, processes)
        if prometheus_url:
            env["PROMETHEUS_LOCAL_URL"] = prometheus_url  # for people; the bot reads it through the API server (PROMETHEUS_SERVICE)
            env["PROMETHEUS_FAULT_URL"] = start_fault_proxy(state, processes, "prometheus-faults", prometheus_url)

        if organisation:
            accounts = set_up_organisation(world, endpoint)
            facts = seed(world, endpoint, accounts["member_credentials"], logs)
            facts["organisation"] = accounts["public"]
            # The function runs in the central account with its role's credentials
            # and reads the member account through the member role.
            function_credentials = accounts["function_credentials"]
            env.update(AWS_ACCESS_KEY_ID=function_credentials["AccessKeyId"],
                       AWS_SECRET_ACCESS_KEY=function_credentials["SecretAccessKey"],
                       AWS_SESSION_TOKEN=function_credentials["SessionToken"],
                       HOME_ACCOUNT_ID=organisation["central_account"],
                       MEMBER_ROLE_NAME=organisation["member_role"]["name"],
                       MEMBER_ACCOUNT_ID=organisation["member_account"])
            # SNS and EventBridge may both deliver a transition: the ledger
            # that lets only the first publish, in the central account.
            env["TRANSITIONS_TABLE"] = create_transitions_table(endpoint, facts["region"], function_credentials)
        else:
            facts = seed(world, endpoint, logs=logs)
        facts["log_lines"] = sum(len(item["lines"]) for item in logs)

        kube_url = start_kubernetes(world, state, processes, prometheus_url, {g["name"]: g["arn"] for g in facts["target_groups"]}, logs)
        env["KUBE_API_URL"] = kube_url
        # What EKS would answer: DescribeCluster's endpoint is this API server.
        admin(endpoint, "eks-endpoint", {"name": facts["cluster_name"], "endpoint": kube_url,
                                         "account": facts["account"], "region": facts["region"]})
        env["KUBECONFIG"] = str(write_kubeconfig(state, kube_url, world.spec["cluster"]["name"]))
        env["EKS_CLUSTER_NAME"] = facts["cluster_name"]
        env["ALARM_TOPIC_ARN"] = facts["alarm_topic_arn"]
        env["DIAGNOSIS_TOPIC_ARN"] = facts["diagnosis_topic_arn"]
        env["DIAGNOSIS_QUEUE_URL"] = facts["diagnosis_queue_url"]
        env["CAPTURE_QUEUE_URL"] = facts["capture_queue_url"]
        env["FAILED_EVENTS_QUEUE_URL"] = facts["failed_events_queue_url"]
        amp = world.spec.get("prometheus", {}).get("amp")
        if amp and prometheus_url:
            # Amazon Managed Service for Prometheus: the bot queries the workspace
            # endpoint directly, SigV4-signed; the proxy verifies every signature.
            env["PROMETHEUS_URL"] = start_aps_proxy(state, processes, prometheus_url, amp["workspace"], world.spec["region"])
            env["PROMETHEUS_SIGV4_REGION"] = world.spec["region"]
        elif world.spec.get("prometheus", {}).get("service"):
            env["PROMETHEUS_SERVICE"] = world.spec["prometheus"]["service"]

        if email_incidents:
            env["EMAIL_INCIDENT_TABLE"] = create_email_incident_table(endpoint, facts["region"])
        if hold:
            home_sqs = clients(endpoint, facts["region"], ("sqs",))["sqs"]
            env["HOLD_QUEUE_URL"] = home_sqs.create_queue(QueueName=HOLD_QUEUE)["QueueUrl"]
            env["HOLD_TRANSIENT_SECONDS"] = str(hold)
        if with_lambda:
            env["LAMBDA_INVOKE_URL"] = start_function(
                state, processes, "diagnose", env, facts, facts["alarm_topic_arn"], lambda_env, instances=lambda_instances,
                retries=lambda_retries, retry_delays=lambda_retry_delays, on_failure_queue=facts["failed_events_queue_url"],
                subscribe="sns" in VIA[default_via(facts)],
            )
            if hold:
                # The hold queue's event source mapping.
                processes.start("hold-source", [
                    PYTHON, str(HERE / "sqs_source.py"), "--queue", env["HOLD_QUEUE_URL"], "--endpoint", endpoint,
                    "--invoke", f"{env['LAMBDA_INVOKE_URL']}/2015-03-31/functions/_/invocations",
                    "--log", str(state / "hold-invocations.jsonl"), "--region", facts["region"],
                ], env=CREDENTIALS)
        if feedback and notify != "bot":
            raise StackError("--feedback needs --notify bot: buttons and chat.update need a bot token")
        if notify:
            slack_url, slack_env = start_slack(state, processes, env, facts, notify, feedback)
            env["SLACK_LOCAL_URL"] = slack_url
            env["NOTIFY_INVOKE_URL"] = start_function(
                state, processes, "notify-slack", {**env, **slack_env}, facts, facts["diagnosis_topic_arn"], notify_env or [],
            )
        if feedback:
            env["FEEDBACK_URL"] = start_feedback(state, processes, {**env, **slack_env}, slack_url)
        if digest:
            if not notify:
                raise StackError("--digest needs --notify: it posts to the local Slack")
            env["DIGEST_INVOKE_URL"] = start_digest(state, processes, {**env, **slack_env})

        facts["world"] = world.name
        facts["now"] = world.now.isoformat()
        facts["startup_seconds"] = round(time.time() - started, 2)
        (state / "facts.json").write_text(json.dumps(facts, indent=2, default=str))
        (state / "env").write_text("".join(f"export {k}={_shell(v)}\n" for k, v in sorted(env.items())))
        (state / "world").write_text(str(world_dir.resolve()))
    except BaseException:
        processes.stop_all()
        raise
    if as_json:
        print(json.dumps({"env": env, "facts": facts, "state": str(state)}, default=str))
    else:
        print((state / "env").read_text(), end="")
        print(f"# world {world.name} is up in {facts['startup_seconds']} s; `source {state}/env` to use it", file=sys.stderr)
    return 0


def _shell(value: str) -> str:
    return "'" + str(value).replace("'", "'\\''") + "'"


def start_prometheus(world: worlds.World, state: Path, processes: Processes) -> str | None:
    text = worlds.openmetrics(world)
    if not text:
        return None
    for tool in ("prometheus", "promtool"):
        if not shutil.which(tool):
            raise StackError(f"{tool} is not installed; run scripts/setup.sh (Debian package prometheus)")
    data = state / "prometheus-data"
    data.mkdir()
    source = state / "series.om"
    source.write_text(text)
    backfill = subprocess.run(
        ["promtool", "tsdb", "create-blocks-from", "openmetrics", str(source), str(data)],
        capture_output=True, text=True,
    )
    if backfill.returncode != 0:
        raise StackError(f"promtool could not backfill the world's series: {backfill.stderr[-2000:]}")
    config = state / "prometheus.yml"
    config.write_text("global:\n  scrape_interval: 1m\nscrape_configs: []\n")
    port = free_port()
    process = processes.start(
        "prometheus",
        ["prometheus", f"--config.file={config}", f"--storage.tsdb.path={data}", f"--web.listen-address=127.0.0.1:{port}",
         "--storage.tsdb.retention.time=30d", "--web.enable-lifecycle"],
    )
    url = f"http://127.0.0.1:{port}"
    wait_http("prometheus", f"{url}/-/ready", process, state / "prometheus.log", timeout=20)
    return url


def start_aps_proxy(state: Path, processes: Processes, target: str, workspace: str, region: str) -> str:
    """aps_proxy.py (an AMP workspace that verifies SigV4) in front of Prometheus; returns the workspace URL."""
    port = free_port()
    process = processes.start("aps-proxy", [PYTHON, str(HERE / "aps_proxy.py"), "--port", str(port), "--target", target,
                                            "--workspace", workspace, "--region", region], env=CREDENTIALS)
    url = f"http://127.0.0.1:{port}"
    wait_http("aps-proxy", f"{url}/_alarm_triage/calls", process, state / "aps-proxy.log")
    return f"{url}/workspaces/{workspace}"


def start_fault_proxy(state: Path, processes: Processes, name: str, target: str) -> str:
    """fault_proxy.py in front of `target`; returns its URL."""
    port = free_port()
    process = processes.start(name, [PYTHON, str(HERE / "fault_proxy.py"), "--port", str(port), "--target", target])
    url = f"http://127.0.0.1:{port}"
    wait_http(name, f"{url}/_alarm_triage/calls", process, state / f"{name}.log")
    return url


def start_kubernetes(world: worlds.World, state: Path, processes: Processes, prometheus_url: str | None,
                     target_group_arns: dict[str, str], logs: list[dict[str, Any]] | None = None) -> str:
    manifests = state / "kubernetes"
    worlds.render_manifests(world, manifests, target_group_arns)
    spec = world.spec.get("kubernetes") or {}
    port = free_port()
    if world.spec["cluster"].get("endpoint") == "private":
        # A private endpoint from outside the VPC: connections are accepted by
        # nothing and answered by nobody, so clients time out as they would.
        process = processes.start("kube-api", [PYTHON, str(HERE / "blackhole.py"), "--port", str(port)])
        time.sleep(0.2)
        if process.poll() is not None:
            raise StackError(f"blackhole exited; last lines:\n{log_tail(state / 'kube-api.log')}")
        return f"http://127.0.0.1:{port}"
    argv = [PYTHON, str(HERE / "kube_api.py"), "--port", str(port), "--manifests", str(manifests), "--auth", spec.get("auth", "ok")]
    if spec.get("forbid"):
        argv += ["--forbid", *spec["forbid"]]
    if logs:
        # What the containers printed, for pods/log (a pod that is gone has no log to serve).
        path = state / "pod-logs.json"
        path.write_text(json.dumps({"containers": [
            {k: item[k] for k in ("namespace", "pod", "container", "previous", "lines")} for item in logs if not item["deleted"]
        ]}, ensure_ascii=False))
        argv += ["--logs", str(path)]
    prometheus = world.spec.get("prometheus") or {}
    if prometheus_url and prometheus.get("service"):
        argv += ["--prometheus", prometheus_url, "--prometheus-service", prometheus["service"]]
    process = processes.start("kube-api", argv)
    url = f"http://127.0.0.1:{port}"
    wait_http("kube-api", f"{url}/healthz", process, state / "kube-api.log")
    return url


def write_kubeconfig(state: Path, url: str, cluster: str) -> Path:
    """A kubeconfig for people (kubectl) and local runs; the token has the EKS
    format but no real signature behind it."""
    presigned = f"https://sts.amazonaws.com/?Action=GetCallerIdentity&Version=2011-06-15&X-Amz-Signature=local-{cluster}"
    token = "k8s-aws-v1." + base64.urlsafe_b64encode(presigned.encode()).decode().rstrip("=")
    path = state / "kubeconfig"
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": cluster,
        "clusters": [{"name": cluster, "cluster": {"server": url}}],
        "users": [{"name": "alarm-triage", "user": {"token": token}}],
        "contexts": [{"name": cluster, "context": {"cluster": cluster, "user": "alarm-triage"}}],
    }, indent=2))
    return path


def start_emulator(state: Path, processes: Processes, name: str) -> str:
    """One cargo-lambda runtime emulator (one function each); returns its URL."""
    cargo_lambda = shutil.which("cargo-lambda", path=str(Path(PYTHON).parent) + os.pathsep + os.environ.get("PATH", ""))
    if not cargo_lambda:
        raise StackError("cargo-lambda is not installed in the virtualenv; run scripts/setup.sh")
    runtime_port = free_port()
    emulator = processes.start(
        f"{name}-emulator",
        [cargo_lambda, "lambda", "watch", "--only-lambda-apis", "-A", "127.0.0.1", "-P", str(runtime_port)],
    )
    deadline = time.time() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", runtime_port), timeout=0.5).close()
            return f"http://127.0.0.1:{runtime_port}"
        except OSError:
            if emulator.poll() is not None or time.time() > deadline:
                raise StackError(f"the Lambda runtime emulator did not start; last lines:\n{log_tail(state / f'{name}-emulator.log')}")
            time.sleep(0.2)


def start_function(state: Path, processes: Processes, name: str, env: dict[str, str], facts: dict[str, Any],
                   topic_arn: str, overrides: list[str], instances: int = 1, retries: int = 0,
                   retry_delays: str = "1,2", on_failure_queue: str | None = None, subscribe: bool = True) -> str:
    """`instances` copies of a function binary polling one runtime emulator
    (warm instances, as Lambda scales out), and the SNS HTTP subscription on
    `topic_arn` that invokes them with Lambda SNS events, as an SNS -> Lambda
    subscription would: asynchronously, up to `instances` at a time, with
    `retries` retries and the failed event sent to `on_failure_queue`. The
    same bridge takes EventBridge events (POST /eventbridge); without
    `subscribe` it is not subscribed to the topic (`deliver --via` wires it).
    Returns the invoke URL."""
    variable = f"{name.upper().replace('-', '_')}_BINARY"
    binary = Path(os.environ.get(variable, ROOT / "target" / "debug" / name))
    if not binary.exists():
        raise StackError(f"{binary} does not exist; build it first (cargo build -p {name}) or set {variable}")
    invoke = start_emulator(state, processes, name)
    function_env = {
        **env,
        "AWS_LAMBDA_FUNCTION_NAME": "_",
        "AWS_LAMBDA_FUNCTION_VERSION": "1",
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "256",
        "AWS_LAMBDA_RUNTIME_API": f"{invoke}/.rt",
        "RUST_LOG": env.get("RUST_LOG", "info"),
    }
    for item in overrides:
        key, _, value = item.partition("=")
        # ${VAR} names a variable of the world's env, known only once it is up
        # (e.g. PROMETHEUS_URL=${PROMETHEUS_FAULT_URL}).
        value = string.Template(value).safe_substitute(env)
        if value:
            function_env[key] = value
        else:
            function_env.pop(key, None)
    # A removed variable, or a Prometheus the world does not have, must not come
    # back from the caller's shell (one that sourced another world's env).
    unset = tuple(key for key in {*(item.partition("=")[0] for item in overrides), *PROMETHEUS_VARIABLES} if key not in function_env)
    # One instance logs to NAME.log as it always did; several to NAME-1.log, NAME-2.log, ...
    for i in range(1, instances + 1):
        processes.start(name if instances == 1 else f"{name}-{i}", [str(binary)], env=function_env, unset=unset)
    bridge_port = free_port()
    log = "invocations.jsonl" if name == "diagnose" else f"{name}-invocations.jsonl"
    argv = [
        PYTHON, str(HERE / "sns_bridge.py"), "--port", str(bridge_port), "--log", str(state / log),
        "--invoke", f"{invoke}/2015-03-31/functions/_/invocations", "--concurrency", str(instances),
        "--max-retries", str(retries), "--retry-delays", retry_delays,
        "--function-arn", f"arn:aws:lambda:{facts['region']}:{function_account(facts)}:function:{name}:$LATEST",
    ]
    if on_failure_queue:
        argv += ["--on-failure-queue", on_failure_queue, "--endpoint", env["AWS_ENDPOINT_URL"]]
    bridge = processes.start(f"{name}-bridge" if name != "diagnose" else "sns-bridge", argv, env=CREDENTIALS)
    wait_http(f"{name} SNS bridge", f"http://127.0.0.1:{bridge_port}/healthz", bridge, state / f"{name}-bridge.log")
    if name == "diagnose":
        facts["diagnose_bridge_url"] = f"http://127.0.0.1:{bridge_port}"
        facts["sns_wired"] = subscribe
    if subscribe:
        # The alarm topic lives in the world's account (a member account's, in an organisation).
        owner = world_clients(env["AWS_ENDPOINT_URL"], facts, ("sns",)) if topic_arn == facts["alarm_topic_arn"] else clients(env["AWS_ENDPOINT_URL"], facts["region"])
        owner["sns"].subscribe(TopicArn=topic_arn, Protocol="http", Endpoint=f"http://127.0.0.1:{bridge_port}/sns")
    return invoke


def create_email_incident_table(endpoint: str, region: str) -> str:
    """The table that keeps one email per incident (as the template's EmailIncidentsTable)."""
    dynamodb = clients(endpoint, region, ("dynamodb",))["dynamodb"]
    dynamodb.create_table(TableName=EMAIL_INCIDENT_TABLE, BillingMode="PAY_PER_REQUEST",
                          AttributeDefinitions=[{"AttributeName": "thread_key", "AttributeType": "S"}],
                          KeySchema=[{"AttributeName": "thread_key", "KeyType": "HASH"}])
    dynamodb.update_time_to_live(TableName=EMAIL_INCIDENT_TABLE,
                                 TimeToLiveSpecification={"Enabled": True, "AttributeName": "expires_at"})
    return EMAIL_INCIDENT_TABLE


def function_account(facts: dict[str, Any]) -> str:
    """The account the functions run in: the world's, or the organisation's central account."""
    return (facts.get("organisation") or {}).get("home_account", facts["account"])


# --- Slack --------------------------------------------------------------------------------

SLACK_SECRET_ID = "alarm-triage/slack"
SLACK_SECRET_PARAMETER = "/alarm-triage/slack-bot"
SLACK_THREAD_TABLE = "alarm-triage-slack-threads"
FEEDBACK_TABLE = "alarm-triage-feedback"
SLACK_CHANNELS = {"#alerts": "C0ALERTS01", "#oncall": "C0ONCALL01"}
# Flapping and everything else to #alerts; a critical sustained alarm also pages #oncall.
SLACK_ROUTES = [
    {"classification": ["sustained"], "severity": ["critical"], "channel": "#oncall", "mention": "here", "continue": True},
    {"channel": "#alerts"},
]


def start_slack(state: Path, processes: Processes, env: dict[str, str], facts: dict[str, Any], mode: str,
                feedback: bool = False) -> tuple[str, dict[str, str]]:
    """The local Slack, the secret that points at it (Secrets Manager for
    webhooks, an SSM SecureString for the bot token and the app's signing
    secret) and, with a bot token, the DynamoDB table threads are remembered
    in (and, with `feedback`, the feedback table). Returns its URL and notify-slack's environment."""
    webhooks = {channel: f"/services/T0LOCAL/B0{channel.strip('#').upper()}/{secrets.token_hex(12)}" for channel in SLACK_CHANNELS}
    bot_token = f"xoxb-local-{secrets.token_hex(12)}"
    signing_secret = secrets.token_hex(16)
    config = state / "slack.json"
    config.write_text(json.dumps({"webhooks": {path: channel for channel, path in webhooks.items()}, "bot_token": bot_token,
                                  "channels": SLACK_CHANNELS, "signing_secret": signing_secret}))
    config.chmod(0o600)
    port = free_port()
    process = processes.start("slack-api", [PYTHON, str(HERE / "slack_api.py"), "--port", str(port), "--config", str(config)])
    url = f"http://127.0.0.1:{port}"
    wait_http("slack-api", f"{url}/healthz", process, state / "slack-api.log")
    facts["slack_secrets"] = [bot_token, signing_secret, *(path.rsplit("/", 1)[1] for path in webhooks.values())]
    facts["slack_mode"] = mode
    c = clients(env["AWS_ENDPOINT_URL"], facts["region"], ("secretsmanager", "ssm", "dynamodb"))
    notify_env = {
        "SLACK_ROUTES": json.dumps(SLACK_ROUTES),
        "SLACK_CHANNEL": "#alerts",
        "SLACK_API_URL": f"{url}/api",
    }
    if mode == "webhook":
        c["secretsmanager"].create_secret(Name=SLACK_SECRET_ID, SecretString=json.dumps({"webhooks": {ch: url + path for ch, path in webhooks.items()}}))
        notify_env["SLACK_SECRET_ID"] = SLACK_SECRET_ID
    else:
        c["ssm"].put_parameter(Name=SLACK_SECRET_PARAMETER, Type="SecureString",
                               Value=json.dumps({"bot_token": bot_token, "signing_secret": signing_secret}))
        c["dynamodb"].create_table(
            TableName=SLACK_THREAD_TABLE, BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[{"AttributeName": "thread_key", "AttributeType": "S"}],
            KeySchema=[{"AttributeName": "thread_key", "KeyType": "HASH"}],
        )
        c["dynamodb"].update_time_to_live(TableName=SLACK_THREAD_TABLE, TimeToLiveSpecification={"Enabled": True, "AttributeName": "expires_at"})
        notify_env.update(SLACK_SECRET_PARAMETER=SLACK_SECRET_PARAMETER, SLACK_THREAD_TABLE=SLACK_THREAD_TABLE)
        if feedback:
            create_feedback_table(c["dynamodb"])
            notify_env["FEEDBACK_TABLE"] = FEEDBACK_TABLE
    return url, notify_env


def create_feedback_table(dynamodb: Any) -> None:
    """The feedback table as the template creates it: diagnosis_id + entry, the
    sparse by_service index (service, answered_at), TTL on expires_at."""
    dynamodb.create_table(
        TableName=FEEDBACK_TABLE, BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": "diagnosis_id", "AttributeType": "S"},
                              {"AttributeName": "entry", "AttributeType": "S"},
                              {"AttributeName": "service", "AttributeType": "S"},
                              {"AttributeName": "answered_at", "AttributeType": "N"}],
        KeySchema=[{"AttributeName": "diagnosis_id", "KeyType": "HASH"}, {"AttributeName": "entry", "KeyType": "RANGE"}],
        GlobalSecondaryIndexes=[{
            "IndexName": "by_service",
            "KeySchema": [{"AttributeName": "service", "KeyType": "HASH"}, {"AttributeName": "answered_at", "KeyType": "RANGE"}],
            "Projection": {"ProjectionType": "ALL"},
        }],
    )
    dynamodb.update_time_to_live(TableName=FEEDBACK_TABLE, TimeToLiveSpecification={"Enabled": True, "AttributeName": "expires_at"})


def start_feedback(state: Path, processes: Processes, env: dict[str, str], slack_url: str) -> str:
    """The feedback function behind cargo-lambda's function URL, and the local
    Slack's interactivity URL pointed at it (as the Slack app's settings
    would be). Returns the URL."""
    binary = Path(os.environ.get("FEEDBACK_BINARY", ROOT / "target" / "debug" / "feedback"))
    if not binary.exists():
        raise StackError(f"{binary} does not exist; build it first (cargo build -p feedback) or set FEEDBACK_BINARY")
    invoke = start_emulator(state, processes, "feedback")
    function_env = {
        # The SDK's endpoint, region and (dummy) credentials; nothing of the world's Kubernetes or Prometheus.
        **{k: v for k, v in env.items() if k.startswith("AWS_")},
        "SLACK_SECRET_PARAMETER": env["SLACK_SECRET_PARAMETER"], "FEEDBACK_TABLE": FEEDBACK_TABLE,
        "SLACK_API_URL": env["SLACK_API_URL"],
        "AWS_LAMBDA_FUNCTION_NAME": "_", "AWS_LAMBDA_FUNCTION_VERSION": "1", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "128",
        "AWS_LAMBDA_RUNTIME_API": f"{invoke}/.rt", "RUST_LOG": env.get("RUST_LOG", "info"),
    }
    processes.start("feedback", [str(binary)], env=function_env)
    url = f"{invoke}/lambda-url/_/"
    request = urllib.request.Request(f"{slack_url}/_recorder/interactivity", data=json.dumps({"url": url}).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
    urllib.request.urlopen(request, timeout=5).read()
    return url


def start_digest(state: Path, processes: Processes, env: dict[str, str]) -> str:
    """The digest function under cargo-lambda's emulator, reading the world's
    alarms and posting to the local Slack's #alerts (what EventBridge
    Scheduler would invoke). Returns its invoke URL."""
    binary = Path(os.environ.get("DIGEST_BINARY", ROOT / "target" / "debug" / "noise-digest"))
    if not binary.exists():
        raise StackError(f"{binary} does not exist; build it first (cargo build -p noise-digest) or set DIGEST_BINARY")
    invoke = start_emulator(state, processes, "digest")
    function_env = {
        **{k: v for k, v in env.items() if k.startswith("AWS_")},
        "SLACK_API_URL": env["SLACK_API_URL"], "DIGEST_CHANNEL": "#alerts",
        "AWS_LAMBDA_FUNCTION_NAME": "_", "AWS_LAMBDA_FUNCTION_VERSION": "1", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "256",
        "AWS_LAMBDA_RUNTIME_API": f"{invoke}/.rt", "RUST_LOG": env.get("RUST_LOG", "info"),
    }
    for key in ("SLACK_SECRET_PARAMETER", "SLACK_SECRET_ID", "SLACK_THREAD_TABLE"):
        if env.get(key):
            function_env[key] = env[key]
    processes.start("digest", [str(binary)], env=function_env)
    return f"{invoke}/2015-03-31/functions/_/invocations"


# --- delivery: SNS and EventBridge ---------------------------------------------------------

# What reaches the function for each `deliver --via`.
VIA = {"sns": ("sns",), "eventbridge": ("eventbridge",), "both": ("sns", "eventbridge")}
EVENTBRIDGE_DETAIL_TYPE = "CloudWatch Alarm State Change"
COMPARISON_WORDS = {
    "GreaterThanThreshold": "greater than", "GreaterThanOrEqualToThreshold": "greater than or equal to",
    "LessThanThreshold": "less than", "LessThanOrEqualToThreshold": "less than or equal to",
}
COMPARISON_TESTS: dict[str, Callable[[float, float], bool]] = {
    "GreaterThanThreshold": lambda v, t: v > t, "GreaterThanOrEqualToThreshold": lambda v, t: v >= t,
    "LessThanThreshold": lambda v, t: v < t, "LessThanOrEqualToThreshold": lambda v, t: v <= t,
}


def default_via(facts: dict[str, Any]) -> str:
    """SNS for a single account (the alarm's action), EventBridge for a member
    account of an organisation (the central bus sees every state change)."""
    return "eventbridge" if facts.get("organisation") else "sns"


def cloudwatch_time(at: datetime) -> str:
    """2026-11-27T14:32:10.482+0000, as CloudWatch writes times into notifications and events."""
    at = at.astimezone(timezone.utc)
    return at.strftime("%Y-%m-%dT%H:%M:%S.") + f"{at.microsecond // 1000:03d}+0000"


def _describe_alarm(cloudwatch: Any, name: str) -> dict[str, Any]:
    answer = cloudwatch.describe_alarms(AlarmNames=[name], AlarmTypes=["MetricAlarm", "CompositeAlarm"])
    found = answer["MetricAlarms"] + answer["CompositeAlarms"]
    if not found:
        raise StackError(f"no alarm {name!r} in the world's account")
    return found[0]


def evaluation(cloudwatch: Any, alarm: dict[str, Any], old: str, to: str, until: datetime) -> tuple[str, str]:
    """What CloudWatch writes when a metric alarm's evaluation changes its
    state: the state reason ("Threshold Crossed: N out of the last M
    datapoints [...] were greater than the threshold (X) (minimum K datapoints
    for OK -> ALARM transition).") and reasonData (a JSON string with the
    statistic, period, recentDatapoints, threshold and evaluatedDatapoints),
    from the alarm's own datapoints over its last evaluation periods up to
    `until` (the world's now, where its data ends). A metric-math alarm's
    datapoints are its expression's (GetMetricData with its own queries);
    its reasonData then has no statistic and no sample counts."""
    math = alarm_math_queries(alarm)
    period = int(alarm["Period"]) if alarm.get("Period") else int(next(q["MetricStat"]["Period"] for q in math if "MetricStat" in q))
    periods = int(alarm["EvaluationPeriods"])
    needed = int(alarm.get("DatapointsToAlarm") or periods)
    statistic = None if math else alarm.get("ExtendedStatistic") or alarm["Statistic"]
    threshold = float(alarm["Threshold"])
    query_date = datetime.now(timezone.utc)
    end = min(until, query_date)
    end = end - timedelta(seconds=int(end.timestamp()) % period, microseconds=end.microsecond)
    start = end - timedelta(seconds=period * periods)
    if math:
        # A metric-math alarm: the value is its expression's, over its own queries.
        answer = cloudwatch.get_metric_data(MetricDataQueries=math, StartTime=start, EndTime=end,
                                            ScanBy="TimestampAscending")["MetricDataResults"]
        returned = next(q["Id"] for q in math if q.get("ReturnData", True))
        series = {"v": dict(zip(*next(((r["Timestamps"], r["Values"]) for r in answer if r["Id"] == returned), ([], []))))}
    else:
        metric = {"Namespace": alarm["Namespace"], "MetricName": alarm["MetricName"], "Dimensions": alarm.get("Dimensions", [])}
        answer = cloudwatch.get_metric_data(
            MetricDataQueries=[{"Id": "v", "MetricStat": {"Metric": metric, "Period": period, "Stat": statistic}},
                               {"Id": "n", "MetricStat": {"Metric": metric, "Period": period, "Stat": "SampleCount"}}],
            StartTime=start, EndTime=end, ScanBy="TimestampAscending",
        )["MetricDataResults"]
        series = {r["Id"]: dict(zip(r["Timestamps"], r["Values"])) for r in answer}
    points = sorted(series.get("v", {}).items())  # oldest first
    test = COMPARISON_TESTS[alarm["ComparisonOperator"]]
    words = COMPARISON_WORDS[alarm["ComparisonOperator"]]
    if to == "INSUFFICIENT_DATA":
        missing = max(periods - len(points), 1)
        reason = f"Insufficient Data: {missing} datapoint{'s were' if missing != 1 else ' was'} unknown."
    else:
        breaching = to == "ALARM"
        chosen = [(t, v) for t, v in points if test(v, threshold) == breaching]
        listed = ", ".join(f"{v!r} ({t.astimezone(timezone.utc):%d/%m/%y %H:%M:%S})" for t, v in reversed(chosen))
        verb = ("were" if len(chosen) != 1 else "was") + ("" if breaching else " not")
        reason = (f"Threshold Crossed: {len(chosen)} out of the last {periods} datapoints [{listed}] {verb} {words} "
                  f"the threshold ({threshold!r}) (minimum {needed} datapoint{'s' if needed != 1 else ''} "
                  f"for {old} -> {to} transition).")
    data: dict[str, Any] = {
        "version": "1.0",
        "queryDate": cloudwatch_time(query_date),
        "startDate": cloudwatch_time(start),
        "statistic": statistic,
        "period": period,
        "recentDatapoints": [v for _, v in points],
        "threshold": threshold,
        "evaluatedDatapoints": [
            {"timestamp": cloudwatch_time(t), "sampleCount": float(series.get("n", {}).get(t, 0.0)), "value": v}
            for t, v in reversed(points)
        ],
    }
    if math:
        # An expression has neither one statistic nor sample counts.
        del data["statistic"]
        for point in data["evaluatedDatapoints"]:
            del point["sampleCount"]
    return reason, json.dumps(data, separators=(",", ":"))


def alarm_math_queries(alarm: dict[str, Any]) -> list[dict[str, Any]]:
    """A metric-math alarm's queries as DescribeAlarms gives them, ready for
    GetMetricData (empty for a single-metric alarm)."""
    if alarm.get("MetricName") or not alarm.get("Metrics"):
        return []
    keys = ("Id", "MetricStat", "Expression", "Label", "ReturnData", "Period")
    return [{k: q[k] for k in keys if q.get(k) is not None} for q in alarm["Metrics"]]


def _metric_configuration(alarm: dict[str, Any]) -> list[dict[str, Any]]:
    """The `configuration.metrics` of an alarm state change event."""
    def metric(m: dict[str, Any]) -> dict[str, Any]:
        return {"namespace": m.get("Namespace"), "name": m.get("MetricName"),
                "dimensions": {d["Name"]: d["Value"] for d in m.get("Dimensions", [])}}

    if alarm.get("MetricName"):
        return [{
            # CloudWatch names a single-metric alarm's query with an id of its own.
            "id": str(uuid.uuid5(uuid.NAMESPACE_URL, alarm["AlarmArn"])),
            "metricStat": {"metric": metric(alarm), "period": alarm["Period"],
                           "stat": alarm.get("ExtendedStatistic") or alarm.get("Statistic")},
            "returnData": True,
        }]
    out = []
    for query in alarm.get("Metrics", []):
        entry: dict[str, Any] = {"id": query["Id"]}
        if query.get("Expression"):
            entry["expression"] = query["Expression"]
        if query.get("Label"):
            entry["label"] = query["Label"]
        if query.get("MetricStat"):
            stat = query["MetricStat"]
            entry["metricStat"] = {"metric": metric(stat["Metric"]), "period": stat["Period"], "stat": stat["Stat"]}
        entry["returnData"] = bool(query.get("ReturnData", True))
        out.append(entry)
    return out


def eventbridge_event(cloudwatch: Any, name: str, account: str, region: str) -> dict[str, Any]:
    """The "CloudWatch Alarm State Change" event CloudWatch puts on the
    default bus for the alarm's latest state change, read back from
    CloudWatch: the state as DescribeAlarms has it (StateUpdatedTimestamp is
    the StateChangeTime of the SNS notification) and the previous state from
    the alarm history."""
    alarm = _describe_alarm(cloudwatch, name)
    items = cloudwatch.describe_alarm_history(AlarmName=name, HistoryItemType="StateUpdate",
                                              ScanBy="TimestampDescending", MaxRecords=2)["AlarmHistoryItems"]
    at = alarm["StateUpdatedTimestamp"]
    state: dict[str, Any] = {"value": alarm["StateValue"], "reason": alarm.get("StateReason", "")}
    if alarm.get("StateReasonData") and alarm["StateReasonData"] != "{}":
        state["reasonData"] = alarm["StateReasonData"]
    state["timestamp"] = cloudwatch_time(at)
    previous: dict[str, Any] = {"value": "INSUFFICIENT_DATA", "reason": ""}
    if items:
        old = json.loads(items[0]["HistoryData"]).get("oldState", {})
        previous = {"value": old.get("stateValue", "INSUFFICIENT_DATA"), "reason": old.get("stateReason", "")}
        if len(items) > 1:
            # The change that entered the previous state: its reason, data and time.
            before = json.loads(items[1]["HistoryData"]).get("newState", {})
            previous["reason"] = before.get("stateReason", previous["reason"])
            if before.get("stateReasonData"):
                previous["reasonData"] = json.dumps(before["stateReasonData"], separators=(",", ":"))
            previous["timestamp"] = cloudwatch_time(items[1]["Timestamp"])
    if alarm.get("AlarmRule"):
        configuration: dict[str, Any] = {"alarmRule": alarm["AlarmRule"], "description": alarm.get("AlarmDescription", "")}
    else:
        configuration = {"description": alarm.get("AlarmDescription", ""), "metrics": _metric_configuration(alarm)}
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": EVENTBRIDGE_DETAIL_TYPE,
        "source": "aws.cloudwatch",
        "account": account,
        "time": at.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": region,
        "resources": [alarm["AlarmArn"]],
        "detail": {"alarmName": name, "state": state, "previousState": previous, "configuration": configuration},
    }


def wire_sns(sns: Any, topic_arn: str, endpoint: str, wanted: bool) -> None:
    """Subscribes the bridge's SNS endpoint to the alarm topic, or removes it:
    the wiring `--via` asks for (EventBridge alone does not go through SNS)."""
    found = [s for s in sns.list_subscriptions_by_topic(TopicArn=topic_arn)["Subscriptions"] if s["Endpoint"] == endpoint]
    if wanted and not found:
        sns.subscribe(TopicArn=topic_arn, Protocol="http", Endpoint=endpoint)
    for subscription in found if not wanted else []:
        if subscription["SubscriptionArn"].startswith("arn:"):
            sns.unsubscribe(SubscriptionArn=subscription["SubscriptionArn"])


def post_event(url: str, event: dict[str, Any]) -> None:
    """Hands an EventBridge event to Lambda's asynchronous invocation (the bridge's /eventbridge)."""
    request = urllib.request.Request(f"{url}/eventbridge", data=json.dumps(event).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(request, timeout=10) as response:
        if response.status != 202:
            raise StackError(f"the function's bridge refused the EventBridge event: HTTP {response.status}")


def captured(sqs: Any, queue_url: str, wanted: dict[str, tuple[str, str | None]],
             timeout: float = 10.0) -> dict[str, dict[str, Any]]:
    """The SNS envelopes of the state changes in `wanted` (alarm name -> its
    new state and, when known, StateChangeTime), from the capture queue;
    older notifications of the same alarms are taken off the queue too."""
    found: dict[str, dict[str, Any]] = {}
    deadline = time.time() + timeout
    while len(found) < len(wanted) and time.time() < deadline:
        for message in sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=1).get("Messages", []):
            envelope = json.loads(message["Body"])
            try:
                notification = json.loads(envelope.get("Message", "{}"))
            except ValueError:
                continue
            name = notification.get("AlarmName")
            if name not in wanted:
                continue
            sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
            state, at = wanted[name]
            if notification.get("NewStateValue") == state and at in (None, notification.get("StateChangeTime")):
                found[name] = envelope
    return found


def deliver(state: Path, to: str | None = None, via: str | None = None, invoke: str | None = None) -> int:
    """The world's alarm changes state (SetAlarmState) and the function hears
    of it as `via` says: the SNS notification through the alarm topic, the
    EventBridge event, or both. A composite alarm over it follows. The
    function is the running one (`up --lambda`), or `invoke`, an invoke URL
    served for this delivery by the same asynchronous-invocation bridge.
    Prints the path of the event file the function got (event.json)."""
    env = _read_env(state)
    facts = json.loads((state / "facts.json").read_text())
    world = worlds.load(Path((state / "world").read_text()))
    via = via or default_via(facts)
    channels = VIA[via]
    transition = dict(world.spec["alarm"]["deliver"])
    if to:
        # Through EventBridge the reason is CloudWatch's own, written from the datapoints.
        transition = {"to": to} if "eventbridge" in channels else {"to": to, "reason": f"Threshold Crossed: stack.py deliver --to {to}"}
    endpoint, region, account = env["AWS_ENDPOINT_URL"], facts["region"], facts["account"]
    c = world_clients(endpoint, facts, ("cloudwatch", "sqs", "sns"))

    bridge = None
    bridge_url = facts.get("diagnose_bridge_url")
    if invoke:
        import threading

        from sns_bridge import Bridge

        port = free_port()
        bridge = Bridge(port, [invoke], str(state / "deliver-invocations.jsonl"), max_retries=facts.get("lambda_retries", 0),
                        on_failure_queue=facts["failed_events_queue_url"], endpoint=endpoint,
                        function_arn=f"arn:aws:lambda:{region}:{function_account(facts)}:function:diagnose:$LATEST",
                        credentials={"AccessKeyId": "testing", "SecretAccessKey": "testing", "SessionToken": "testing"})
        threading.Thread(target=bridge.serve_forever, daemon=True).start()
        bridge_url = f"http://127.0.0.1:{port}"
    if bridge is not None or (bridge_url and facts.get("sns_wired", True) != ("sns" in channels)):
        wire_sns(c["sns"], facts["alarm_topic_arn"], f"{bridge_url}/sns", "sns" in channels)
        if bridge is None:
            facts["sns_wired"] = "sns" in channels
            (state / "facts.json").write_text(json.dumps(facts, indent=2, default=str))

    try:
        names = [facts["alarm_name"]]
        events: dict[str, dict[str, Any]] = {}
        composite = facts.get("composite_alarm_name")
        if "eventbridge" in channels:
            child = _describe_alarm(c["cloudwatch"], facts["alarm_name"])
            # CloudWatch's own words and datapoints, which the EventBridge event carries.
            reason, reason_data = evaluation(c["cloudwatch"], child, child["StateValue"], transition["to"],
                                             datetime.fromisoformat(facts["now"]))
            reason = transition.get("reason") or reason
            c["cloudwatch"].set_alarm_state(AlarmName=facts["alarm_name"], StateValue=transition["to"],
                                            StateReason=reason, StateReasonData=reason_data)
            events[facts["alarm_name"]] = eventbridge_event(c["cloudwatch"], facts["alarm_name"], account, region)
            if bridge_url:
                post_event(bridge_url, events[facts["alarm_name"]])
        else:
            reason = transition.get("reason") or "Threshold Crossed: the world's alarm was delivered by stack.py deliver"
            c["cloudwatch"].set_alarm_state(AlarmName=facts["alarm_name"], StateValue=transition["to"], StateReason=reason)

        if composite:
            child = _describe_alarm(c["cloudwatch"], facts["alarm_name"])
            composite_to = worlds.composite_state(child["StateValue"])
            if _describe_alarm(c["cloudwatch"], composite)["StateValue"] != composite_to:
                at = child["StateUpdatedTimestamp"]
                triggering = {"triggeringAlarms": [{"arn": child["AlarmArn"],
                                                    "state": {"value": child["StateValue"], "timestamp": cloudwatch_time(at)}}]}
                c["cloudwatch"].set_alarm_state(
                    AlarmName=composite, StateValue=composite_to, StateReason=composite_reason(child["AlarmArn"], child["StateValue"], at),
                    StateReasonData=json.dumps(triggering, separators=(",", ":")),
                )
                names.append(composite)
                if "eventbridge" in channels:
                    events[composite] = eventbridge_event(c["cloudwatch"], composite, account, region)
                    if bridge_url:
                        post_event(bridge_url, events[composite])

        # The notifications CloudWatch published for these changes, as the capture queue got them
        # (a lone SNS delivery takes the alarm's notification as it always did, without reading the alarm back).
        if names == [facts["alarm_name"]] and not events:
            wanted: dict[str, tuple[str, str | None]] = {facts["alarm_name"]: (transition["to"], None)}
        else:
            wanted = {}
            for name in names:
                alarm = _describe_alarm(c["cloudwatch"], name)
                wanted[name] = (alarm["StateValue"], cloudwatch_time(alarm["StateUpdatedTimestamp"]))
        envelopes = captured(c["sqs"], facts["capture_queue_url"], wanted)
        if "sns" in channels and facts["alarm_name"] not in envelopes:
            raise StackError("no notification reached the capture queue within 10 s; see moto.log")
        for name, event in events.items():
            if name in envelopes and json.loads(envelopes[name]["Message"])["StateChangeTime"] != event["detail"]["state"]["timestamp"]:
                raise StackError(f"{name}: the EventBridge event's state timestamp differs from the SNS notification's StateChangeTime")

        from sns_bridge import lambda_event

        written = []
        for name in names:
            stem = "event" if name == facts["alarm_name"] else "composite-event"
            if "sns" in channels:
                path = state / f"{stem}.json"
                path.write_text(json.dumps(lambda_event(envelopes[name], f"{facts['alarm_topic_arn']}:capture"), indent=2) + "\n")
                written.append(path)
            if "eventbridge" in channels:
                path = state / (f"{stem}.json" if via == "eventbridge" else f"{stem.replace('event', 'eventbridge-event')}.json")
                path.write_text(json.dumps(events[name], indent=2) + "\n")
                written.append(path)

        if bridge is not None:
            expected = len(names) * len(channels)
            records = bridge.wait_finished(expected, timeout=150)
            for record in records:
                print(f"# invoked {invoke}: {record.get('via', 'sns')} {record['message_id']} -> "
                      f"status {record['status']}{', ' + str(record['function_error']) if record['function_error'] else ''}",
                      file=sys.stderr)
            if len(records) < expected:
                raise StackError(f"{expected - len(records)} of {expected} invocations of {invoke} did not finish within 150 s")
    finally:
        if bridge is not None:
            wire_sns(c["sns"], facts["alarm_topic_arn"], f"{bridge_url}/sns", False)
            bridge.shutdown()
            bridge.server_close()
    for path in written[1:]:
        print(f"# also wrote {path}", file=sys.stderr)
    print(written[0])
    return 0


# --- alarm storm -------------------------------------------------------------------------

STORM_TARGET_GROUPS = 3
STORM_WORKERS = 8


def storm(state: Path, alarms: int, load_balancers: int, notifications: int, within: float, as_json: bool) -> int:
    """Many alarms on several load balancers changing state at once, against a
    running world: what the Lambda's retries, concurrency and failed-events
    queue are for. Extra ALBs are made in the world's image, the alarms are
    copies of the world's alarm spread round-robin over the load balancers
    (the world's own first), and every transition is a real SetAlarmState, so
    CloudWatch's real notification goes out through the alarm topic."""
    if min(alarms, load_balancers, notifications) < 1 or within <= 0:
        raise StackError("storm needs at least one alarm, load balancer and notification, and a positive --within")
    env = _read_env(state)
    facts = json.loads((state / "facts.json").read_text())
    world = worlds.load(Path((state / "world").read_text()))
    started = time.time()
    credentials = None
    if facts.get("organisation"):
        # The world's resources live in the member account.
        credentials = assume(env["AWS_ENDPOINT_URL"], facts["region"], facts["organisation"]["bootstrap_role_arn"], "alarm-triage-storm")
    c = clients(env["AWS_ENDPOINT_URL"], facts["region"], ("ec2", "elbv2", "sqs", "cloudwatch", "sns", "acm"), credentials)
    if facts.get("diagnose_bridge_url") and not facts.get("sns_wired", True):
        # A storm is SNS notifications: the function must hear the alarm topic.
        wire_sns(c["sns"], facts["alarm_topic_arn"], f"{facts['diagnose_bridge_url']}/sns", True)
        facts["sns_wired"] = True
        (state / "facts.json").write_text(json.dumps(facts, indent=2, default=str))
    run = secrets.token_hex(3)  # storms on one world never reuse an alarm name
    lb_arns = [facts["load_balancer_arn"]] + [storm_load_balancer(c, world, facts, n) for n in range(1, load_balancers)]
    names = []
    for i in range(alarms):
        lb_arn = lb_arns[i % len(lb_arns)]
        names.append(storm_alarm(c, world, facts, f"storm-{run}-{i:03d}-{lb_arn.split('/')[-2]}", lb_arn))
    setup_seconds = time.time() - started

    fired = fire_transitions(env["AWS_ENDPOINT_URL"], facts["region"], names, notifications, within, credentials)
    # The capture queue got every notification; empty it so `deliver` finds its own again.
    c["sqs"].purge_queue(QueueUrl=facts["capture_queue_url"])
    report = {
        "alarms": names,
        "load_balancer_arns": lb_arns,
        "fired": fired["fired"],
        "states": fired["states"],
        "firing_seconds": fired["seconds"],
        "max_late_seconds": fired["max_late"],
        "within": within,
        "distinct_state_change_times": distinct_state_change_times(c["cloudwatch"], names),
        "setup_seconds": round(setup_seconds, 2),
    }
    if as_json:
        print(json.dumps(report))
    else:
        print(f"{report['fired']} transitions {report['states']} of {alarms} alarms on {len(lb_arns)} load balancers "
              f"fired in {report['firing_seconds']} s (at most {report['max_late_seconds']} s late); "
              f"{report['distinct_state_change_times']} distinct state-change times; setup {report['setup_seconds']} s")
        for arn in lb_arns:
            print(f"load balancer {arn}")
        for name in names:
            print(f"alarm {name}")
    return 0


def storm_load_balancer(c: dict[str, Any], world: worlds.World, facts: dict[str, Any], n: int) -> str:
    """One more load balancer shaped like the world's (of its type): same VPC,
    subnets, security groups and tags (cluster name included), the world's
    first target groups copied with their targets, listeners (or rules) and
    metrics. Returns its ARN."""
    network = worlds.load_balancer_type(world) == "network"
    elbv2 = c["elbv2"]
    model = elbv2.describe_load_balancers(LoadBalancerArns=[facts["load_balancer_arn"]])["LoadBalancers"][0]
    tags = {t["Key"]: t["Value"] for t in elbv2.describe_tags(ResourceArns=[model["LoadBalancerArn"]])["TagDescriptions"][0]["Tags"]}
    stack = f"storm{n}"
    if "ingress.k8s.aws/stack" in tags:
        tags["ingress.k8s.aws/stack"] = f"{stack}/{stack}"
    subnets = [zone["SubnetId"] for zone in model["AvailabilityZones"]]
    lb_arn = elbv2.create_load_balancer(
        Name=f"k8s-{stack}-{secrets.token_hex(5)}", Subnets=subnets, SecurityGroups=model.get("SecurityGroups", []),
        Scheme=model["Scheme"], Type=worlds.load_balancer_type(world), Tags=[{"Key": k, "Value": v} for k, v in tags.items()],
    )["LoadBalancers"][0]["LoadBalancerArn"]
    groups = []
    for spec in world.spec["load_balancer"]["target_groups"][:STORM_TARGET_GROUPS]:
        parts = spec["name"].split("-")
        service = (parts[2] if len(parts) >= 4 and parts[0] == "k8s" else "svc")[:32 - len(f"k8s-{stack}--") - 10]
        port = int(spec.get("port", 80))
        checked = {"HealthCheckProtocol": "TCP"} if network else {"HealthCheckPath": spec.get("health_check_path", "/healthz")}
        arn = elbv2.create_target_group(
            Name=f"k8s-{stack}-{service}-{secrets.token_hex(5)}", Protocol=spec.get("protocol", "TCP") if network else "HTTP",
            Port=port, VpcId=model["VpcId"], TargetType="instance", **checked,
        )["TargetGroups"][0]["TargetGroupArn"]
        group_tags = dict(spec.get("tags") or {})
        if "ingress.k8s.aws/stack" in group_tags:
            group_tags.update({"ingress.k8s.aws/stack": f"{stack}/{stack}", "ingress.k8s.aws/resource": f"{stack}/{stack}-{service}:http"})
        if group_tags:
            elbv2.add_tags(ResourceArns=[arn], Tags=[{"Key": k, "Value": str(v)} for k, v in group_tags.items()])
        count = max(1, len(spec.get("targets", [])))
        instances = c["ec2"].run_instances(ImageId="ami-12c6146b", MinCount=count, MaxCount=count, SubnetId=subnets[0])["Instances"]
        elbv2.register_targets(TargetGroupArn=arn, Targets=[{"Id": i["InstanceId"], "Port": port} for i in instances])
        groups.append((spec, arn, count))
    if network:
        certificate = lambda: c["acm"].request_certificate(DomainName=f"{stack}.example.internal")["CertificateArn"]  # noqa: E731
        create_listeners(elbv2, lb_arn, [(spec, arn) for spec, arn, _ in groups], True, certificate)
    else:
        listener = elbv2.create_listener(
            LoadBalancerArn=lb_arn, Protocol="HTTP", Port=80, DefaultActions=[{"Type": "forward", "TargetGroupArn": groups[0][1]}],
        )["Listeners"][0]["ListenerArn"]
        for priority, (spec, arn, _) in enumerate(groups[1:], start=1):
            elbv2.create_rule(
                ListenerArn=listener, Priority=priority, Conditions=[{"Field": "path-pattern", "Values": [f"/{priority}/*"]}],
                Actions=[{"Type": "forward", "TargetGroupArn": arn}],
            )
    datums = metric_datums(world, worlds.lb_dimension(lb_arn),
                           [(spec, worlds.tg_dimension(arn), _all_healthy(count)) for spec, arn, count in groups])
    for start in range(0, len(datums), 500):
        c["cloudwatch"].put_metric_data(Namespace=worlds.metrics_namespace(world), MetricData=datums[start:start + 500])
    return lb_arn


def _all_healthy(count: int) -> Callable[[datetime], tuple[int, int]]:
    """Host counts of a storm copy: its targets are all healthy."""
    return lambda _t: (count, 0)


def statistic_argument(alarm: dict[str, Any]) -> dict[str, str]:
    """`Statistic=Average` or `ExtendedStatistic=p99`, as PutMetricAlarm takes them."""
    return {worlds.statistic_kind(alarm["statistic"]): alarm["statistic"]}


def storm_alarm(c: dict[str, Any], world: worlds.World, facts: dict[str, Any], name: str, lb_arn: str) -> str:
    """A copy of the world's alarm on `lb_arn`, notifying the alarm topic as seed() does."""
    alarm = world.spec["alarm"]
    c["cloudwatch"].put_metric_alarm(
        AlarmName=name, AlarmDescription=f"{alarm.get('description', '')} (storm copy on {lb_arn.split('/')[-2]})",
        **alarm_metric_arguments(alarm, [{"Name": "LoadBalancer", "Value": worlds.lb_dimension(lb_arn)}],
                                 worlds.metrics_namespace(world), worlds.load_balancer_type(world)),
        EvaluationPeriods=int(alarm["evaluation_periods"]),
        DatapointsToAlarm=int(alarm.get("datapoints_to_alarm", alarm["evaluation_periods"])),
        Threshold=float(alarm["threshold"]), ComparisonOperator=alarm["comparison"],
        TreatMissingData=alarm.get("treat_missing_data", "missing"),
        AlarmActions=[facts["alarm_topic_arn"]], OKActions=[facts["alarm_topic_arn"]],
    )
    return name


def fire_transitions(endpoint: str, region: str, names: list[str], notifications: int, within: float,
                     credentials: dict[str, str] | None = None) -> dict[str, Any]:
    """Sets `notifications` alarm states, spread evenly over the first 90% of
    `within` seconds (the rest is for the calls still in flight, so the storm
    is over within `within`) and round-robin over the alarms, each alarm
    alternating ALARM and OK (new alarms are INSUFFICIENT_DATA, so every call
    is a change and notifies).

    A few threads, each with its own client made beforehand, keep to the
    schedule when moto is slow; every alarm belongs to one thread, so its
    transitions happen in order, one after the other, each with its own
    state-change time."""
    import threading

    workers = min(STORM_WORKERS, len(names))
    plans: list[list[tuple[float, str, str]]] = [[] for _ in range(workers)]
    counts = [0] * len(names)
    for k in range(notifications):
        i = k % len(names)
        plans[i % workers].append((k * 0.9 * within / notifications, names[i], "ALARM" if counts[i] % 2 == 0 else "OK"))
        counts[i] += 1
    cloudwatch = [clients(endpoint, region, ("cloudwatch",), credentials)["cloudwatch"] for _ in range(workers)]
    late: list[float] = []
    errors: list[str] = []
    states: dict[str, int] = {}
    lock = threading.Lock()

    def run(worker: int) -> None:
        for offset, name, to in plans[worker]:
            wait = t0 + offset - time.time()
            if wait > 0:
                time.sleep(wait)
            lateness = max(0.0, time.time() - t0 - offset)
            try:
                cloudwatch[worker].set_alarm_state(AlarmName=name, StateValue=to, StateReason=f"Threshold Crossed: storm transition to {to}")
            except Exception as error:  # noqa: BLE001 - reported below, whatever it was
                with lock:
                    errors.append(f"{name} -> {to}: {error}")
                continue
            with lock:
                late.append(lateness)
                states[to] = states.get(to, 0) + 1

    t0 = time.time()
    threads = [threading.Thread(target=run, args=(w,)) for w in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.time() - t0
    if errors:
        raise StackError(f"{len(errors)} of {notifications} transitions failed, e.g. {errors[0]}")
    return {"fired": sum(states.values()), "states": states, "seconds": round(seconds, 2), "max_late": round(max(late), 2)}


def distinct_state_change_times(cloudwatch: Any, names: list[str]) -> int:
    """How many (alarm, state-change time to the millisecond, as notifications
    carry it) pairs the alarms' history holds: one per transition when each
    diagnosis can get its own id."""
    seen = set()
    for name in names:
        pages = cloudwatch.get_paginator("describe_alarm_history").paginate(AlarmName=name, HistoryItemType="StateUpdate")
        for page in pages:
            for item in page["AlarmHistoryItems"]:
                seen.add((name, item["Timestamp"].isoformat(timespec="milliseconds")))
    return len(seen)


def _read_env(state: Path) -> dict[str, str]:
    env_file = state / "env"
    if not env_file.exists():
        raise StackError(f"no stack is up in {state} (no env file); run `stack.py up WORLD_DIR` first")
    env = {}
    for line in env_file.read_text().splitlines():
        key, value = line[len("export "):].split("=", 1)
        env[key] = value.strip("'").replace("'\\''", "'")
    return env


def down(state: Path) -> int:
    stopped = Processes(state).stop_all()
    print(f"stopped: {', '.join(stopped) if stopped else 'nothing was running'}", file=sys.stderr)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p_up = sub.add_parser("up")
    p_up.add_argument("world", type=Path)
    p_up.add_argument("--state", type=Path, default=ROOT / ".world")
    p_up.add_argument("--lambda", dest="with_lambda", action="store_true", help="also run the diagnose Lambda under cargo-lambda's emulator")
    p_up.add_argument("--json", action="store_true")
    p_up.add_argument("--lambda-instances", type=int, default=1, metavar="N",
                      help="warm instances of the diagnose function polling its emulator (default 1)")
    p_up.add_argument("--lambda-retries", type=int, default=0, choices=range(0, 3), metavar="N",
                      help="retries after a failed asynchronous invocation, as Lambda's MaximumRetryAttempts (0-2; "
                           "default 0, so a test can retry by hand); the event then goes to FAILED_EVENTS_QUEUE_URL")
    p_up.add_argument("--lambda-retry-delays", default="1,2", metavar="S,S",
                      help="seconds before each retry (Lambda waits about 1 and 2 minutes; default 1,2)")
    p_up.add_argument("--notify", choices=["webhook", "bot"],
                      help="also run notify-slack against a local Slack: incoming webhooks (secret in Secrets Manager) "
                           "or a bot token (SSM SecureString, threads in DynamoDB)")
    p_up.add_argument("--feedback", action="store_true",
                      help="with --notify bot: verdict buttons, the feedback table and the feedback function behind a function URL")
    p_up.add_argument("--hold", type=int, default=0, metavar="SECONDS",
                      help="hold likely transients this long (HOLD_TRANSIENT_SECONDS): the hold queue and its event source mapping")
    p_up.add_argument("--email-incidents", action="store_true",
                      help="one email per incident (EMAIL_INCIDENT_TABLE)")
    p_up.add_argument("--digest", action="store_true",
                      help="with --notify: the digest function under the emulator (DIGEST_INVOKE_URL; invoke it as the scheduler would)")
    p_up.add_argument("--notify-env", action="append", default=[], metavar="KEY=VALUE",
                      help="set (KEY=VALUE) or remove (KEY=) a variable of the notify-slack function's environment")
    p_up.add_argument("--lambda-env", action="append", default=[], metavar="KEY=VALUE",
                      help="set (KEY=VALUE) or remove (KEY=) a variable of the diagnose function's environment; "
                           "${VAR} in VALUE is a variable of the world's env (PROMETHEUS_URL=${PROMETHEUS_FAULT_URL})")
    p_storm = sub.add_parser("storm", help="many alarms on several load balancers change state at once (a running world)")
    p_storm.add_argument("--state", type=Path, default=ROOT / ".world")
    p_storm.add_argument("--alarms", type=int, default=20)
    p_storm.add_argument("--load-balancers", type=int, default=3, help="the world's and N-1 more made in its image")
    p_storm.add_argument("--notifications", type=int, default=200, help="state changes, alternating ALARM and OK per alarm")
    p_storm.add_argument("--within", type=float, default=10.0, help="seconds to spread them over")
    p_storm.add_argument("--json", action="store_true")
    for name in ("deliver", "down"):
        p = sub.add_parser(name)
        p.add_argument("--state", type=Path, default=ROOT / ".world")
        if name == "deliver":
            p.add_argument("--to", choices=["ALARM", "OK", "INSUFFICIENT_DATA"],
                           help="the state to set instead of the world's (e.g. OK, for the resolution)")
            p.add_argument("--via", choices=list(VIA),
                           help="how the function hears of the change: the SNS notification, the EventBridge event, or both "
                                "(default: sns, or eventbridge for a world with an organisation)")
            p.add_argument("--invoke", metavar="URL",
                           help="invoke this URL (a Lambda invoke URL or a stand-in) instead of the world's function, "
                                "through the same asynchronous-invocation bridge; waits for the invocations")
    args = parser.parse_args()
    try:
        if args.command == "up":
            return up(args.world, args.state, args.with_lambda, args.json, args.lambda_env, args.notify, args.notify_env,
                      args.lambda_instances, args.lambda_retries, args.lambda_retry_delays, args.feedback,
                      args.hold, args.email_incidents, args.digest)
        if args.command == "deliver":
            return deliver(args.state, args.to, args.via, args.invoke)
        if args.command == "storm":
            return storm(args.state, args.alarms, args.load_balancers, args.notifications, args.within, args.json)
        return down(args.state)
    except (StackError, worlds.WorldError) as error:
        print(f"stack.py: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

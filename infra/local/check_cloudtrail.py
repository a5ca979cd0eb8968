"""A by-hand check of the CloudTrail event history (moto_world/cloudtrail_ext.py,
world.yaml `changes:`) and of the Kubernetes API's metadata-only lists and
Event field selectors, against a running local stack.

    .venv/bin/python infra/local/check_cloudtrail.py [--base tests/worlds/NAME ...] [--keep]

For each base world (default: an ALB, an NLB and the organisation world) it
copies the world into a scratch directory, adds security groups, a
`cloudtrail: {lag: 3m}`, eight `changes` of every resource kind and a few
manifests (a ConfigMap with managedFields times, HPA, Karpenter and
cluster-autoscaler Events), starts it with `stack.py up` in a private state
directory, calls LookupEvents through boto3 (every lookup attribute, time
ranges, paging with MaxResults 2, each error, newest-first order, the
delivery lag, the account the credentials act in) and the API server
(PartialObjectMetadataList, `source=` and `reportingComponent=`), then stops
the stack. Exits 1 on the first failed check.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import shutil
import sys
import tempfile
import time
import urllib.error
import urllib.request
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))

from by_hand import CheckFailed, check, copy_world, error_code, stack  # noqa: E402
DEFAULT_BASES = ("tests/worlds/alb-unhealthy-hosts-health-check-timeout", "tests/worlds/nlb-unhealthy-hosts-one-group",
                 "tests/worlds/org-member-account-hot-pod")
LAG = timedelta(minutes=3)

MANIFESTS = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: ct-check-config
  namespace: default
  creationTimestamp: "{{ now-900h }}"
  managedFields:
    - {manager: kubectl-client-side-apply, operation: Update, apiVersion: v1, time: "{{ now-900h }}", fieldsType: FieldsV1, fieldsV1: {"f:data": {}}}
    - {manager: helm, operation: Update, apiVersion: v1, time: "{{ now-15m }}", fieldsType: FieldsV1, fieldsV1: {"f:data": {"f:WORKERS": {}}}}
data: {WORKERS: "6"}
---
apiVersion: v1
kind: Event
metadata: {name: ct-check-api.1, namespace: default}
involvedObject: {kind: HorizontalPodAutoscaler, name: ct-check-api, namespace: default, apiVersion: autoscaling/v2}
reason: SuccessfulRescale
message: "New size: 6; reason: cpu resource utilization (percentage of request) above target"
source: {component: horizontal-pod-autoscaler}
reportingComponent: horizontal-pod-autoscaler
type: Normal
firstTimestamp: "{{ now-20m }}"
lastTimestamp: "{{ now-20m }}"
count: 1
---
apiVersion: v1
kind: Event
metadata: {name: ct-check-api-7c9d-x2k4p.2, namespace: default}
involvedObject: {kind: Pod, name: ct-check-api-7c9d-x2k4p, namespace: default}
reason: Nominated
message: "Pod should schedule on: nodeclaim/default-x7k2p"
source: {component: karpenter}
reportingComponent: karpenter
type: Normal
firstTimestamp: "{{ now-19m }}"
lastTimestamp: "{{ now-19m }}"
---
apiVersion: v1
kind: Event
metadata: {name: cluster-autoscaler-status.3, namespace: kube-system}
involvedObject: {kind: ConfigMap, name: cluster-autoscaler-status, namespace: kube-system}
reason: ScaleUpFailed
message: "Failed adding 2 nodes to group eks-ng-a1b2 due to OutOfResource.max-size-reached"
source: {component: cluster-autoscaler}
type: Warning
firstTimestamp: "{{ now-18m }}"
lastTimestamp: "{{ now-18m }}"
"""


def scratch_world(base: Path, into: Path) -> Path:
    """A copy of `base` with security groups, a lag and eight changes."""
    world = copy_world(base, into, "changes")
    spec = yaml.safe_load((world / "world.yaml").read_text())
    account = spec["account"]
    groups = spec["load_balancer"]["target_groups"]
    tg = groups[0]["name"]
    network = spec["load_balancer"].get("type") == "network"
    port = int(groups[0].get("listener_port", groups[0].get("port", 80))) if network else 80
    spec["security_groups"] = [{"name": "eks-nodes", "description": "EKS nodes"}]
    spec["load_balancer"]["security_groups"] = ["k8s-alb", "eks-nodes"]
    spec["cloudtrail"] = {"lag": "3m"}
    spec["changes"] = [
        {"at": "-50m", "event": "DescribeTargetGroups", "target_group": tg, "by": "controller"},
        {"at": "-30m", "event": "ModifyTargetGroup", "target_group": tg,
         "by": f"arn:aws:sts::{account}:assumed-role/platform-admin/jane@example.com",
         "user_agent": "aws-cli/2.15.30 Python/3.11.8 Linux/6.1 exe/x86_64.amzn.2023 command/elbv2.modify-target-group",
         "request": {"healthCheckTimeoutSeconds": 2},
         "response": {"targetGroups": [{"targetGroupArn": f"{{{{ tg:{tg} }}}}", "loadBalancerArns": ["{{ lb }}"]}]}},
        {"at": "-20m", "event": "AuthorizeSecurityGroupIngress", "security_group": "eks-nodes",
         "request": {"ipPermissions": {"items": [{"ipProtocol": "tcp", "fromPort": 8080, "toPort": 8080,
                                                  "groups": {"items": [{"groupId": "{{ sg:k8s-alb }}"}]}}]}}},
        {"at": "-15m", "event": "ModifyListener", "listener": port, "by": f"arn:aws:iam::{account}:user/deploy-bot"},
        {"at": "-12m", "event": "UpdateNodegroupConfig", "nodegroup": "ng-general",
         "request": {"scalingConfig": {"minSize": 3, "maxSize": 3, "desiredSize": 3}}},
        {"at": "-10m", "event": "SetSecurityGroups", "load_balancer": True, "by": "controller",
         "request": {"securityGroups": ["{{ sg:k8s-alb }}", "{{ sg:eks-nodes }}"]}},
        {"at": "-8m", "event": "UpdateAutoScalingGroup", "by": "service:eks.amazonaws.com",
         "resource": {"type": "AWS::AutoScaling::AutoScalingGroup", "name": "eks-ng-general-a1b2"},
         "request": {"autoScalingGroupName": "eks-ng-general-a1b2", "maxSize": 3, "owner": "{{ account }}"}},
        {"at": "-1m", "event": "ModifyTargetGroupAttributes", "target_group": tg,
         "request": {"attributes": [{"key": "deregistration_delay.timeout_seconds", "value": "30"}]}},
    ]
    (world / "world.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    (world / "kubernetes").mkdir(exist_ok=True)
    (world / "kubernetes" / "ct-check.yaml").write_text(MANIFESTS)
    return world


def check_cloudtrail(env: dict[str, str], facts: dict[str, Any]) -> None:
    import boto3
    from botocore.config import Config

    endpoint, region = env["AWS_ENDPOINT_URL"], facts["region"]
    credentials = {k: env[k] for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")}

    def client(creds: dict[str, str], where: str = region) -> Any:
        return boto3.client("cloudtrail", endpoint_url=endpoint, region_name=where,
                            aws_access_key_id=creds["AWS_ACCESS_KEY_ID"], aws_secret_access_key=creds["AWS_SECRET_ACCESS_KEY"],
                            aws_session_token=creds["AWS_SESSION_TOKEN"], config=Config(parameter_validation=False))

    org = facts.get("organisation")
    if org:
        # As the function does: its own credentials act in the central account, the member role's in the member's.
        check(client(credentials).lookup_events()["Events"] == [], "the central account has no event of the member's")
        sts = boto3.client("sts", endpoint_url=endpoint, region_name=region, aws_access_key_id=credentials["AWS_ACCESS_KEY_ID"],
                           aws_secret_access_key=credentials["AWS_SECRET_ACCESS_KEY"], aws_session_token=credentials["AWS_SESSION_TOKEN"])
        assumed = sts.assume_role(RoleArn=org["member_role_arn"], RoleSessionName="check")["Credentials"]
        credentials = {"AWS_ACCESS_KEY_ID": assumed["AccessKeyId"], "AWS_SECRET_ACCESS_KEY": assumed["SecretAccessKey"],
                       "AWS_SESSION_TOKEN": assumed["SessionToken"]}
    ct = client(credentials)
    elbv2 = boto3.client("elbv2", endpoint_url=endpoint, region_name=region, aws_access_key_id=credentials["AWS_ACCESS_KEY_ID"],
                         aws_secret_access_key=credentials["AWS_SECRET_ACCESS_KEY"], aws_session_token=credentials["AWS_SESSION_TOKEN"])
    balancer = elbv2.describe_load_balancers(LoadBalancerArns=[facts["load_balancer_arn"]])["LoadBalancers"][0]
    check(balancer.get("SecurityGroups") == [facts["security_groups"]["k8s-alb"], facts["security_groups"]["eks-nodes"]],
          "load_balancer.security_groups on the load balancer", balancer.get("SecurityGroups"))
    other = "us-east-1" if region != "us-east-1" else "eu-west-1"
    check(client(credentials, other).lookup_events()["Events"] == [], f"another region ({other}) has none of the world's events")

    events = ct.lookup_events()["Events"]
    names = [e["EventName"] for e in events]
    check(names == ["UpdateAutoScalingGroup", "SetSecurityGroups", "UpdateNodegroupConfig", "ModifyListener",
                    "AuthorizeSecurityGroupIngress", "ModifyTargetGroup", "DescribeTargetGroups"],
          "seven events, newest first; the one of -1m is still within the 3 m lag", names)
    times = [e["EventTime"] for e in events]
    check(all(a > b for a, b in zip(times, times[1:])), "EventTime strictly descending", times)
    now = datetime.fromisoformat(facts["now"])
    check(times[0] == now - timedelta(minutes=8), "EventTime is the change's `at`", (times[0], now))
    by_name = {e["EventName"]: e for e in events}
    records = {e["EventName"]: json.loads(e["CloudTrailEvent"]) for e in events}
    for name, record in records.items():
        for key in ("eventVersion", "userIdentity", "eventTime", "eventSource", "eventName", "awsRegion", "sourceIPAddress",
                    "userAgent", "requestParameters", "responseElements", "requestID", "eventID", "readOnly", "eventType",
                    "managementEvent", "recipientAccountId", "eventCategory"):
            if key not in record:
                raise CheckFailed(f"{name}: the record has no {key}")
        event = by_name[name]
        if (record["eventID"] != event["EventId"] or record["readOnly"] != (event["ReadOnly"] == "true")
                or record["eventSource"] != event["EventSource"] or record["awsRegion"] != region
                or record["recipientAccountId"] != facts["account"] or record["eventVersion"] != "1.09"
                or datetime.fromisoformat(record["eventTime"].replace("Z", "+00:00")) != event["EventTime"]):
            raise CheckFailed(f"{name}: the record disagrees with the event: {record} / {event}")
    check(True, "every CloudTrailEvent is a whole record agreeing with its event")

    tg_arn = facts["target_groups"][0]["arn"]
    lb_arn = facts["load_balancer_arn"]
    sgs = facts["security_groups"]
    modify = records["ModifyTargetGroup"]
    check(modify["requestParameters"] == {"targetGroupArn": tg_arn, "healthCheckTimeoutSeconds": 2}, "targetGroupArn added to the request", modify["requestParameters"])
    check(modify["responseElements"]["targetGroups"][0] == {"targetGroupArn": tg_arn, "loadBalancerArns": [lb_arn]},
          "{{ tg:NAME }} and {{ lb }} in the response", modify["responseElements"])
    check(modify["userIdentity"]["type"] == "AssumedRole" and modify["userIdentity"]["sessionContext"]["sessionIssuer"]["userName"] == "platform-admin",
          "an assumed-role caller", modify["userIdentity"])
    ingress = records["AuthorizeSecurityGroupIngress"]["requestParameters"]
    check(ingress["groupId"] == sgs["eks-nodes"] and ingress["ipPermissions"]["items"][0]["groups"]["items"][0]["groupId"] == sgs["k8s-alb"],
          "groupId and {{ sg:NAME }}", ingress)
    check(by_name["AuthorizeSecurityGroupIngress"]["Resources"] == [{"ResourceType": "AWS::EC2::SecurityGroup", "ResourceName": sgs["eks-nodes"]}],
          "a security group's resource", by_name["AuthorizeSecurityGroupIngress"]["Resources"])
    listener = records["ModifyListener"]
    check(listener["requestParameters"]["listenerArn"].startswith(lb_arn.replace(":loadbalancer/", ":listener/") + "/")
          and by_name["ModifyListener"]["Resources"][0]["ResourceName"] == listener["requestParameters"]["listenerArn"]
          and listener["userIdentity"]["type"] == "IAMUser" and by_name["ModifyListener"]["Username"] == "deploy-bot",
          "a listener's ARN, an IAM user", listener["requestParameters"])
    nodegroup = records["UpdateNodegroupConfig"]
    check(nodegroup["eventSource"] == "eks.amazonaws.com" and nodegroup["requestParameters"]["nodegroupName"] == "ng-general"
          and nodegroup["requestParameters"]["clusterName"] == facts["cluster_name"]
          and by_name["UpdateNodegroupConfig"]["Resources"] == [{"ResourceType": "AWS::EKS::Nodegroup", "ResourceName": "ng-general"}]
          and by_name["UpdateNodegroupConfig"]["Username"] == "admin",
          "a node group, by the default admin session", nodegroup["requestParameters"])
    controller = records["SetSecurityGroups"]
    check(controller["userAgent"].startswith("elbv2.k8s.aws/v2.7.1 ")
          and controller["userIdentity"]["sessionContext"]["webIdFederationData"]["federatedProvider"].startswith(f"arn:aws:iam::{facts['account']}:oidc-provider/oidc.eks.")
          and controller["requestParameters"] == {"loadBalancerArn": lb_arn, "securityGroups": [sgs["k8s-alb"], sgs["eks-nodes"]]},
          "the controller's IRSA session on the load balancer", controller["requestParameters"])
    service = records["UpdateAutoScalingGroup"]
    check(service["userIdentity"] == {"type": "AWSService", "invokedBy": "eks.amazonaws.com"} and "Username" not in by_name["UpdateAutoScalingGroup"]
          and "AccessKeyId" not in by_name["UpdateAutoScalingGroup"] and service["eventSource"] == "autoscaling.amazonaws.com"
          and service["requestParameters"]["owner"] == facts["account"],
          "an AWS service, a free-form resource, {{ account }}", service)

    def lookup(key: str, value: str, **more: Any) -> list[str]:
        found = ct.lookup_events(LookupAttributes=[{"AttributeKey": key, "AttributeValue": value}], **more)["Events"]
        return [e["EventName"] for e in found]

    check(lookup("EventId", by_name["ModifyTargetGroup"]["EventId"]) == ["ModifyTargetGroup"], "EventId")
    check(lookup("EventName", "ModifyListener") == ["ModifyListener"], "EventName")
    check(lookup("EventName", "modifylistener") == [], "EventName is case-sensitive")
    check(lookup("ReadOnly", "true") == ["DescribeTargetGroups"], "ReadOnly true")
    check(len(lookup("ReadOnly", "false")) == 6, "ReadOnly false")
    check(lookup("Username", "jane@example.com") == ["ModifyTargetGroup"], "Username (an assumed role's session)")
    check(lookup("Username", "deploy-bot") == ["ModifyListener"], "Username (an IAM user)")
    check(lookup("ResourceType", "AWS::ElasticLoadBalancingV2::TargetGroup") == ["ModifyTargetGroup", "DescribeTargetGroups"], "ResourceType")
    check(lookup("ResourceName", tg_arn) == ["ModifyTargetGroup", "DescribeTargetGroups"], "ResourceName (a target group's ARN)")
    check(lookup("ResourceName", lb_arn) == ["SetSecurityGroups"], "ResourceName (the load balancer's ARN)")
    check(lookup("EventSource", "ec2.amazonaws.com") == ["AuthorizeSecurityGroupIngress"], "EventSource")
    check(lookup("AccessKeyId", by_name["ModifyTargetGroup"]["AccessKeyId"]) == ["ModifyTargetGroup"], "AccessKeyId")
    check(by_name["SetSecurityGroups"]["AccessKeyId"] != by_name["ModifyTargetGroup"]["AccessKeyId"], "callers have their own keys")

    at = {e["EventName"]: e["EventTime"] for e in events}
    window = lookup("ReadOnly", "false", StartTime=at["AuthorizeSecurityGroupIngress"], EndTime=at["SetSecurityGroups"])
    check(window == ["SetSecurityGroups", "UpdateNodegroupConfig", "ModifyListener", "AuthorizeSecurityGroupIngress"],
          "StartTime and EndTime, both inclusive", window)
    later = [e["EventName"] for e in ct.lookup_events(StartTime=at["SetSecurityGroups"] + timedelta(seconds=1))["Events"]]
    check(later == ["UpdateAutoScalingGroup"], "StartTime alone", later)
    earlier = [e["EventName"] for e in ct.lookup_events(EndTime=at["DescribeTargetGroups"])["Events"]]
    check(earlier == ["DescribeTargetGroups"], "EndTime alone", earlier)

    pages, token, seen = [], None, []
    while True:
        answer = ct.lookup_events(MaxResults=2, **({"NextToken": token} if token else {}))
        pages.append(len(answer["Events"]))
        seen += [e["EventId"] for e in answer["Events"]]
        token = answer.get("NextToken")
        if not token:
            break
    check(pages == [2, 2, 2, 1] and seen == [e["EventId"] for e in events], "MaxResults 2 pages through all, in order", pages)
    paginated = [e["EventId"] for page in ct.get_paginator("lookup_events").paginate(PaginationConfig={"PageSize": 3}) for e in page["Events"]]
    check(paginated == seen, "boto3's paginator", len(paginated))
    first = ct.lookup_events(MaxResults=2)
    check(error_code(lambda: ct.lookup_events(MaxResults=2, NextToken=first["NextToken"],
                                              LookupAttributes=[{"AttributeKey": "ReadOnly", "AttributeValue": "false"}]))
          == ("InvalidNextTokenException", 400), "a token continues only its own query")
    check(error_code(lambda: ct.lookup_events(NextToken="not-a-token")) == ("InvalidNextTokenException", 400), "a made-up token")

    two = [{"AttributeKey": "EventName", "AttributeValue": "ModifyTargetGroup"}, {"AttributeKey": "ReadOnly", "AttributeValue": "false"}]
    check(error_code(lambda: ct.lookup_events(LookupAttributes=two)) == ("InvalidLookupAttributesException", 400), "two lookup attributes")
    check(error_code(lambda: ct.lookup_events(LookupAttributes=[{"AttributeKey": "Resource", "AttributeValue": "x"}]))
          == ("InvalidLookupAttributesException", 400), "an unknown attribute key")
    check(error_code(lambda: ct.lookup_events(LookupAttributes=[{"AttributeKey": "ReadOnly", "AttributeValue": "yes"}]))
          == ("InvalidLookupAttributesException", 400), "ReadOnly neither true nor false")
    check(error_code(lambda: ct.lookup_events(StartTime=now, EndTime=now - timedelta(minutes=1))) == ("InvalidTimeRangeException", 400),
          "StartTime after EndTime")
    for bad in (0, 51):
        check(error_code(lambda: ct.lookup_events(MaxResults=bad)) == ("InvalidMaxResultsException", 400), f"MaxResults {bad}")
    check(error_code(lambda: ct.lookup_events(EventCategory="management")) == ("InvalidEventCategoryException", 400), "EventCategory other than insight")
    check(ct.lookup_events(EventCategory="insight")["Events"] == [], "no Insights events")

    # The lag, live: an event whose eventTime + 3 m falls 3 s from now.
    record = dict(records["ModifyTargetGroup"], eventName="CheckLag", eventID="00000000-0000-4000-8000-00000000c0de",
                  eventTime=(datetime.now(timezone.utc) - LAG + timedelta(seconds=3)).strftime("%Y-%m-%dT%H:%M:%SZ"))
    visible_at = datetime.fromisoformat(record["eventTime"].replace("Z", "+00:00")) + LAG
    body = {"account": facts["account"], "region": region, "lag_seconds": LAG.total_seconds(),
            "events": [{"record": record, "resources": [{"ResourceType": "AWS::ElasticLoadBalancingV2::TargetGroup", "ResourceName": tg_arn}]}]}
    request = urllib.request.Request(f"{endpoint}/_alarm_triage/cloudtrail-events", data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        check(json.loads(answer.read()) == {"recorded": 1}, "the admin route takes an event")
    check(lookup("EventName", "CheckLag") == [], "not shown before eventTime + lag")
    deadline = time.time() + 15
    while time.time() < deadline and not lookup("EventName", "CheckLag"):
        time.sleep(0.5)
    check(lookup("EventName", "CheckLag") == ["CheckLag"] and datetime.now(timezone.utc) >= visible_at, "shown once now >= eventTime + lag")


def kube_get(env: dict[str, str], path: str, accept: str | None = None) -> tuple[int, dict[str, Any], str]:
    config = json.loads(Path(env["KUBECONFIG"]).read_text())
    headers = {"Authorization": f"Bearer {config['users'][0]['user']['token']}"}
    if accept:
        headers["Accept"] = accept
    request = urllib.request.Request(env["KUBE_API_URL"] + path, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, json.loads(answer.read()), answer.headers.get("Content-Type", "")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read()), error.headers.get("Content-Type", "")


def check_kubernetes(env: dict[str, str], facts: dict[str, Any]) -> None:
    now = datetime.fromisoformat(facts["now"])
    code, listed, content_type = kube_get(env, "/api/v1/namespaces/default/configmaps",
                                          "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1")
    item = next((i for i in listed.get("items", []) if i["metadata"]["name"] == "ct-check-config"), None)
    check(code == 200 and listed["kind"] == "PartialObjectMetadataList" and listed["apiVersion"] == "meta.k8s.io/v1"
          and "as=PartialObjectMetadataList" in content_type and item is not None
          and set(item) == {"apiVersion", "kind", "metadata"} and item["kind"] == "PartialObjectMetadata",
          "ConfigMaps as a PartialObjectMetadataList (metadata only)", listed)
    times = [f["time"] for f in item["metadata"]["managedFields"]]
    check(times[-1] == (now - timedelta(minutes=15)).strftime("%Y-%m-%dT%H:%M:%SZ"), "{{ now-15m }} in managedFields", times)
    code, single, _ = kube_get(env, "/api/v1/namespaces/default/configmaps/ct-check-config",
                               "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1")
    check(code == 200 and single["kind"] == "PartialObjectMetadata" and "data" not in single, "one ConfigMap as PartialObjectMetadata", single)
    code, full, _ = kube_get(env, "/api/v1/namespaces/default/configmaps/ct-check-config")
    check(code == 200 and full["data"] == {"WORKERS": "6"}, "without the Accept header, the whole object", full)
    code, _, _ = kube_get(env, "/api/v1/namespaces/default/configmaps/ct-check-config",
                          "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1")
    check(code == 406, "a list form asked of a get is not acceptable", code)

    def events(selector: str) -> tuple[int, list[str]]:
        code, answer, _ = kube_get(env, "/api/v1/events?fieldSelector=" + urllib.request.quote(selector))
        return code, [i["metadata"]["name"] for i in answer.get("items", [])]

    check(events("source=karpenter") == (200, ["ct-check-api-7c9d-x2k4p.2"]), "source=karpenter (cluster-wide)")
    check(events("source=cluster-autoscaler,type=Warning") == (200, ["cluster-autoscaler-status.3"]), "source= with type=")
    check(events("reportingComponent=horizontal-pod-autoscaler,involvedObject.kind=HorizontalPodAutoscaler,reason=SuccessfulRescale")
          == (200, ["ct-check-api.1"]), "reportingComponent=, involvedObject.kind=, reason=")
    check(events("source.component=karpenter")[0] == 400, "source.component is no field label of Events (400, as the API server)")


def run(base: Path, keep: bool) -> None:
    print(f"== {base.name}")
    scratch = Path(tempfile.mkdtemp(prefix="ct-helper-check-"))
    state = scratch / "state"
    world = scratch_world(base, scratch)
    up = json.loads(stack("up", str(world), "--state", str(state), "--json"))
    try:
        check(up["facts"]["cloudtrail_events"] == 8, "the stack loaded the eight changes", up["facts"].get("cloudtrail_events"))
        check_cloudtrail(up["env"], up["facts"])
        check_kubernetes(up["env"], up["facts"])
    finally:
        stack("down", "--state", str(state))
        if not keep:
            shutil.rmtree(scratch, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", action="append", type=Path, help="a world to copy (repeatable)")
    parser.add_argument("--keep", action="store_true", help="keep the scratch directories")
    args = parser.parse_args()
    os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
    try:
        for base in args.base or [ROOT / b for b in DEFAULT_BASES]:
            run(base, args.keep)
    except CheckFailed as error:
        print(f"FAILED: {error}", file=sys.stderr)
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())

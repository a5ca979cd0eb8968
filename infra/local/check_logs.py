"""A by-hand check of a world's logs (world.yaml `logs:` and `log_group:`):
what the Kubernetes API serves as pods/log and what CloudWatch Logs Insights
(moto_world/logs_insights_ext.py) finds, against a running local stack.

    .venv/bin/python infra/local/check_logs.py [--base tests/worlds/alb-target-5xx-bad-rollout] [--keep]

It copies the base world (the trips rollout) into a scratch directory, gives
one new pod an OOM kill (a previous instance), adds a pod with an init
container and two containers, a pod waiting to start and a crash-looping
one, a `log_group` and `logs` of every kind (patterns, literal lines with
planted secrets, a stack trace, a previous instance, pods that are gone,
a line in the future), and starts it with `stack.py up` in a private state
directory. Then it compares every container's pods/log, and the log group's
Insights rows, with what world.py generates for the same now (so the check
is exact and deterministic), exercises the options and errors of both APIs,
starts a second API server over the same files with `--forbid pods/log`,
and stops the stack. About 15 seconds. Exits 1 on the first failed check.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))

import world as worlds  # noqa: E402
from by_hand import CheckFailed, check, copy_world, error_code, stack  # noqa: E402

DEFAULT_BASE = "tests/worlds/alb-target-5xx-bad-rollout"
NS = "trips"
NEW = "itinerary-7f4c9b6d52-"
OOM = "itinerary-7f4c9b6d52-xd9mr"
GONE = ["itinerary-5c8e2a7d94-4kq9p", "itinerary-5c8e2a7d94-b7xnw"]
SEARCH = "search-6d9f7b8c5e-k2m4n"
WAITING = "profile-5b7c9d2e1f-zz9x1"
LOOPING = "fare-worker-7c8d9e0f1a-p4q5r"
BEARER = "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
BOT_QUERY = ('fields @timestamp, kubernetes.pod_name, kubernetes.container_name, log | filter kubernetes.namespace_name = "trips" '
             'and kubernetes.pod_name in ["{a}", "{b}"] | sort @timestamp desc | limit 10000')

MANIFESTS = """\
apiVersion: v1
kind: Pod
metadata:
  name: search-6d9f7b8c5e-k2m4n
  namespace: trips
  labels: {app: search}
  creationTimestamp: "{{ now-30h }}"
spec:
  nodeName: ip-10-84-3-10.ap-southeast-2.compute.internal
  initContainers:
    - {name: warmup, image: busybox:1.36}
  containers:
    - {name: search, image: search:5.1.0}
    - {name: envoy, image: envoyproxy/envoy:v1.30.1}
status:
  phase: Running
  containerStatuses:
    - {name: search, ready: true, restartCount: 0, containerID: "containerd://5e1a5e1a5e1a5e1a5e1a5e1a5e1a5e1a5e1a5e1a5e1a5e1a5e1a5e1a5e1a5e1a", state: {running: {startedAt: "{{ now-30h }}"}}}
    - {name: envoy, ready: true, restartCount: 0, state: {running: {startedAt: "{{ now-30h }}"}}}
---
apiVersion: v1
kind: Pod
metadata:
  name: profile-5b7c9d2e1f-zz9x1
  namespace: trips
  creationTimestamp: "{{ now-1m }}"
spec:
  nodeName: ip-10-84-1-10.ap-southeast-2.compute.internal
  containers:
    - {name: profile, image: profile:3.0.0}
status:
  phase: Pending
  containerStatuses:
    - {name: profile, ready: false, restartCount: 0, state: {waiting: {reason: ContainerCreating}}}
---
apiVersion: v1
kind: Pod
metadata:
  name: fare-worker-7c8d9e0f1a-p4q5r
  namespace: trips
  creationTimestamp: "{{ now-2h }}"
spec:
  nodeName: ip-10-84-2-10.ap-southeast-2.compute.internal
  containers:
    - {name: worker, image: fare-worker:1.4.2}
status:
  phase: Running
  containerStatuses:
    - name: worker
      ready: false
      restartCount: 7
      state: {waiting: {reason: CrashLoopBackOff}}
      lastState: {terminated: {reason: Error, exitCode: 1, startedAt: "{{ now-4m }}", finishedAt: "{{ now-4m }}"}}
"""

LOGS = f"""\
log_group: /aws/containerinsights/trips-prod-apse2/application
logs:
  - namespace: trips
    pod_prefix: {NEW}
    container: itinerary
    patterns:
      - text: 'ERROR ShareController - column "invoices.currency" does not exist (request {{uuid}}, took {{n}}ms)'
        per_minute: 12
        from: -6m
      - text: '{{ip}} - - "GET /v2/itineraries/{{hex}} HTTP/1.1" 200 {{n}} {{ms}} pod={{pod}}'
        per_minute: 30
  - namespace: trips
    pods: [itinerary-7f4c9b6d52-8wjzc, itinerary-7f4c9b6d52-fh3lk]
    lines:
      - {{at: -5m, text: 'WARN  Startup - connected to postgres://app:hunter2-s3cr3t@db.internal:5432/trips as app'}}
      - {{at: -5m, text: 'DEBUG auth header Authorization: {BEARER}'}}
  - namespace: trips
    pods: [{OOM}]
    previous: true
    lines:
      - {{at: -3m, text: 'java.lang.OutOfMemoryError: Java heap space'}}
      - {{at: -3m, text: '\tat com.example.Cache.put(Cache.java:42)'}}
  - namespace: trips
    pods: [{SEARCH}]
    container: envoy
    patterns:
      - {{text: '[warning][config] deprecated field: envoy.api.v2.route.RouteAction.max_grpc_timeout', per_minute: 0.5}}
  - namespace: trips
    pods: [{SEARCH}]
    container: search
    patterns:
      - {{text: 'INFO  query "{{word}}" answered in {{ms}} user=jane.doe@example.com key=AKIAIOSFODNN7EXAMPLE', per_minute: 6, from: -1h}}
  - namespace: trips
    pods: [{", ".join(GONE)}]
    deleted: true
    container: itinerary
    node: ip-10-84-1-10.ap-southeast-2.compute.internal
    patterns:
      - {{text: '{{ip}} - - "GET /v2/itineraries/{{hex}} HTTP/1.1" 200 {{n}} {{ms}}', per_minute: 30, from: -2h, to: -5m}}
  - namespace: trips
    pods: [{LOOPING}]
    previous: true
    lines:
      - {{at: -4m, text: 'FATAL config: FARE_API_TOKEN not set'}}
  - namespace: trips
    pods: [itinerary-7f4c9b6d52-8wjzc]
    lines:
      - {{at: +30m, text: 'INFO  printed half an hour after up'}}
"""


def scratch_world(base: Path, into: Path) -> Path:
    world = copy_world(base, into, "logs")
    pods = world / "kubernetes" / "itinerary-pods.yaml"
    text = pods.read_text()
    at = text.index(f"name: {OOM}")
    tail = text[at:].replace("      restartCount: 0", '      restartCount: 1\n      lastState: {terminated: {reason: OOMKilled, '
                             'exitCode: 137, startedAt: "{{ now-12m }}", finishedAt: "{{ now-3m }}"}}', 1)
    tail = tail.replace('state: {running: {startedAt: "{{ now-12m }}"}}', 'state: {running: {startedAt: "{{ now-3m }}"}}', 1)
    pods.write_text(text[:at] + tail)
    (world / "kubernetes" / "logs-check.yaml").write_text(MANIFESTS)
    (world / "world.yaml").write_text((world / "world.yaml").read_text() + "\n" + LOGS)
    return world


def kube(url: str, token: str | None, path: str) -> tuple[int, str, bytes]:
    request = urllib.request.Request(url + path, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.headers.get("Content-Type", ""), answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers.get("Content-Type", ""), error.read()


def expected_lines(items: list[dict[str, Any]], pod: str, container: str, previous: bool, now_ns: int) -> list[tuple[int, str]]:
    for item in items:
        if (item["pod"], item["container"], item["previous"]) == (pod, container, previous):
            return [(t, text) for t, text in item["lines"] if t <= now_ns]
    return []


def body(lines: list[tuple[int, str]], timestamps: bool = False) -> bytes:
    return "".join((f"{worlds.rfc3339_nano(t)} " if timestamps else "") + text + "\n" for t, text in lines).encode()


def check_kubernetes(env: dict[str, str], items: list[dict[str, Any]], state: Path) -> None:
    url = env["KUBE_API_URL"]
    token = json.loads(Path(env["KUBECONFIG"]).read_text())["users"][0]["user"]["token"]
    base = f"/api/v1/namespaces/{NS}/pods"

    def get(path: str) -> tuple[int, str, bytes]:
        return kube(url, token, base + path)

    def message(answer: tuple[int, str, bytes]) -> tuple[int, str]:
        return answer[0], json.loads(answer[2]).get("message", "")

    check(kube(url, None, f"{base}/{NEW}8wjzc/log")[0] == 401, "pods/log needs the bearer token (401)")
    now_ns = time.time_ns()
    for item in items:
        if item["deleted"]:
            continue
        previous = item["previous"]
        container = item["container"]
        code, content_type, got = get(f"/{item['pod']}/log?container={container}&timestamps=true" + ("&previous=true" if previous else ""))
        wanted = body(expected_lines(items, item["pod"], container, previous, now_ns), True)
        check(code == 200 and content_type.startswith("text/plain") and got == wanted,
              f"{item['pod']}/{container}{' (previous)' if previous else ''}: {len(wanted.splitlines())} lines exactly as generated",
              (code, content_type, got[:300], wanted[:300]))
    full = expected_lines(items, f"{NEW}8wjzc", "itinerary", False, now_ns)
    check(get(f"/{NEW}8wjzc/log")[2] == body(full), "one container: no container parameter needed, oldest first, \\n-separated")
    check(not any("half an hour" in text for _, text in full) and get(f"/{NEW}8wjzc/log")[2].count(b"half an hour") == 0,
          "a line the world prints later does not exist yet")
    check(BEARER.encode() in get(f"/{NEW}8wjzc/log")[2], "planted secrets are served as printed")
    check(get(f"/{NEW}8wjzc/log?tailLines=3")[2] == body(full[-3:]), "tailLines=3")
    check(get(f"/{NEW}8wjzc/log?tailLines=0")[2] == b"", "tailLines=0")
    check(get(f"/{NEW}8wjzc/log?limitBytes=37")[2] == body(full)[:37], "limitBytes cuts mid-line")
    since = full[len(full) // 2][0]
    stamp = worlds.rfc3339_nano(since)
    check(get(f"/{NEW}8wjzc/log?sinceTime={stamp}")[2] == body([line for line in full if line[0] >= since]),
          "sinceTime (RFC 3339 with nanoseconds): lines at or after it")
    window = 120
    got = get(f"/{NEW}8wjzc/log?sinceSeconds={window}&timestamps=true")[2].decode().splitlines()
    now = datetime.now(timezone.utc).timestamp()
    first = datetime.fromisoformat(got[0].split(" ", 1)[0][:26] + "+00:00").timestamp() if got else 0
    check(got and now - window - 2 <= first <= now and len(got) < len(full), "sinceSeconds=120", (got[:1], len(got)))
    code, text = message(get(f"/{NEW}8wjzc/log?sinceSeconds=5&sinceTime={stamp}"))
    check(code == 422 and "at most one of `sinceTime` or `sinceSeconds`" in text, "sinceTime with sinceSeconds: 422 Invalid", text)
    check(message(get(f"/{NEW}8wjzc/log?sinceSeconds=0"))[0] == 422, "sinceSeconds=0: 422")
    check(message(get(f"/{NEW}8wjzc/log?limitBytes=0"))[0] == 422, "limitBytes=0: 422")
    check(message(get(f"/{NEW}8wjzc/log?sinceTime=yesterday"))[0] == 400, "a sinceTime that is no RFC 3339 time: 400")
    check(message(get(f"/{NEW}8wjzc/log?previous=true")) ==
          (400, f'previous terminated container "itinerary" in pod "{NEW}8wjzc" not found'), "previous=true without a previous instance: 400")
    check(message(get(f"/{SEARCH}/log")) == (400, f"a container name must be specified for pod {SEARCH}, choose one of: [warmup search envoy]"),
          "two containers, none named: 400 naming them")
    check(message(get(f"/{SEARCH}/log?container=nginx")) == (400, f"container nginx is not valid for pod {SEARCH}"), "an unknown container: 400")
    check(get(f"/{SEARCH}/log?container=warmup")[:1] == (200,), "an init container with no lines: 200, empty")
    check(message(get(f"/{WAITING}/log")) == (400, f'container "profile" in pod "{WAITING}" is waiting to start: ContainerCreating'),
          "a container waiting to start: 400")
    looping = body(expected_lines(items, LOOPING, "worker", True, now_ns))
    check(get(f"/{LOOPING}/log")[2] == looping == get(f"/{LOOPING}/log?previous=true")[2] and looping,
          "CrashLoopBackOff: the instance that ended, with and without previous=true")
    check(get(f"/{OOM}/log?previous=true")[2].startswith(b"java.lang.OutOfMemoryError"), "after an OOM kill: the previous instance's last words")
    check(message(get(f"/{GONE[0]}/log")) == (404, f'pods "{GONE[0]}" not found'), "a pod that is gone: 404")
    calls = json.loads(urllib.request.urlopen(url + "/_alarm_triage/calls").read())["calls"]
    check(calls.get("GET pods/log", 0) > 20 and "GET pods" not in calls, "fault rules count pods/log as its own kind", calls)
    rule = {"rules": [{"path": "/pods/[^/]+/log$", "status": 503, "times": 1}]}
    urllib.request.urlopen(urllib.request.Request(url + "/_alarm_triage/faults", data=json.dumps(rule).encode(), method="POST"))
    check(get(f"/{NEW}8wjzc/log?tailLines=1")[0] == 503 and get(f"/{NEW}8wjzc/log?tailLines=1")[0] == 200, "a fault rule on pods/log")

    # The same files behind an API server that may not read logs.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    process = subprocess.Popen([sys.executable, str(HERE / "kube_api.py"), "--port", str(port), "--manifests", str(state / "kubernetes"),
                                "--logs", str(state / "pod-logs.json"), "--forbid", "pods/log"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        forbidden = f"http://127.0.0.1:{port}"
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                urllib.request.urlopen(forbidden + "/healthz", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        code, _, answer = kube(forbidden, token, f"{base}/{NEW}8wjzc/log")
        check(code == 403 and json.loads(answer)["message"].startswith(f'pods "{NEW}8wjzc" is forbidden')
              and 'cannot get resource "pods/log"' in json.loads(answer)["message"], "--forbid pods/log: 403", answer)
        check(kube(forbidden, token, f"{base}/{NEW}8wjzc")[0] == 200, "--forbid pods/log leaves the pods readable")
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=10)


def insights(env: dict[str, str], facts: dict[str, Any]) -> Any:
    import boto3

    return boto3.client("logs", endpoint_url=env["AWS_ENDPOINT_URL"], region_name=facts["region"],
                        aws_access_key_id=env["AWS_ACCESS_KEY_ID"], aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
                        aws_session_token=env["AWS_SESSION_TOKEN"])


def check_insights(env: dict[str, str], facts: dict[str, Any], items: list[dict[str, Any]], now: datetime) -> None:
    logs = insights(env, facts)
    group = facts["log_group"]
    check([g["logGroupName"] for g in logs.describe_log_groups(logGroupNamePrefix="/aws/containerinsights/")["logGroups"]] == [group],
          "DescribeLogGroups finds the one container log group")
    streams = {s["logStreamName"] for s in logs.describe_log_streams(logGroupName=group)["logStreams"]}
    check(streams == {worlds.log_stream_name(item) for item in items}, "a log stream per container instance, named as Fluent Bit names it",
          sorted(streams)[:2])
    check(len([s for s in streams if GONE[0] in s]) == 1, "the pods that are gone have their streams")
    start, end = int(now.timestamp()) - 3 * 3600, int(time.time())

    def results(query: str, **more: Any) -> dict[str, Any]:
        query_id = logs.start_query(logGroupName=group, startTime=more.pop("start", start), endTime=more.pop("end", end),
                                    queryString=query, **more)["queryId"]
        first = logs.get_query_results(queryId=query_id)
        if first["status"] != "Running" or first["results"]:
            raise CheckFailed(f"the first GetQueryResults of {query!r} answered {first['status']} (expected Running, no rows)")
        return logs.get_query_results(queryId=query_id)

    now_ms = time.time_ns() // 10**6
    pods = [f"{NEW}8wjzc", GONE[0]]
    answer = results(BOT_QUERY.format(a=pods[0], b=pods[1]))
    check(True, "each query's first GetQueryResults answers Running with no rows, the next Complete")
    rows = [{cell["field"]: cell["value"] for cell in row} for row in answer["results"]]
    wanted = sorted(((t // 10**6, item["pod"], text) for item in items if item["pod"] in pods
                     for t, text in item["lines"] if t // 10**6 <= now_ms and start * 1000 <= t // 10**6), key=lambda w: w[0], reverse=True)
    check(answer["status"] == "Complete" and len(rows) == len(wanted) > 1000, "the bot's query: every line of both pods, the gone one too",
          (len(rows), len(wanted)))
    check([r["@timestamp"] for r in rows] == sorted((r["@timestamp"] for r in rows), reverse=True), "sort @timestamp desc")
    check([(r["kubernetes.pod_name"], r["log"]) for r in rows[:50]] == [(w[1], w[2]) for w in wanted[:50]], "rows agree with the generated lines")
    check(all(list(r) == ["@timestamp", "kubernetes.pod_name", "kubernetes.container_name", "log", "@ptr"] for r in rows),
          "each row: the fields asked for, then @ptr")
    moment = datetime.strptime(rows[0]["@timestamp"], "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=timezone.utc)
    check(int(moment.timestamp() * 1000 + 0.5) == wanted[0][0], "@timestamp as Insights writes it (2026-12-04 08:10:00.123)", rows[0]["@timestamp"])
    check(answer["statistics"]["recordsMatched"] == float(len(rows)) and answer["statistics"]["recordsScanned"] >= len(rows)
          and answer["statistics"]["bytesScanned"] > 0, "statistics", answer["statistics"])

    oom = results('fields @timestamp, @message, @logStream, @log | filter log like /OutOfMemoryError|FATAL/ | sort @timestamp asc')
    rows = [{cell["field"]: cell["value"] for cell in row} for row in oom["results"]]
    record = json.loads(rows[-1]["@message"]) if rows else {}
    check(len(rows) == 2 and set(record) == {"log", "stream", "time", "kubernetes"} and record["stream"] == "stdout"
          and record["kubernetes"]["pod_name"] == OOM and record["kubernetes"]["namespace_name"] == NS
          and record["kubernetes"]["container_name"] == "itinerary" and record["kubernetes"]["host"].startswith("ip-10-84-")
          and record["time"].endswith("Z") and len(record["time"]) == 30 and rows[-1]["@log"] == f"{facts['account']}:{group}"
          and OOM in rows[-1]["@logStream"], "previous instances' lines are in the group; @message is Fluent Bit's JSON", rows)
    check(len(results('filter log like "Bearer "')["results"]) == 2, 'like "substring"')
    check(len(results('fields log | filter kubernetes.container_name = "envoy" | limit 3')["results"]) == 3, "limit 3")
    check(len(results("fields log", limit=7)["results"]) == 7, "StartQuery's limit caps the rows")
    other = results('fields log | filter kubernetes.namespace_name != "trips"')
    check(other["results"] == [] and other["statistics"]["recordsMatched"] == 0, "!= and no match")
    search = results(f'fields kubernetes.labels.app | filter kubernetes.pod_name in ["{SEARCH}"] and kubernetes.container_name = "search" | limit 1')
    check(search["results"][0][0] == {"field": "kubernetes.labels.app", "value": "search"}, "JSON fields flattened with dots")
    check(results('fields log | filter log like "half an hour"', end=end + 3600)["results"] == [], "future lines are not found")
    narrow = results("fields log", start=end - 60, end=end)
    check(0 < len(narrow["results"]) < 400, "startTime and endTime bound the rows", len(narrow["results"]))
    check(error_code(lambda: logs.start_query(logGroupName=group, startTime=start, endTime=end, queryString="stats count(*) by bin(1m)"))
          == ("MalformedQueryException", 400), "a command outside the subset: MalformedQueryException")
    check(error_code(lambda: logs.start_query(logGroupName="/aws/containerinsights/nope/application", startTime=start, endTime=end,
                                              queryString="fields log")) == ("ResourceNotFoundException", 400), "an unknown log group")
    check(error_code(lambda: logs.get_query_results(queryId="00000000-0000-4000-8000-000000000000")) == ("ResourceNotFoundException", 400),
          "an unknown query id")
    query_id = logs.start_query(logGroupNames=[group], startTime=start, endTime=end, queryString="fields log")["queryId"]
    check(logs.stop_query(queryId=query_id)["success"] is True and logs.get_query_results(queryId=query_id)["status"] == "Cancelled",
          "StopQuery while Running")
    arn = f"arn:aws:logs:{facts['region']}:{facts['account']}:log-group:{group}"
    query_id = logs.start_query(logGroupIdentifiers=[arn], startTime=start, endTime=end, queryString="fields log | limit 1")["queryId"]
    logs.get_query_results(queryId=query_id)
    check(logs.get_query_results(queryId=query_id)["status"] == "Complete" and logs.stop_query(queryId=query_id)["success"] is False,
          "logGroupIdentifiers (an ARN); StopQuery after Complete")


def run(base: Path, keep: bool) -> None:
    print(f"== {base.name} with logs")
    scratch = Path(tempfile.mkdtemp(prefix="logs-check-"))
    state = scratch / "state"
    world_dir = scratch_world(base, scratch)
    up = json.loads(stack("up", str(world_dir), "--state", str(state), "--json"))
    try:
        now = datetime.fromisoformat(up["facts"]["now"])
        items = worlds.pod_logs(worlds.load(world_dir, now))
        check(up["facts"]["log_events"] == up["facts"]["log_lines"] == sum(len(i["lines"]) for i in items),
              "the stack loaded every generated line into the log group", up["facts"].get("log_events"))
        check_kubernetes(up["env"], items, state)
        check_insights(up["env"], up["facts"], items, now)
    finally:
        stack("down", "--state", str(state))
        if not keep:
            shutil.rmtree(scratch, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", type=Path, default=ROOT / DEFAULT_BASE, help="the trips rollout world, or a copy of it")
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory")
    args = parser.parse_args()
    os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
    started = time.time()
    try:
        run(args.base, args.keep)
    except CheckFailed as error:
        print(f"FAILED: {error}", file=sys.stderr)
        return 1
    print(f"all checks passed in {time.time() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A small, read-only Kubernetes API server for local worlds.

No kube-apiserver can be installed here, so this serves a world's manifests
with the real API paths and JSON shapes, enough for kube-rs clients:

- core/v1 and group APIs: get and list (with labelSelector and fieldSelector)
  for any kind present in the manifests (pods, services, endpoints, events,
  configmaps, nodes, ...), namespaced and cluster-wide (/api/v1/events);
- field selectors as the API server reads them: a field the object lacks is
  "", an Event's `source` is its source.component, and Events and Pods accept
  only their own field labels (any other: 400 "field label not supported");
- metadata-only answers, as kube-rs's list_metadata and get_metadata ask with
  `Accept: application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1`
  (or `as=PartialObjectMetadata` for a get): the objects' metadata alone, in a
  meta.k8s.io/v1 PartialObjectMetadataList (406 for an `as=` form that cannot
  be given, such as a list form asked of a get, with no plain JSON beside it);
- apps/v1 deployments and replicasets, autoscaling/v2 and v1 HPAs (a v2 HPA
  is also served as v1, as the API server converts between versions);
- metrics.k8s.io/v1beta1 PodMetrics and elbv2.k8s.aws/v1beta1 TargetGroupBindings;
- Karpenter's custom resources, all cluster-scoped: karpenter.sh/v1 NodePools and
  NodeClaims, karpenter.k8s.aws/v1 EC2NodeClasses. As with a Helm install, the
  three come together: a world with any of them serves all three (an empty
  list where it has none); a world with none answers 404 for both groups, as
  a cluster without Karpenter's CRDs does;
- the service proxy (/api/v1/namespaces/NS/services/NAME:PORT/proxy/...)
  forwarding to the world's Prometheus, as an API server would;
- pods/log (/api/v1/namespaces/NS/pods/NAME/log): what the world's containers
  printed (`--logs FILE`, written by stack.py from world.yaml's `logs`), with
  the API server's and the kubelet's options and errors: container,
  previous, sinceSeconds or sinceTime, timestamps, tailLines, limitBytes;
  only lines printed by now (the real clock) exist;
- discovery documents (/api, /apis, /api/v1, /apis/GROUP/VERSION).

A group that is neither built in (core, apps, autoscaling, metrics.k8s.io,
elbv2.k8s.aws, ...) nor in the manifests is answered 404, discovery included;
so is a cluster-scoped resource asked for under /namespaces/NS/.

Authentication is checked as an EKS cluster does: a bearer token in the
`k8s-aws-v1.<base64url>` format, else 401. A world can make it answer 401 to
everything (no access entry) or 403 on some resources (missing RBAC).
Writes are refused with 405: the bot must never need them.

Faults and delays (http_faults.py) can be injected on any path, the service
proxy included, and answered as the API server does, with a `Status`:

    POST   /_alarm_triage/faults  {"rules": [{"path": "/proxy/api/v1/query", "delay_ms": 0, "status": 503,
                                              "reason": "ServiceUnavailable", "message": "...", "times": 1,
                                              "retry_after": 1, "drop": false}]}
    DELETE /_alarm_triage/faults  clears them
    GET    /_alarm_triage/calls   requests counted by method and resource ("GET pods",
                                  "GET deployments.apps", "GET proxy/prometheus-server:80"); DELETE resets

The admin paths need no token; /healthz, /readyz and /livez are never faulted.
A delay only holds its own request: each request has its own thread.

    python kube_api.py --port PORT --manifests DIR [--prometheus URL --prometheus-service NS/NAME:PORT]
        [--auth ok|unauthorized] [--forbid RESOURCE ...] [--logs FILE]

--forbid takes path fragments (`metrics.k8s.io`, `/pods`) and RBAC
subresources: `pods/log` forbids the logs alone (a fragment such as `/pods`
forbids them too, being part of their path).
"""

from __future__ import annotations

import argparse
import base64
import json
import re
import signal
import sys
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from datetime import datetime, timezone
from typing import Any
from urllib.parse import parse_qs, urlsplit

import yaml

from http_faults import FaultRules, read_body

# kind -> (plural resource name, namespaced)
KINDS = {
    "Pod": ("pods", True),
    "Service": ("services", True),
    "Endpoints": ("endpoints", True),
    "EndpointSlice": ("endpointslices", True),
    "Event": ("events", True),
    "Node": ("nodes", False),
    "Namespace": ("namespaces", False),
    "Deployment": ("deployments", True),
    "ReplicaSet": ("replicasets", True),
    "DaemonSet": ("daemonsets", True),
    "StatefulSet": ("statefulsets", True),
    "HorizontalPodAutoscaler": ("horizontalpodautoscalers", True),
    "PodMetrics": ("pods", True),
    "NodeMetrics": ("nodes", False),
    "TargetGroupBinding": ("targetgroupbindings", True),
    "ConfigMap": ("configmaps", True),
    "Ingress": ("ingresses", True),
    "IngressClass": ("ingressclasses", False),
    "NodePool": ("nodepools", False),
    "NodeClaim": ("nodeclaims", False),
    "EC2NodeClass": ("ec2nodeclasses", False),
}

# Custom resource groups installed together (one Helm chart): group -> (version, kinds).
KARPENTER = {
    "karpenter.sh": ("v1", ("NodePool", "NodeClaim")),
    "karpenter.k8s.aws": ("v1", ("EC2NodeClass",)),
}

# Groups every cluster of these worlds serves, even with nothing of theirs in
# the manifests (an empty list, not a 404): Kubernetes' own, metrics-server's
# and the AWS Load Balancer Controller's.
BUILT_IN_GROUPS = {
    "", "apps", "autoscaling", "batch", "policy", "discovery.k8s.io", "events.k8s.io", "networking.k8s.io",
    "rbac.authorization.k8s.io", "storage.k8s.io", "coordination.k8s.io", "scheduling.k8s.io", "node.k8s.io",
    "apiextensions.k8s.io", "admissionregistration.k8s.io", "apiregistration.k8s.io", "certificates.k8s.io",
    "flowcontrol.apiserver.k8s.io", "metrics.k8s.io", "elbv2.k8s.aws",
}


def _group_version(api_version: str) -> tuple[str, str]:
    if "/" in api_version:
        group, version = api_version.split("/", 1)
        return group, version
    return "", api_version


class Store:
    """Manifests indexed by (group, resource) -> list of objects."""

    def __init__(self, directory: Path):
        self.objects: dict[tuple[str, str], list[dict[str, Any]]] = {}
        self.versions: dict[str, set[str]] = {}
        for path in sorted(directory.glob("*.y*ml")):
            for index, document in enumerate(yaml.safe_load_all(path.read_text())):
                if not document:
                    continue
                for item in document.get("items", [document]) if document.get("kind", "").endswith("List") else [document]:
                    self._add(item, f"{path.name} document {index + 1}")
        if any(group in self.versions for group in KARPENTER):
            for group, (version, _) in KARPENTER.items():
                self.versions.setdefault(group, set()).add(version)

    def _add(self, obj: dict[str, Any], where: str) -> None:
        for field in ("apiVersion", "kind", "metadata"):
            if field not in obj:
                raise ValueError(f"{where}: missing {field}")
        kind = obj["kind"]
        if kind not in KINDS:
            raise ValueError(f"{where}: kind {kind} is not served (known: {', '.join(sorted(KINDS))})")
        group, version = _group_version(obj["apiVersion"])
        resource, namespaced = KINDS[kind]
        metadata = obj["metadata"]
        metadata.setdefault("uid", f"uid-{abs(hash((group, resource, metadata.get('namespace'), metadata['name']))):x}")
        metadata.setdefault("resourceVersion", "1")
        if namespaced:
            metadata.setdefault("namespace", "default")
        self.objects.setdefault((group, resource), []).append(obj)
        self.versions.setdefault(group, set()).add(version)
        if group == "autoscaling":
            self.versions[group].update({"v1", "v2"})

    def serves(self, group: str, version: str) -> bool:
        """Whether the API server knows the group/version: built in, or installed
        (a custom resource is served only at the versions its manifests use)."""
        return group in BUILT_IN_GROUPS or version in self.versions.get(group, ())

    def resources(self, group: str) -> list[str]:
        """The resources a group/version discovery document lists."""
        listed = [r for (g, r) in self.objects if g == group]
        if group in KARPENTER:
            listed += [KINDS[kind][0] for kind in KARPENTER[group][1] if KINDS[kind][0] not in listed]
        return listed

    def find(self, group: str, resource: str, namespace: str | None) -> list[dict[str, Any]]:
        found = self.objects.get((group, resource), [])
        if namespace is None:
            return found
        return [o for o in found if o["metadata"].get("namespace") == namespace]


# --- selectors ----------------------------------------------------------------

_SET_RE = re.compile(r"^\s*([\w./-]+)\s+(in|notin)\s+\(([^)]*)\)\s*$")


def _split_requirements(selector: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for char in selector:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    if current.strip():
        parts.append(current)
    return parts


def label_matches(labels: dict[str, str], selector: str) -> bool:
    for requirement in _split_requirements(selector):
        requirement = requirement.strip()
        match = _SET_RE.match(requirement)
        if match:
            key, op, values = match.group(1), match.group(2), {v.strip() for v in match.group(3).split(",")}
            if (op == "in") != (labels.get(key) in values):
                return False
        elif "!=" in requirement:
            key, value = (s.strip() for s in requirement.split("!=", 1))
            if labels.get(key) == value:
                return False
        elif "=" in requirement:
            key, value = (s.strip() for s in requirement.replace("==", "=").split("=", 1))
            if labels.get(key) != value:
                return False
        elif requirement.startswith("!"):
            if requirement[1:].strip() in labels:
                return False
        elif requirement not in labels:
            return False
    return True


# Field labels whose path in the object differs from the label, per resource:
# an Event's `source` is its source.component (the component that reported it).
FIELD_ALIASES = {
    ("", "events"): {"source": "source.component"},
}
# The field labels the API server accepts for these resources (any other is
# refused with 400 "field label not supported"); other resources are not checked.
SUPPORTED_FIELDS = {
    ("", "events"): {
        "metadata.name", "metadata.namespace", "involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
        "involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion", "involvedObject.fieldPath",
        "reason", "reportingComponent", "source", "type",
    },
    ("", "pods"): {
        "metadata.name", "metadata.namespace", "spec.nodeName", "spec.restartPolicy", "spec.schedulerName",
        "spec.serviceAccountName", "spec.hostNetwork", "status.phase", "status.podIP", "status.podIPs",
        "status.nominatedNodeName",
    },
}


def _field_requirements(selector: str) -> list[tuple[str, str, bool]]:
    """`type=Warning,reason!=BackOff` -> [(label, value, negated)]."""
    out = []
    for requirement in selector.split(","):
        if not requirement.strip():
            continue
        negate = "!=" in requirement
        if "=" not in requirement:
            raise ValueError(f"invalid selector: '{selector}'; can't understand '{requirement}'")
        label, value = requirement.replace("!=", "=").replace("==", "=").split("=", 1)
        out.append((label.strip(), value.strip(), negate))
    return out


def unsupported_field(selector: str, group: str, resource: str) -> str | None:
    """The first field label of `selector` the API server would refuse for this resource, or None."""
    supported = SUPPORTED_FIELDS.get((group, resource))
    if supported is None:
        return None
    for label, _, _ in _field_requirements(selector):
        if label not in supported:
            return label
    return None


def field_matches(obj: dict[str, Any], selector: str, group: str = "", resource: str = "") -> bool:
    aliases = FIELD_ALIASES.get((group, resource), {})
    for label, value, negate in _field_requirements(selector):
        current: Any = obj
        for part in aliases.get(label, label).split("."):
            current = current.get(part) if isinstance(current, dict) else None
        # A field the object does not have is the empty string, as the API server compares it.
        text = "" if current is None else (str(current).lower() if isinstance(current, bool) else str(current))
        if (text == value) == negate:
            return False
    return True


# --- version conversion ---------------------------------------------------------

def hpa_as_v1(obj: dict[str, Any]) -> dict[str, Any]:
    spec, status = obj.get("spec", {}), obj.get("status", {})
    target = None
    for metric in spec.get("metrics", []):
        resource = metric.get("resource", {})
        if metric.get("type") == "Resource" and resource.get("name") == "cpu":
            target = resource.get("target", {}).get("averageUtilization")
    current = None
    for metric in status.get("currentMetrics", []) or []:
        resource = metric.get("resource", {})
        if resource.get("name") == "cpu":
            current = resource.get("current", {}).get("averageUtilization")
    v1_spec = {k: spec[k] for k in ("scaleTargetRef", "minReplicas", "maxReplicas") if k in spec}
    if target is not None:
        v1_spec["targetCPUUtilizationPercentage"] = target
    v1_status = {k: status[k] for k in ("currentReplicas", "desiredReplicas", "lastScaleTime", "observedGeneration") if k in status}
    if current is not None:
        v1_status["currentCPUUtilizationPercentage"] = current
    return {"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": obj["metadata"], "spec": v1_spec, "status": v1_status}


def hpa_as_v2(obj: dict[str, Any]) -> dict[str, Any]:
    spec, status = obj.get("spec", {}), obj.get("status", {})
    v2_spec = {k: spec[k] for k in ("scaleTargetRef", "minReplicas", "maxReplicas") if k in spec}
    if "targetCPUUtilizationPercentage" in spec:
        v2_spec["metrics"] = [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": spec["targetCPUUtilizationPercentage"]}}}]
    v2_status = {k: status[k] for k in ("currentReplicas", "desiredReplicas", "lastScaleTime", "observedGeneration") if k in status}
    if "currentCPUUtilizationPercentage" in status:
        v2_status["currentMetrics"] = [{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": status["currentCPUUtilizationPercentage"]}}}]
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": obj["metadata"], "spec": v2_spec, "status": v2_status}


def in_version(obj: dict[str, Any], group: str, version: str) -> dict[str, Any]:
    stored_group, stored_version = _group_version(obj["apiVersion"])
    if group == "autoscaling" and stored_version != version:
        return hpa_as_v1(obj) if version == "v1" else hpa_as_v2(obj)
    return obj


# --- metadata-only answers -----------------------------------------------------------

PARTIAL_CONTENT_TYPE = "application/json;as={kind};g=meta.k8s.io;v=v1"


def metadata_only(accept: str, single: bool) -> str | bool:
    """Whether the Accept header asks for PartialObjectMetadata (a get) or
    PartialObjectMetadataList (a list), as kube-rs's get_metadata and
    list_metadata do. The first media type the server can give wins; a header
    that only names `as=` forms it cannot give is "unacceptable" (406)."""
    wanted = "PartialObjectMetadata" if single else "PartialObjectMetadataList"
    refused = False
    for media in accept.split(","):
        parts = [p.strip() for p in media.split(";")]
        kind = parts[0].lower()
        parameters = dict(p.split("=", 1) for p in parts[1:] if "=" in p)
        if kind not in ("application/json", "application/*", "*/*"):
            continue
        as_kind = parameters.get("as")
        if as_kind is None:
            return False
        if as_kind == wanted and parameters.get("g", "meta.k8s.io") == "meta.k8s.io" and parameters.get("v", "v1") in ("v1", "v1beta1"):
            return True
        refused = True  # e.g. a list form asked of a get, or Table: not served here
    # Only JSON is served; a header naming no JSON at all gets JSON as before.
    return "unacceptable" if refused else False


def partial_metadata(obj: dict[str, Any]) -> dict[str, Any]:
    """An object as PartialObjectMetadata: its metadata alone."""
    return {"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata", "metadata": obj["metadata"]}


# --- pods/log ------------------------------------------------------------------------

class PodLogs:
    """The lines each container instance printed (stack.py's logs file:
    {"containers": [{"namespace", "pod", "container", "previous", "lines":
    [[nanoseconds, text], ...]}]}), oldest first."""

    def __init__(self, path: Path | None):
        self.by_instance: dict[tuple[str, str, str, bool], tuple[list[int], list[str]]] = {}
        if path is None:
            return
        for item in json.loads(path.read_text()).get("containers", []):
            lines = sorted(((int(t), str(text)) for t, text in item["lines"]), key=lambda line: line[0])
            key = (item["namespace"], item["pod"], item["container"], bool(item.get("previous")))
            self.by_instance[key] = ([t for t, _ in lines], [text for _, text in lines])

    def lines(self, namespace: str, pod: str, container: str, previous: bool) -> tuple[list[int], list[str]]:
        return self.by_instance.get((namespace, pod, container, previous), ([], []))


class LogOptionsError(Exception):
    def __init__(self, code: int, reason: str, message: str):
        super().__init__(message)
        self.code, self.reason, self.message = code, reason, message


def _rfc3339(value: str) -> int:
    """An RFC 3339 time (as metav1.Time takes it) in nanoseconds since the epoch."""
    match = re.fullmatch(r"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})", value)
    if not match:
        raise ValueError(value)
    moment = datetime.fromisoformat(match.group(1) + ("+00:00" if match.group(3) == "Z" else match.group(3)))
    return int(moment.timestamp()) * 10**9 + int((match.group(2) or "0").ljust(9, "0"))


def log_options(query: dict[str, str]) -> dict[str, Any]:
    """PodLogOptions from the query string, refused as the API server refuses
    them: a value that does not parse is a 400, an invalid combination a 422
    (PodLogOptions "NAME" is invalid: ...)."""
    def integer(key: str) -> int | None:
        if key not in query:
            return None
        try:
            return int(query[key])
        except ValueError:
            raise LogOptionsError(400, "BadRequest", f'strconv.ParseInt: parsing "{query[key]}": invalid syntax')

    def boolean(key: str) -> bool:
        value = query.get(key, "false")
        if value.lower() in ("true", "1", "t"):
            return True
        if value.lower() in ("false", "0", "f", ""):
            return False
        raise LogOptionsError(400, "BadRequest", f'strconv.ParseBool: parsing "{value}": invalid syntax')

    since_time = None
    if "sinceTime" in query:
        try:
            since_time = _rfc3339(query["sinceTime"])
        except ValueError:
            raise LogOptionsError(400, "BadRequest", f'parsing time "{query["sinceTime"]}" as "2006-01-02T15:04:05Z07:00": '
                                  "cannot parse it as RFC 3339")
    options = {"container": query.get("container", ""), "previous": boolean("previous"), "timestamps": boolean("timestamps"),
               "follow": boolean("follow"), "since_seconds": integer("sinceSeconds"), "since_time": since_time,
               "tail_lines": integer("tailLines"), "limit_bytes": integer("limitBytes")}
    errors = []
    if options["tail_lines"] is not None and options["tail_lines"] < 0:
        errors.append(f"tailLines: Invalid value: {options['tail_lines']}: must be greater than or equal to 0")
    if options["limit_bytes"] is not None and options["limit_bytes"] < 1:
        errors.append(f"limitBytes: Invalid value: {options['limit_bytes']}: must be greater than 0")
    if options["since_seconds"] is not None and since_time is not None:
        errors.append(": Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified")
    elif options["since_seconds"] is not None and options["since_seconds"] < 1:
        errors.append(f"sinceSeconds: Invalid value: {options['since_seconds']}: must be greater than 0")
    if errors:
        detail = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
        raise LogOptionsError(422, "Invalid", 'PodLogOptions "{name}" is invalid: ' + detail)
    return options


def kubelet_instance(pod: dict[str, Any], container: str, previous: bool) -> bool | str:
    """Which instance of the container the kubelet serves: False for the
    current one, True for the previous one (lastState.terminated), or the
    kubelet's error. As the kubelet does, a container that is waiting after
    a crash (CrashLoopBackOff) serves the instance that ended."""
    name = pod["metadata"]["name"]
    pod_status = pod.get("status") or {}
    statuses = [*(pod_status.get("initContainerStatuses") or []), *(pod_status.get("containerStatuses") or [])]
    found = next((s for s in statuses if isinstance(s, dict) and s.get("name") == container), None)
    if found is None:
        return previous and f'previous terminated container "{container}" in pod "{name}" not found'
    state, last = found.get("state") or {}, (found.get("lastState") or {}).get("terminated")
    if previous:
        return True if isinstance(last, dict) else f'previous terminated container "{container}" in pod "{name}" not found'
    if "running" in state or "terminated" in state:
        return False
    if isinstance(last, dict):
        return True
    if "waiting" in state:
        reason = (state.get("waiting") or {}).get("reason") or "ContainerCreating"
        reason = {"ErrImagePull": "image can't be pulled", "ImagePullBackOff": "trying and failing to pull image"}.get(reason, reason)
        return f'container "{container}" in pod "{name}" is waiting to start: {reason}'
    return False


def render_log(lines: tuple[list[int], list[str]], options: dict[str, Any], now_ns: int) -> bytes:
    """The body the kubelet streams: the lines printed by `now_ns`, the last
    tailLines of them, then those since sinceTime/sinceSeconds, each
    prefixed by its time with timestamps, cut after limitBytes."""
    import bisect

    times, texts = lines
    end = bisect.bisect_right(times, now_ns)  # a line printed later does not exist yet
    start = 0
    if options["tail_lines"] is not None:
        start = max(0, end - options["tail_lines"])
    since = options["since_time"]
    if options["since_seconds"] is not None:
        since = now_ns - options["since_seconds"] * 10**9
    if since is not None:
        start = max(start, bisect.bisect_left(times, since))
    out = []
    for k in range(start, end):
        if options["timestamps"]:
            seconds, fraction = divmod(times[k], 10**9)
            out.append(f"{datetime.fromtimestamp(seconds, timezone.utc):%Y-%m-%dT%H:%M:%S}.{fraction:09d}Z {texts[k]}\n")
        else:
            out.append(texts[k] + "\n")
    body = "".join(out).encode()
    if options["limit_bytes"] is not None:
        body = body[:options["limit_bytes"]]
    return body


# --- the server -------------------------------------------------------------------

def status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message, "reason": reason, "code": code}


# The reasons the API server gives with these codes (metav1.StatusReason).
REASONS = {400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 405: "MethodNotAllowed",
           409: "Conflict", 410: "Expired", 429: "TooManyRequests", 500: "InternalError", 503: "ServiceUnavailable",
           504: "Timeout"}


def fault_status(code: int, reason: str | None, message: str, retry_after: int | None) -> tuple[bytes, str]:
    """An injected error as the API server would word it."""
    document = status(code, reason or REASONS.get(code, "Unknown"), message)
    if retry_after is not None:
        document["details"] = {"retryAfterSeconds": int(retry_after)}
    return json.dumps(document).encode(), "application/json"


def call_kind(method: str, path: str) -> str:
    """`GET pods`, `GET deployments.apps`, `GET proxy/NAME:PORT`, `GET discovery`:
    what a test wants to count, without names and namespaces."""
    parts = [p for p in path.split("/") if p]
    if parts == ["apis"]:
        return f"{method} discovery"
    if parts[:1] == ["api"]:
        group, rest = "", parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 3:
        group, rest = parts[1], parts[3:]
    else:
        return f"{method} {path}"
    if rest[:1] == ["namespaces"] and len(rest) >= 3:
        rest = rest[2:]
    if not rest:
        return f"{method} discovery"
    if group == "" and rest[0] == "services" and rest[2:3] == ["proxy"]:
        return f"{method} proxy/{rest[1]}"
    if group == "" and rest[0] == "pods" and rest[2:3] == ["log"]:
        return f"{method} pods/log"
    return f"{method} {rest[0]}" + (f".{group}" if group else "")


TOKEN_RE = re.compile(r"^k8s-aws-v1\.[A-Za-z0-9_-]+$")
USER = "arn:aws:sts::000000000000:assumed-role/alarm-triage/diagnose"
POD_LOG_PATH = re.compile(r"^/api/v1/namespaces/(?P<namespace>[^/]+)/pods/(?P<name>[^/]+)/log/?$")


class Handler(BaseHTTPRequestHandler):
    server_version = "alarm-triage-kube-api/1"
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt: str, *args: Any) -> None:
        sys.stderr.write("kube-api: " + (fmt % args) + "\n")

    def _send(self, code: int, document: Any, content_type: str = "application/json") -> None:
        body = document if isinstance(document, bytes) else json.dumps(document).encode()
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _authorised(self, resource_path: str) -> bool:
        config = self.server.config  # type: ignore[attr-defined]
        header = self.headers.get("Authorization", "")
        token = header[len("Bearer "):] if header.startswith("Bearer ") else ""
        if config.auth == "unauthorized" or not TOKEN_RE.match(token):
            self._send(401, status(401, "Unauthorized", "Unauthorized"))
            return False
        try:
            payload = token[len("k8s-aws-v1."):]
            url = base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)).decode()
        except Exception:
            self._send(401, status(401, "Unauthorized", "Unauthorized: token is not base64url"))
            return False
        if "Action=GetCallerIdentity" not in url or "X-Amz-Signature=" not in url:
            self._send(401, status(401, "Unauthorized", "Unauthorized: token is not a presigned sts:GetCallerIdentity URL"))
            return False
        log = POD_LOG_PATH.match(resource_path)
        for forbidden in config.forbid:
            if log and forbidden == "pods/log":
                # RBAC's subresource: `get` on pods/log, which a role granting pods alone lacks.
                self._send(403, status(403, "Forbidden", f'pods "{log.group("name")}" is forbidden: User "{USER}" cannot '
                                       f'get resource "pods/log" in API group "" in the namespace "{log.group("namespace")}"'))
                return False
            if forbidden in resource_path:
                self._send(403, status(403, "Forbidden", f'{forbidden} is forbidden: User "{USER}" cannot get resource "{forbidden}"'))
                return False
        return True

    def _dispatch(self) -> None:
        """Every method: admin paths first, then the faults, then the API."""
        url = urlsplit(self.path)
        body = read_body(self)
        faults: FaultRules = self.server.faults  # type: ignore[attr-defined]
        if faults.admin(self, url.path, body):
            return
        if url.path not in ("/healthz", "/readyz", "/livez"):
            rule = faults.take(call_kind(self.command, url.path), url.path)
            if faults.apply(self, rule, fault_status):
                return
        if self.command == "GET":
            self._get(url)
        else:
            self._send(405, status(405, "MethodNotAllowed", "this API server is read-only"))

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _dispatch  # noqa: N815 (http.server naming)

    def _get(self, url: Any) -> None:
        if url.path in ("/healthz", "/readyz", "/livez"):
            self._send(200, b"ok", "text/plain")
            return
        if not self._authorised(url.path):
            return
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        parts = [p for p in url.path.split("/") if p]
        config = self.server.config  # type: ignore[attr-defined]
        store: Store = self.server.store  # type: ignore[attr-defined]

        if parts == ["api"]:
            self._send(200, {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []})
            return
        if parts == ["apis"]:
            groups = [
                {"name": g, "versions": [{"groupVersion": f"{g}/{v}", "version": v} for v in sorted(vs)],
                 "preferredVersion": {"groupVersion": f"{g}/{sorted(vs)[-1]}", "version": sorted(vs)[-1]}}
                for g, vs in sorted(store.versions.items()) if g
            ]
            self._send(200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
            return

        if parts[:1] == ["api"]:
            group, rest = "", parts[1:]
        elif parts[:1] == ["apis"] and len(parts) >= 3:
            group, rest = parts[1], parts[2:]
        else:
            self._send(404, status(404, "NotFound", "the server could not find the requested resource"))
            return
        version, rest = rest[0], rest[1:]
        if not store.serves(group, version):
            self._send(404, status(404, "NotFound", "the server could not find the requested resource"))
            return
        if not rest:
            resources = [
                {"name": r, "namespaced": KINDS.get(next((k for k, v in KINDS.items() if v[0] == r), ""), ("", True))[1], "kind": next((k for k, v in KINDS.items() if v[0] == r), r), "verbs": ["get", "list"]}
                for r in store.resources(group)
            ]
            self._send(200, {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": f"{group}/{version}" if group else version, "resources": resources})
            return

        namespace = None
        if rest[0] == "namespaces" and len(rest) >= 3:
            namespace, rest = rest[1], rest[2:]
        resource, name, sub = rest[0], (rest[1] if len(rest) > 1 else None), rest[2:]
        cluster_scoped = any(r == resource and not namespaced for r, namespaced in KINDS.values())
        if namespace is not None and cluster_scoped:
            self._send(404, status(404, "NotFound", "the server could not find the requested resource"))
            return

        if group == "" and resource == "services" and sub[:1] == ["proxy"] and namespace and name:
            self._proxy(namespace, name, "/" + "/".join(sub[1:]), url.query)
            return
        if group == "" and resource == "pods" and sub == ["log"] and namespace and name:
            self._pod_log(namespace, name, url.query)
            return

        objects = [in_version(o, group, version) for o in store.find(group, resource, namespace)]
        wanted = metadata_only(self.headers.get("Accept", ""), single=name is not None)
        if wanted == "unacceptable":
            self._send(406, status(406, "NotAcceptable", "only the following media types are accepted: application/json, "
                                   "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1, "
                                   "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"))
            return
        if name is not None:
            for obj in objects:
                if obj["metadata"]["name"] == name:
                    if wanted:
                        self._send(200, partial_metadata(obj), PARTIAL_CONTENT_TYPE.format(kind="PartialObjectMetadata"))
                    else:
                        self._send(200, obj)
                    return
            self._send(404, status(404, "NotFound", f'{resource} "{name}" not found'))
            return
        if "labelSelector" in query:
            objects = [o for o in objects if label_matches(o["metadata"].get("labels", {}) or {}, query["labelSelector"])]
        if "fieldSelector" in query:
            try:
                refused = unsupported_field(query["fieldSelector"], group, resource)
            except ValueError as error:
                self._send(400, status(400, "BadRequest", str(error)))
                return
            if refused is not None:
                self._send(400, status(400, "BadRequest", f"field label not supported: {refused}"))
                return
            objects = [o for o in objects if field_matches(o, query["fieldSelector"], group, resource)]
        if wanted:
            self._send(200, {"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadataList",
                             "metadata": {"resourceVersion": "1"}, "items": [partial_metadata(o) for o in objects]},
                       PARTIAL_CONTENT_TYPE.format(kind="PartialObjectMetadataList"))
            return
        kind = next((k for k, v in KINDS.items() if v[0] == resource and (group != "metrics.k8s.io") == (not k.endswith("Metrics"))), "")
        api_version = f"{group}/{version}" if group else version
        self._send(200, {"kind": f"{kind}List", "apiVersion": api_version, "metadata": {"resourceVersion": "1"}, "items": objects})

    def _pod_log(self, namespace: str, name: str, raw_query: str) -> None:
        """GET pods/NAME/log: the options checked as the API server checks
        them (PodLogOptions, 422 Invalid), then the pod (404) and the
        container (400), then what the kubelet answers for the container's
        state (400), then the lines."""
        store: Store = self.server.store  # type: ignore[attr-defined]
        logs: PodLogs = self.server.logs  # type: ignore[attr-defined]
        query = {k: v[-1] for k, v in parse_qs(raw_query, keep_blank_values=True).items()}
        try:
            options = log_options(query)
        except LogOptionsError as error:
            self._send(error.code, status(error.code, error.reason, error.message.format(name=name)))
            return
        pod = next((p for p in store.find("", "pods", namespace) if p["metadata"]["name"] == name), None)
        if pod is None:
            self._send(404, status(404, "NotFound", f'pods "{name}" not found'))
            return
        spec = pod.get("spec") or {}
        containers = [c.get("name") for c in spec.get("containers") or []]
        every = [c.get("name") for c in spec.get("initContainers") or []] + containers
        container = options["container"]
        if not container:
            if len(containers) == 1:
                container = containers[0]
            elif not containers:
                self._send(400, status(400, "BadRequest", f"the pod {name} does not have a container"))
                return
            else:
                self._send(400, status(400, "BadRequest", f"a container name must be specified for pod {name}, "
                                       f"choose one of: [{' '.join(every)}]"))
                return
        elif container not in every:
            self._send(400, status(400, "BadRequest", f"container {container} is not valid for pod {name}"))
            return
        instance = kubelet_instance(pod, container, options["previous"])
        if isinstance(instance, str):
            self._send(400, status(400, "BadRequest", instance))
            return
        lines = logs.lines(namespace, name, container, instance)
        self._send(200, render_log(lines, options, time.time_ns()), "text/plain")

    def _proxy(self, namespace: str, service: str, path: str, query: str) -> None:
        config = self.server.config  # type: ignore[attr-defined]
        wanted = f"{namespace}/{service}"
        if not config.prometheus or config.prometheus_service != wanted:
            self._send(503, status(503, "ServiceUnavailable", f'no endpoints available for service "{service}"'))
            return
        target = config.prometheus.rstrip("/") + path + (f"?{query}" if query else "")
        try:
            with urllib.request.urlopen(target, timeout=10) as response:
                self._send(response.status, response.read(), response.headers.get("Content-Type", "application/json"))
        except urllib.error.HTTPError as error:
            self._send(error.code, error.read(), error.headers.get("Content-Type", "application/json"))
        except OSError as error:
            self._send(503, status(503, "ServiceUnavailable", f"error trying to reach service: {error}"))



def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--manifests", type=Path, required=True)
    parser.add_argument("--prometheus", default=None, help="URL the service proxy forwards to")
    parser.add_argument("--prometheus-service", default=None, help="NS/NAME:PORT of the in-cluster Prometheus service")
    parser.add_argument("--auth", choices=["ok", "unauthorized"], default="ok")
    parser.add_argument("--forbid", nargs="*", default=[], help="path fragments answered with 403 (e.g. metrics.k8s.io), or pods/log")
    parser.add_argument("--logs", type=Path, default=None, help="the containers' lines (JSON, written by stack.py)")
    config = parser.parse_args()
    if config.prometheus_service:
        ns, rest = config.prometheus_service.split("/", 1)
        config.prometheus_service = f"{ns}/{rest}"
    server = ThreadingHTTPServer(("127.0.0.1", config.port), Handler)
    server.config = config  # type: ignore[attr-defined]
    server.store = Store(config.manifests)  # type: ignore[attr-defined]
    server.faults = FaultRules()  # type: ignore[attr-defined]
    server.logs = PodLogs(config.logs)  # type: ignore[attr-defined]
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
    server.serve_forever()


if __name__ == "__main__":
    main()

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
        [--auth ok|unauthorized] [--forbid RESOURCE ...]
"""

from __future__ import annotations

import argparse
import base64
import json
import re
import signal
import sys
import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
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
    return f"{method} {rest[0]}" + (f".{group}" if group else "")


TOKEN_RE = re.compile(r"^k8s-aws-v1\.[A-Za-z0-9_-]+$")


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
        for forbidden in config.forbid:
            if forbidden in resource_path:
                self._send(403, status(403, "Forbidden", f'{forbidden} is forbidden: User "arn:aws:sts::000000000000:assumed-role/alarm-triage/diagnose" cannot get resource "{forbidden}"'))
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
    parser.add_argument("--forbid", nargs="*", default=[], help="path fragments answered with 403 (e.g. metrics.k8s.io)")
    config = parser.parse_args()
    if config.prometheus_service:
        ns, rest = config.prometheus_service.split("/", 1)
        config.prometheus_service = f"{ns}/{rest}"
    server = ThreadingHTTPServer(("127.0.0.1", config.port), Handler)
    server.config = config  # type: ignore[attr-defined]
    server.store = Store(config.manifests)  # type: ignore[attr-defined]
    server.faults = FaultRules()  # type: ignore[attr-defined]
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
    server.serve_forever()


if __name__ == "__main__":
    main()

"""Fault and latency injection in front of moto, for fault tests and the
latency benchmark.

    POST /_alarm_triage/faults  {"rules": [{"service": "monitoring", "operation": "GetMetricData",
                                           "delay_ms": 100, "status": 400, "code": "Throttling",
                                           "message": "Rate exceeded", "times": 3}]}
    DELETE /_alarm_triage/faults                       (clears every rule)
    GET  /_alarm_triage/calls                          (count of AWS calls per service:operation)

A rule matches a request by service (the SigV4 credential scope: monitoring,
elasticloadbalancing, sns, sqs, eks; "*" for any) and operation ("*" for any).
`delay_ms` holds the request back; `status`/`code` answer with an error in the
service's own protocol instead of calling moto; `times` limits how often the
rule fires (default: always).
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import Counter
from typing import Any, Callable
from urllib.parse import parse_qs

_lock = threading.Lock()
RULES: list[dict[str, Any]] = []
CALLS: Counter = Counter()

SCOPE_RE = re.compile(r"Credential=[^/]+/\d{8}/[^/]+/([^/]+)/aws4_request")


def _identify(environ: dict, body: bytes) -> tuple[str, str]:
    auth = environ.get("HTTP_AUTHORIZATION", "")
    match = SCOPE_RE.search(auth)
    service = match.group(1) if match else "unknown"
    path = environ.get("PATH_INFO", "")
    if "/operation/" in path:
        return service, path.rsplit("/operation/", 1)[1]
    target = environ.get("HTTP_X_AMZ_TARGET")
    if target:
        return service, target.rsplit(".", 1)[-1]
    if body:
        action = parse_qs(body.decode(errors="replace")).get("Action")
        if action:
            return service, action[0]
    if service == "eks":
        return service, f"{environ.get('REQUEST_METHOD')} {path}"
    return service, "unknown"


def _error(service: str, environ: dict, start_response: Callable, rule: dict[str, Any]):
    status = int(rule.get("status", 500))
    code = rule.get("code", "InternalFailure")
    message = rule.get("message", "injected fault")
    reason = {400: "BAD REQUEST", 403: "FORBIDDEN", 404: "NOT FOUND", 500: "INTERNAL SERVER ERROR", 503: "SERVICE UNAVAILABLE"}.get(status, "ERROR")
    if "/operation/" in environ.get("PATH_INFO", ""):
        import cbor2

        body = cbor2.dumps({"__type": f"com.amazonaws.cloudwatch#{code}", "message": message})
        headers = [("Content-Type", "application/cbor"), ("smithy-protocol", "rpc-v2-cbor")]
    elif environ.get("HTTP_X_AMZ_TARGET") or service == "eks":
        body = json.dumps({"__type": code, "message": message}).encode()
        headers = [("Content-Type", "application/x-amz-json-1.0"), ("x-amzn-query-error", f"{code};Sender"), ("x-amzn-errortype", code)]
    else:
        body = (
            f'<ErrorResponse><Error><Type>Sender</Type><Code>{code}</Code><Message>{message}</Message></Error>'
            f"<RequestId>injected</RequestId></ErrorResponse>"
        ).encode()
        headers = [("Content-Type", "text/xml")]
    start_response(f"{status} {reason}", headers + [("Content-Length", str(len(body))), ("x-amzn-requestid", "injected")])
    return [body]


class Faults:
    """WSGI middleware: counts AWS calls and applies the matching rule."""

    def __init__(self, app: Callable):
        self.app = app

    def __call__(self, environ: dict, start_response: Callable):
        path = environ.get("PATH_INFO", "")
        if path.startswith("/_alarm_triage/"):
            return self._admin(path, environ, start_response)
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length else b""
        import io

        environ["wsgi.input"] = io.BytesIO(body)
        service, operation = _identify(environ, body)
        rule = None
        with _lock:
            CALLS[f"{service}:{operation}"] += 1
            for candidate in RULES:
                if candidate.get("service", "*") in ("*", service) and candidate.get("operation", "*") in ("*", operation):
                    if candidate.get("times") is not None:
                        if candidate["times"] <= 0:
                            continue
                        candidate["times"] -= 1
                    rule = dict(candidate)
                    break
        if rule and rule.get("delay_ms"):
            time.sleep(float(rule["delay_ms"]) / 1000.0)
        if rule and rule.get("status"):
            return _error(service, environ, start_response, rule)
        return self.app(environ, start_response)

    def _admin(self, path: str, environ: dict, start_response: Callable):
        method = environ.get("REQUEST_METHOD")
        if path == "/_alarm_triage/faults" and method == "POST":
            length = int(environ.get("CONTENT_LENGTH") or 0)
            document = json.loads(environ["wsgi.input"].read(length) or b"{}")
            with _lock:
                RULES.extend(document.get("rules", []))
            return self._json(start_response, {"rules": len(RULES)})
        if path == "/_alarm_triage/faults" and method == "DELETE":
            with _lock:
                RULES.clear()
            return self._json(start_response, {"rules": 0})
        if path == "/_alarm_triage/calls":
            with _lock:
                calls = dict(CALLS)
                if method == "DELETE":
                    CALLS.clear()
            return self._json(start_response, {"calls": calls})
        return self.app(environ, start_response)

    @staticmethod
    def _json(start_response: Callable, document: dict[str, Any]):
        body = json.dumps(document).encode()
        start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
        return [body]

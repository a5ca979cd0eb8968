"""Fault and delay rules for the local HTTP servers (kube_api.py, fault_proxy.py).

The same knob as moto_world/faults.py, keyed by request path instead of AWS
operation, so a test can make the Kubernetes API or Prometheus slow, failing
or silent:

    POST   /_alarm_triage/faults  {"rules": [{"path": "REGEX", "delay_ms": 200, "status": 503,
                                              "reason": "ServiceUnavailable", "message": "...",
                                              "times": 2, "retry_after": 1, "drop": false, "body": "..."}]}
    DELETE /_alarm_triage/faults  clears every rule
    GET    /_alarm_triage/calls   {"calls": {"GET pods": 3, ...}}; DELETE resets the counts

`path` is searched (re.search) in the request path, query string excluded;
no `path` matches everything. The first matching rule with `times` left
wins. `delay_ms` holds the request back (in its own thread, so other
requests go on); then `drop` closes the connection without an answer, or
`status` answers with the server's own error document (`body`, if given, is
sent verbatim as text/plain instead, as a load balancer would), with a
`Retry-After` header when `retry_after` is set. A rule with neither is a
pure delay. Admin paths need no token and never match a rule.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler
from typing import Any, Callable

ADMIN_PREFIX = "/_alarm_triage/"
ALLOWED = {"path", "delay_ms", "status", "reason", "message", "times", "retry_after", "drop", "body"}

# (status, reason, message, retry_after) -> (body, content type)
ErrorDocument = Callable[[int, str | None, str, int | None], tuple[bytes, str]]


class FaultRules:
    """Rules and call counts shared by a server's handler threads."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.rules: list[dict[str, Any]] = []
        self.calls: Counter = Counter()

    def add(self, rules: list[dict[str, Any]]) -> int:
        """Validates before adding anything, so a bad rule set changes nothing."""
        checked = []
        for i, rule in enumerate(rules):
            unknown = set(rule) - ALLOWED
            if unknown:
                raise ValueError(f"rules[{i}]: unknown fields {sorted(unknown)} (allowed: {sorted(ALLOWED)})")
            try:
                pattern = re.compile(rule.get("path", ""))
            except re.error as error:
                raise ValueError(f"rules[{i}].path: {error}") from error
            checked.append({**rule, "_pattern": pattern})
        with self.lock:
            self.rules.extend(checked)
            return len(self.rules)

    def take(self, kind: str, path: str) -> dict[str, Any] | None:
        """Counts the call and returns the rule that fires for it, if any."""
        with self.lock:
            self.calls[kind] += 1
            for rule in self.rules:
                if not rule["_pattern"].search(path):
                    continue
                if rule.get("times") is not None:
                    if rule["times"] <= 0:
                        continue
                    rule["times"] -= 1
                return dict(rule)
        return None

    def admin(self, handler: BaseHTTPRequestHandler, path: str, body: bytes) -> bool:
        """Serves the admin paths; False when `path` is not one of them."""
        if not path.startswith(ADMIN_PREFIX):
            return False
        method = handler.command
        if path == ADMIN_PREFIX + "faults" and method == "POST":
            try:
                rules = json.loads(body or b"{}").get("rules", [])
                _json(handler, 200, {"rules": self.add(rules)})
            except (ValueError, AttributeError, TypeError) as error:
                _json(handler, 400, {"error": str(error)})
        elif path == ADMIN_PREFIX + "faults" and method == "DELETE":
            with self.lock:
                self.rules.clear()
            _json(handler, 200, {"rules": 0})
        elif path == ADMIN_PREFIX + "calls" and method in ("GET", "DELETE"):
            with self.lock:
                calls = dict(self.calls)
                if method == "DELETE":
                    self.calls.clear()
            _json(handler, 200, {"calls": calls})
        else:
            _json(handler, 404, {"error": f"no admin endpoint {method} {path}"})
        return True

    def apply(self, handler: BaseHTTPRequestHandler, rule: dict[str, Any] | None, error: ErrorDocument) -> bool:
        """Delays, drops or answers as the rule says; True when the request was
        dealt with (the caller must not answer it)."""
        if rule is None:
            return False
        if rule.get("delay_ms"):
            time.sleep(float(rule["delay_ms"]) / 1000.0)
        if rule.get("drop"):
            handler.close_connection = True
            return True
        if not rule.get("status"):
            return False
        status, retry_after = int(rule["status"]), rule.get("retry_after")
        if "body" in rule:
            body, content_type = str(rule["body"]).encode(), "text/plain; charset=utf-8"
        else:
            body, content_type = error(status, rule.get("reason"), rule.get("message") or "injected fault", retry_after)
        headers = {"Retry-After": str(retry_after)} if retry_after is not None else {}
        send(handler, status, body, content_type, headers)
        return True


def send(handler: BaseHTTPRequestHandler, status: int, body: bytes, content_type: str, headers: dict[str, str] | None = None) -> None:
    handler.send_response(status)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(len(body)))
    for key, value in (headers or {}).items():
        handler.send_header(key, value)
    handler.end_headers()
    handler.wfile.write(body)


def _json(handler: BaseHTTPRequestHandler, status: int, document: dict[str, Any]) -> None:
    send(handler, status, json.dumps(document).encode(), "application/json")


def read_body(handler: BaseHTTPRequestHandler) -> bytes:
    """Reads the request body, so a kept-alive connection stays in step."""
    length = int(handler.headers.get("Content-Length") or 0)
    return handler.rfile.read(length) if length else b""

"""A reverse proxy that can be made slow or failing, for a server that has no
fault knob of its own (Prometheus, reached directly by the bot).

Every request is forwarded unchanged to --target, unless a rule of
http_faults.py says otherwise:

    POST   /_alarm_triage/faults  {"rules": [{"path": "^/api/v1/query_range$", "delay_ms": 0, "status": 503,
                                              "reason": "unavailable", "message": "...", "times": 1,
                                              "retry_after": 1, "drop": false, "body": "..."}]}
    DELETE /_alarm_triage/faults  clears them
    GET    /_alarm_triage/calls   requests counted by method and path ("GET /api/v1/query_range"); DELETE resets

An injected error is worded as Prometheus's HTTP API words one,
{"status": "error", "errorType": REASON, "error": MESSAGE}, REASON defaulting
from the status (503 unavailable, 400 bad_data, 422 execution, else internal);
`body` sends a plain text answer instead, as a load balancer in front would.
The target being down is answered 502 with a plain body, as a proxy would.

    python fault_proxy.py --port PORT --target http://127.0.0.1:9090
"""

from __future__ import annotations

import argparse
import http.client
import json
import signal
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from http_faults import FaultRules, read_body, send

# Headers that belong to one connection, not to the request (RFC 9110 7.6.1).
HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade", "host"}
ERROR_TYPES = {400: "bad_data", 422: "execution", 503: "unavailable"}


def prometheus_error(code: int, reason: str | None, message: str, retry_after: int | None) -> tuple[bytes, str]:
    document = {"status": "error", "errorType": reason or ERROR_TYPES.get(code, "internal"), "error": message}
    return json.dumps(document).encode(), "application/json"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "alarm-triage-fault-proxy/1"

    def log_message(self, fmt: str, *args: Any) -> None:
        sys.stderr.write("fault-proxy: " + (fmt % args) + "\n")

    def _dispatch(self) -> None:
        path = urlsplit(self.path).path
        body = read_body(self)
        faults: FaultRules = self.server.faults  # type: ignore[attr-defined]
        if faults.admin(self, path, body):
            return
        if faults.apply(self, faults.take(f"{self.command} {path}", path), prometheus_error):
            return
        self._forward(body)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _dispatch  # noqa: N815 (http.server naming)

    def _forward(self, body: bytes) -> None:
        target = urlsplit(self.server.target)  # type: ignore[attr-defined]
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
        connection = http.client.HTTPConnection(target.hostname, target.port, timeout=60)
        try:
            connection.request(self.command, self.path, body=body or None, headers=headers)
            response = connection.getresponse()
            data = response.read()
        except (OSError, http.client.HTTPException) as error:
            send(self, 502, f"fault-proxy: {self.server.target} did not answer: {error}\n".encode(), "text/plain")  # type: ignore[attr-defined]
            return
        finally:
            connection.close()
        self.send_response(response.status, response.reason)
        for key, value in response.getheaders():
            if key.lower() not in HOP_BY_HOP and key.lower() != "content-length":
                self.send_header(key, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--target", required=True, help="base URL everything is forwarded to (http only)")
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.target = args.target.rstrip("/")  # type: ignore[attr-defined]
    server.faults = FaultRules()  # type: ignore[attr-defined]
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
    server.serve_forever()


if __name__ == "__main__":
    main()

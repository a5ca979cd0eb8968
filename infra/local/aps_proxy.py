"""Amazon Managed Service for Prometheus, as the bot sees it: a query endpoint
that accepts only SigV4-signed requests (service `aps`) and forwards them to
the world's Prometheus.

    GET /workspaces/WS/api/v1/query_range?...   verified, then forwarded as /api/v1/query_range?...
    GET /_alarm_triage/calls                    every request: path, whether it was signed, the verdict

A request is refused as AMP refuses it, 403 with an AWS error document:
no Authorization header ("Missing Authentication Token"), an unknown access
key, another region or service in the credential scope, a date more than 5
minutes off, or a signature that does not match the one computed here from
the canonical request (SigV4, AWS's documented algorithm: canonical URI,
sorted and re-encoded query, the signed headers, the empty payload's hash).
This is a check of the signature, not a bypass: nothing reaches Prometheus
unsigned.

    python aps_proxy.py --port PORT --target http://127.0.0.1:9090 --workspace ws-... --region eu-west-1

The access key and secret the world's credentials use come from the
environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY), never from arguments.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import hmac
import http.client
import json
import os
import signal
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import quote, unquote, urlsplit

HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade", "host"}
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
MAX_SKEW = datetime.timedelta(minutes=5)


def canonical_query(query: str) -> str:
    pairs = []
    for pair in query.split("&") if query else []:
        key, _, value = pair.partition("=")
        pairs.append((quote(unquote(key), safe="-_.~"), quote(unquote(value), safe="-_.~")))
    return "&".join(f"{k}={v}" for k, v in sorted(pairs))


def expected_signature(secret: str, method: str, path: str, query: str, headers: dict[str, str],
                       signed: list[str], amz_date: str, scope: str) -> str:
    canonical_uri = quote(quote(unquote(path), safe="/-_.~"), safe="/-_.~%")
    canonical_headers = "".join(f"{name}:{' '.join(headers.get(name, '').split())}\n" for name in signed)
    canonical_request = "\n".join([method, canonical_uri, canonical_query(query), canonical_headers,
                                   ";".join(signed), headers.get("x-amz-content-sha256", EMPTY_SHA256)])
    string_to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope,
                                hashlib.sha256(canonical_request.encode()).hexdigest()])
    date, region, service, _ = scope.split("/")
    key = ("AWS4" + secret).encode()
    for part in (date, region, service, "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    return hmac.new(key, string_to_sign.encode(), hashlib.sha256).hexdigest()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "alarm-triage-aps/1"

    def log_message(self, fmt: str, *args: Any) -> None:
        sys.stderr.write("aps-proxy: " + (fmt % args).split("?")[0] + "\n")

    def _send(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _refuse(self, message: str) -> None:
        self._record(False, message)
        self._send(403, json.dumps({"message": message}).encode())

    def _record(self, signed: bool, verdict: str) -> None:
        with self.server.lock:  # type: ignore[attr-defined]
            self.server.calls.append({"path": urlsplit(self.path).path, "signed": signed, "verdict": verdict})  # type: ignore[attr-defined]

    def do_GET(self) -> None:  # noqa: N802
        if self.path == "/_alarm_triage/calls":
            with self.server.lock:  # type: ignore[attr-defined]
                self._send(200, json.dumps({"calls": list(self.server.calls)}).encode())  # type: ignore[attr-defined]
            return
        parts = urlsplit(self.path)
        prefix = f"/workspaces/{self.server.workspace}"  # type: ignore[attr-defined]
        if not parts.path.startswith(prefix + "/api/v1/"):
            self._send(404, json.dumps({"message": f"no such workspace or path: {parts.path}"}).encode())
            return
        problem = self._verify(parts.path, parts.query)
        if problem:
            self._refuse(problem)
            return
        self._record(True, "ok")
        self._forward(parts.path[len(prefix):] + (f"?{parts.query}" if parts.query else ""))

    def _verify(self, path: str, query: str) -> str | None:
        auth = self.headers.get("Authorization")
        if not auth:
            return "Missing Authentication Token"
        try:
            algorithm, rest = auth.split(" ", 1)
            fields = dict(item.strip().split("=", 1) for item in rest.split(","))
            key_id, scope = fields["Credential"].split("/", 1)
            signed = fields["SignedHeaders"].split(";")
            signature = fields["Signature"]
        except (ValueError, KeyError):
            return "Authorization header requires 'Credential', 'SignedHeaders' and 'Signature'"
        if algorithm != "AWS4-HMAC-SHA256":
            return f"Unsupported algorithm {algorithm}"
        if key_id != self.server.access_key:  # type: ignore[attr-defined]
            return "The security token included in the request is invalid."
        date, region, service, terminal = scope.split("/")
        if (region, service, terminal) != (self.server.region, "aps", "aws4_request"):  # type: ignore[attr-defined]
            return f"Credential should be scoped to a valid region and service aps: got {region}/{service}"
        amz_date = self.headers.get("X-Amz-Date", "")
        try:
            at = datetime.datetime.strptime(amz_date, "%Y%m%dT%H%M%SZ").replace(tzinfo=datetime.timezone.utc)
        except ValueError:
            return "Missing or malformed X-Amz-Date"
        if abs(datetime.datetime.now(datetime.timezone.utc) - at) > MAX_SKEW or not amz_date.startswith(date):
            return "Signature expired or not yet valid"
        if "host" not in signed:
            return "'Host' must be a signed header"
        headers = {k.lower(): v for k, v in self.headers.items()}
        wanted = expected_signature(self.server.secret, "GET", path, query, headers, signed, amz_date, scope)  # type: ignore[attr-defined]
        if not hmac.compare_digest(wanted, signature):
            return "The request signature we calculated does not match the signature you provided."
        return None

    def _forward(self, path: str) -> None:
        target = urlsplit(self.server.target)  # type: ignore[attr-defined]
        headers = {k: v for k, v in self.headers.items()
                   if k.lower() not in HOP_BY_HOP and k.lower() != "authorization" and not k.lower().startswith("x-amz-")}
        connection = http.client.HTTPConnection(target.hostname, target.port, timeout=60)
        try:
            connection.request("GET", path, headers=headers)
            response = connection.getresponse()
            data = response.read()
            self._send(response.status, data, response.getheader("Content-Type") or "application/json")
        except (OSError, http.client.HTTPException) as error:
            self._send(502, f"aps-proxy: Prometheus did not answer: {error}\n".encode(), "text/plain")
        finally:
            connection.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--target", required=True)
    parser.add_argument("--workspace", required=True)
    parser.add_argument("--region", required=True)
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.target = args.target.rstrip("/")  # type: ignore[attr-defined]
    server.workspace = args.workspace  # type: ignore[attr-defined]
    server.region = args.region  # type: ignore[attr-defined]
    server.access_key = os.environ["AWS_ACCESS_KEY_ID"]  # type: ignore[attr-defined]
    server.secret = os.environ["AWS_SECRET_ACCESS_KEY"]  # type: ignore[attr-defined]
    server.lock = threading.Lock()  # type: ignore[attr-defined]
    server.calls = []  # type: ignore[attr-defined]
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
    server.serve_forever()


if __name__ == "__main__":
    main()

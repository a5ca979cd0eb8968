"""SNS -> Lambda bridge for the local world.

moto cannot invoke a Lambda without Docker, so an SNS HTTP subscription points
here; each notification is turned into the Lambda SNS event AWS would build
and sent to cargo-lambda's runtime emulator, asynchronously, as SNS invokes
Lambda. Every invocation's outcome is appended to a JSON-lines log.

    python sns_bridge.py --port PORT --invoke URL --log FILE
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def lambda_event(envelope: dict[str, Any], subscription_arn: str) -> dict[str, Any]:
    """The Lambda SNS event for one SNS HTTP/SQS envelope."""
    return {
        "Records": [
            {
                "EventSource": "aws:sns",
                "EventVersion": "1.0",
                "EventSubscriptionArn": subscription_arn,
                "Sns": {
                    "Type": envelope.get("Type", "Notification"),
                    "MessageId": envelope["MessageId"],
                    "TopicArn": envelope["TopicArn"],
                    "Subject": envelope.get("Subject"),
                    "Message": envelope["Message"],
                    "Timestamp": envelope["Timestamp"],
                    "SignatureVersion": envelope.get("SignatureVersion", "1"),
                    "Signature": envelope.get("Signature", "EXAMPLE"),
                    "SigningCertUrl": envelope.get("SigningCertURL", "https://sns.local/cert.pem"),
                    "UnsubscribeUrl": envelope.get("UnsubscribeURL", "https://sns.local/unsubscribe"),
                    "MessageAttributes": envelope.get("MessageAttributes", {}),
                },
            }
        ]
    }


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt: str, *args: Any) -> None:
        sys.stderr.write("sns-bridge: " + (fmt % args) + "\n")

    def _reply(self, code: int, body: bytes = b"") -> None:
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802
        self._reply(200 if self.path == "/healthz" else 404, b"ok")

    def do_POST(self) -> None:  # noqa: N802
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            envelope = json.loads(body)
        except ValueError:
            self._reply(400, b"not JSON")
            return
        if envelope.get("Type") == "SubscriptionConfirmation" and envelope.get("SubscribeURL"):
            try:
                urllib.request.urlopen(envelope["SubscribeURL"], timeout=5).read()
            except OSError as error:
                sys.stderr.write(f"sns-bridge: could not confirm the subscription: {error}\n")
            self._reply(200)
            return
        if envelope.get("Type") != "Notification":
            self._reply(200)
            return
        event = lambda_event(envelope, self.headers.get("x-amz-sns-subscription-arn", "arn:aws:sns:local:bridge"))
        threading.Thread(target=self.server.invoke, args=(event,), daemon=True).start()  # type: ignore[attr-defined]
        self._reply(200)


class Bridge(ThreadingHTTPServer):
    def __init__(self, port: int, invoke_url: str, log_path: str):
        super().__init__(("127.0.0.1", port), Handler)
        self.invoke_url = invoke_url
        self.log_path = log_path
        self.lock = threading.Lock()

    def invoke(self, event: dict[str, Any]) -> None:
        started = time.time()
        request = urllib.request.Request(self.invoke_url, data=json.dumps(event).encode(), headers={"Content-Type": "application/json"}, method="POST")
        record: dict[str, Any] = {"message_id": event["Records"][0]["Sns"]["MessageId"]}
        try:
            with urllib.request.urlopen(request, timeout=120) as response:
                record.update(status=response.status, function_error=response.headers.get("X-Amz-Function-Error"), body=response.read().decode(errors="replace"))
        except urllib.error.HTTPError as error:
            record.update(status=error.code, function_error="Unhandled", body=error.read().decode(errors="replace"))
        except OSError as error:
            record.update(status=None, function_error="BridgeError", body=str(error))
        record["seconds"] = round(time.time() - started, 3)
        with self.lock, open(self.log_path, "a") as log:
            log.write(json.dumps(record) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--invoke", required=True)
    parser.add_argument("--log", required=True)
    args = parser.parse_args()
    bridge = Bridge(args.port, args.invoke, args.log)
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=bridge.shutdown).start())
    bridge.serve_forever()


if __name__ == "__main__":
    main()

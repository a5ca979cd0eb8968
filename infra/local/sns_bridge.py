"""SNS -> Lambda bridge for the local world, and Lambda's asynchronous
invocation for EventBridge.

moto cannot invoke a Lambda without Docker, so an SNS HTTP subscription points
here; each notification is turned into the Lambda SNS event AWS would build
and handed to cargo-lambda's runtime emulator the way Lambda handles an
asynchronous invocation. An EventBridge rule's Lambda target is an
asynchronous invocation too, of the event itself (not wrapped in Records):
`POST /eventbridge` with the event as body queues it exactly as it is and
answers 202, as Lambda's asynchronous Invoke does; from there both kinds go
the same way:

- the notification is acknowledged at once and queued; up to --concurrency
  invocations run at a time (one per warm instance of the function);
- a failed invocation (X-Amz-Function-Error, an HTTP error, or no answer) is
  retried --max-retries times (Lambda: 2), after the --retry-delays (Lambda
  waits about 1 then 2 minutes; here seconds, default 1,2);
- when the last attempt fails too, an on-failure destination record in
  Lambda's shape goes to the --on-failure-queue SQS queue, so every
  notification ends either as the function's success or in that queue.

Every attempt is appended to a JSON-lines log: message_id (the SNS
MessageId, or the EventBridge event's id), status, function_error, body,
seconds, and attempt (1-based), final (no attempt follows), request_id (the
same for every attempt of one event); a final failure also has on_failure
("sent", "no queue", or why sending failed). An EventBridge event's attempts
also have via: "eventbridge".

    python sns_bridge.py --port PORT --invoke URL [--invoke URL ...] --log FILE
        [--concurrency N] [--max-retries N] [--retry-delays 1,2]
        [--on-failure-queue URL --endpoint URL] [--function-arn ARN]

Several --invoke URLs (one emulator each) are used round-robin.
"""

from __future__ import annotations

import argparse
import itertools
import json
import queue
import signal
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DEFAULT_FUNCTION_ARN = "arn:aws:lambda:eu-west-1:000000000000:function:diagnose:$LATEST"


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


def event_id(event: dict[str, Any]) -> str:
    """The SNS MessageId of a Lambda SNS event, or an EventBridge event's id."""
    if "Records" in event:
        return event["Records"][0]["Sns"]["MessageId"]
    return str(event.get("id"))


def failure_record(event: dict[str, Any], request_id: str, function_arn: str, attempts: int,
                   function_error: str | None, body: str) -> dict[str, Any]:
    """What Lambda sends to an on-failure destination once retries are exhausted."""
    try:
        payload: Any = json.loads(body)
    except ValueError:
        payload = body
    return {
        "version": "1.0",
        "timestamp": datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "requestContext": {
            "requestId": request_id,
            "functionArn": function_arn,
            "condition": "RetriesExhausted",
            "approximateInvokeCount": attempts,
        },
        "requestPayload": event,
        "responseContext": {"statusCode": 200, "executedVersion": "$LATEST", "functionError": function_error or "Unhandled"},
        "responsePayload": payload,
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
        if self.path.rstrip("/") == "/eventbridge":
            # An EventBridge rule invoking its Lambda target: the event as it is.
            if not isinstance(envelope, dict) or "detail-type" not in envelope or "id" not in envelope:
                self._reply(400, b"not an EventBridge event (id, detail-type)")
                return
            self.server.submit(envelope)  # type: ignore[attr-defined]
            self._reply(202)
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
        self.server.submit(event)  # type: ignore[attr-defined]
        self._reply(200)


class Bridge(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, port: int, invoke_urls: list[str], log_path: str, *, concurrency: int = 1,
                 max_retries: int = 2, retry_delays: list[float] | None = None,
                 on_failure_queue: str | None = None, endpoint: str | None = None,
                 function_arn: str = DEFAULT_FUNCTION_ARN, credentials: dict[str, str] | None = None):
        super().__init__(("127.0.0.1", port), Handler)
        self.invoke_urls = itertools.cycle(invoke_urls)
        self.log_path = log_path
        self.max_retries = max_retries
        self.retry_delays = retry_delays or [1.0, 2.0]
        self.function_arn = function_arn
        self.on_failure_queue = on_failure_queue
        self.sqs = _sqs_client(endpoint, function_arn, credentials) if on_failure_queue else None
        self.lock = threading.Lock()
        # Lambda's internal event queue: notifications wait here, not in the emulator,
        # so an invocation's timeout only runs while the function works on it.
        self.events: queue.Queue = queue.Queue()
        # The last record of every event (its success, or its final failure), for callers that wait.
        self.finished: list[dict[str, Any]] = []
        for _ in range(max(1, concurrency)):
            threading.Thread(target=self._work, daemon=True).start()

    def submit(self, event: dict[str, Any], attempt: int = 1, request_id: str | None = None) -> None:
        self.events.put((event, attempt, request_id or str(uuid.uuid4())))

    def _work(self) -> None:
        while True:
            self.invoke(*self.events.get())

    def invoke(self, event: dict[str, Any], attempt: int = 1, request_id: str | None = None) -> dict[str, Any]:
        request_id = request_id or str(uuid.uuid4())
        with self.lock:
            url = next(self.invoke_urls)
        started = time.time()
        request = urllib.request.Request(url, data=json.dumps(event).encode(), headers={"Content-Type": "application/json"}, method="POST")
        record: dict[str, Any] = {"message_id": event_id(event)}
        if "Records" not in event:
            record["via"] = "eventbridge"
        try:
            with urllib.request.urlopen(request, timeout=120) as response:
                record.update(status=response.status, function_error=response.headers.get("X-Amz-Function-Error"), body=response.read().decode(errors="replace"))
        except urllib.error.HTTPError as error:
            record.update(status=error.code, function_error="Unhandled", body=error.read().decode(errors="replace"))
        except OSError as error:
            record.update(status=None, function_error="BridgeError", body=str(error))
        record["seconds"] = round(time.time() - started, 3)
        failed = record["function_error"] is not None
        final = not failed or attempt > self.max_retries
        record.update(attempt=attempt, final=final, request_id=request_id)
        if failed and final:
            record["on_failure"] = self._send_failure(event, request_id, attempt, record)
        elif failed:
            delay = self.retry_delays[min(attempt - 1, len(self.retry_delays) - 1)]
            timer = threading.Timer(delay, self.submit, args=(event, attempt + 1, request_id))
            timer.daemon = True
            timer.start()
        with self.lock, open(self.log_path, "a") as log:
            log.write(json.dumps(record) + "\n")
            if final:
                self.finished.append(record)
        return record

    def wait_finished(self, count: int, timeout: float) -> list[dict[str, Any]]:
        """Waits until `count` events have had their last attempt; returns their last records."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            with self.lock:
                if len(self.finished) >= count:
                    return list(self.finished)
            time.sleep(0.05)
        with self.lock:
            return list(self.finished)

    def _send_failure(self, event: dict[str, Any], request_id: str, attempts: int, record: dict[str, Any]) -> str:
        if not self.sqs:
            return "no queue"
        document = failure_record(event, request_id, self.function_arn, attempts, record["function_error"], record["body"])
        try:
            self.sqs.send_message(QueueUrl=self.on_failure_queue, MessageBody=json.dumps(document))
            return "sent"
        except Exception as error:  # noqa: BLE001 - the log must say why, whatever it was
            sys.stderr.write(f"sns-bridge: could not send the failed event {request_id}: {error}\n")
            return f"error: {error}"


def _sqs_client(endpoint: str | None, function_arn: str, credentials: dict[str, str] | None = None) -> Any:
    """An SQS client in the function's region, with these credentials (AccessKeyId,
    SecretAccessKey, SessionToken) or the environment's."""
    import boto3

    region = function_arn.split(":")[3]
    keys = {}
    if credentials:
        keys = {"aws_access_key_id": credentials["AccessKeyId"], "aws_secret_access_key": credentials["SecretAccessKey"],
                "aws_session_token": credentials.get("SessionToken")}
    return boto3.session.Session(region_name=region, **keys).client("sqs", endpoint_url=endpoint)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--invoke", action="append", required=True, help="the emulator's invoke URL; repeat to spread invocations round-robin")
    parser.add_argument("--log", required=True)
    parser.add_argument("--concurrency", type=int, default=1, help="invocations running at a time (default 1)")
    parser.add_argument("--max-retries", type=int, default=2, help="retries after a failed invocation (Lambda: 0-2, default 2)")
    parser.add_argument("--retry-delays", default="1,2", help="seconds before each retry, comma-separated; the last repeats (default 1,2)")
    parser.add_argument("--on-failure-queue", help="SQS queue URL for the record of an event whose retries are exhausted")
    parser.add_argument("--endpoint", help="the AWS endpoint (moto) to send that record through")
    parser.add_argument("--function-arn", default=DEFAULT_FUNCTION_ARN, help="functionArn of the record; its region is the queue's")
    args = parser.parse_args()
    bridge = Bridge(
        args.port, args.invoke, args.log, concurrency=args.concurrency, max_retries=args.max_retries,
        retry_delays=[float(d) for d in args.retry_delays.split(",") if d.strip()],
        on_failure_queue=args.on_failure_queue, endpoint=args.endpoint, function_arn=args.function_arn,
    )
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=bridge.shutdown).start())
    bridge.serve_forever()


if __name__ == "__main__":
    main()

"""SQS -> Lambda for the local world: what an SQS event source mapping does.

moto keeps the hold queue (messages sent with DelaySeconds stay invisible
until their delay ends); this loop long-polls it and hands each batch to
cargo-lambda's runtime emulator as the Lambda SQS event AWS would build,
with partial batch responses (`ReportBatchItemFailures`):

- the function answers `{"batchItemFailures": [{"itemIdentifier": id}]}`:
  every other message of the batch is deleted; the failed ones come back
  after the visibility timeout (and after --max-receives, SQS's redrive
  would move them to the dead-letter queue: here they are left in place);
- a failed invocation (X-Amz-Function-Error, an HTTP error, no answer)
  deletes nothing: the whole batch comes back.

Every invocation is appended to a JSON-lines log: message_ids, status,
function_error, failures (the ids the function reported), body, seconds.

    python sqs_source.py --queue URL --endpoint URL --invoke URL --log FILE
        [--batch-size 5] [--region eu-west-1] [--queue-arn ARN]
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
import urllib.error
import urllib.request
from typing import Any

import boto3

running = True


def stop(*_: Any) -> None:
    global running
    running = False


def event_for(messages: list[dict[str, Any]], queue_arn: str, region: str) -> dict[str, Any]:
    """The Lambda SQS event for one batch."""
    return {
        "Records": [
            {
                "messageId": m["MessageId"],
                "receiptHandle": m["ReceiptHandle"],
                "body": m["Body"],
                "attributes": m.get("Attributes", {}),
                "messageAttributes": {},
                "md5OfBody": m.get("MD5OfBody", ""),
                "eventSource": "aws:sqs",
                "eventSourceARN": queue_arn,
                "awsRegion": region,
            }
            for m in messages
        ]
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queue", required=True)
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--invoke", required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--batch-size", type=int, default=5)
    parser.add_argument("--region", default="eu-west-1")
    parser.add_argument("--queue-arn", default="")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    sqs = boto3.client("sqs", endpoint_url=args.endpoint, region_name=args.region)
    queue_arn = args.queue_arn or sqs.get_queue_attributes(QueueUrl=args.queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    print(f"polling {args.queue}", flush=True)
    while running:
        try:
            answer = sqs.receive_message(QueueUrl=args.queue, MaxNumberOfMessages=args.batch_size,
                                         WaitTimeSeconds=1, AttributeNames=["All"])
        except Exception as error:  # moto going down at the end of a test
            print(f"receive failed: {error}", file=sys.stderr, flush=True)
            time.sleep(0.5)
            continue
        messages = answer.get("Messages", [])
        if not messages:
            continue
        event = event_for(messages, queue_arn, args.region)
        started = time.time()
        record: dict[str, Any] = {"message_ids": [m["MessageId"] for m in messages]}
        request = urllib.request.Request(args.invoke, data=json.dumps(event).encode(),
                                         headers={"Content-Type": "application/json"}, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=120) as response:
                record.update(status=response.status, function_error=response.headers.get("X-Amz-Function-Error"),
                              body=response.read().decode(errors="replace"))
        except urllib.error.HTTPError as error:
            record.update(status=error.code, function_error="Unhandled", body=error.read().decode(errors="replace"))
        except OSError as error:
            record.update(status=None, function_error="SourceError", body=str(error))
        record["seconds"] = round(time.time() - started, 3)
        failures: list[str] = []
        if record["function_error"] is None:
            try:
                failures = [f["itemIdentifier"] for f in json.loads(record["body"]).get("batchItemFailures", [])]
            except (ValueError, AttributeError, KeyError, TypeError):
                failures = []
            for m in messages:
                if m["MessageId"] not in failures:
                    sqs.delete_message(QueueUrl=args.queue, ReceiptHandle=m["ReceiptHandle"])
        record["failures"] = failures
        with open(args.log, "a", encoding="utf-8") as log:
            log.write(json.dumps(record) + "\n")


if __name__ == "__main__":
    main()

"""DynamoDB's writes are atomic per item: a conditional write checks and
writes in one step, so two concurrent writers cannot both succeed. moto's
threaded server checks and writes in Python, where two requests can
interleave; this middleware runs DynamoDB requests one at a time, as the
service's item-level atomicity would order them (other services stay
concurrent)."""

from __future__ import annotations

import threading
from typing import Any, Callable, Iterable


class DynamoDbAtomic:
    def __init__(self, app: Callable[..., Iterable[bytes]]):
        self.app = app
        self.lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if not str(environ.get("HTTP_X_AMZ_TARGET", "")).startswith("DynamoDB_"):
            return self.app(environ, start_response)
        with self.lock:
            # The whole answer is produced under the lock (moto answers in one piece).
            return list(self.app(environ, start_response))

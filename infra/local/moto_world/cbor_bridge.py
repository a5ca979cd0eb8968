"""Smithy RPC v2 CBOR -> JSON 1.0 bridge for CloudWatch.

aws-sdk-rust's CloudWatch client speaks Smithy RPC v2 CBOR
(POST /service/GraniteServiceVersion20100801/operation/<Op>); moto only serves
CloudWatch's JSON 1.0 (and query) protocols. This WSGI middleware decodes the
CBOR request, forwards it to moto as JSON 1.0, and encodes moto's answer back
as CBOR. Which members are timestamps (CBOR tag 1, epoch seconds) and which
are doubles comes from botocore's CloudWatch service model, not from guessing
by name.
"""

from __future__ import annotations

import io
import json
from datetime import datetime, timezone
from typing import Any, Callable

import botocore.session
import cbor2

PREFIX = "/service/GraniteServiceVersion20100801/operation/"
TARGET_PREFIX = "GraniteServiceVersion20100801"

_model = botocore.session.get_session().get_service_model("cloudwatch")


def _to_json_value(value: Any) -> Any:
    """CBOR-decoded request values -> JSON protocol values (timestamps as epoch seconds)."""
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=timezone.utc)
        return value.timestamp()
    if isinstance(value, dict):
        return {k: _to_json_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_to_json_value(v) for v in value]
    if isinstance(value, bytes):
        import base64

        return base64.b64encode(value).decode()
    return value


def _to_cbor_value(value: Any, shape: Any) -> Any:
    """JSON protocol response values -> CBOR values typed by the service model."""
    if value is None or shape is None:
        return value
    kind = shape.type_name
    if kind == "structure":
        if not isinstance(value, dict):
            return value
        out = {}
        for key, member_value in value.items():
            member = shape.members.get(key)
            if member is None:
                # Error bodies carry __type and message; keep unknown members as they are.
                out[key] = member_value
            else:
                out[key] = _to_cbor_value(member_value, member)
        return out
    if kind == "list":
        return [_to_cbor_value(v, shape.member) for v in value]
    if kind == "map":
        return {k: _to_cbor_value(v, shape.value) for k, v in value.items()}
    if kind == "timestamp":
        if isinstance(value, (int, float)):
            return datetime.fromtimestamp(float(value), tz=timezone.utc)
        if isinstance(value, str):
            return datetime.fromisoformat(value.replace("Z", "+00:00"))
        return value
    if kind in ("double", "float"):
        return float(value)
    if kind in ("integer", "long"):
        return int(value)
    return value


class CborBridge:
    """WSGI middleware in front of moto."""

    def __init__(self, app: Callable):
        self.app = app

    def __call__(self, environ: dict, start_response: Callable):
        path = environ.get("PATH_INFO", "")
        if not path.startswith(PREFIX) or environ.get("REQUEST_METHOD") != "POST":
            return self.app(environ, start_response)
        operation = path[len(PREFIX):]
        length = int(environ.get("CONTENT_LENGTH") or 0)
        raw = environ["wsgi.input"].read(length) if length else b""
        try:
            request = cbor2.loads(raw) if raw else {}
        except Exception as error:  # a body we cannot decode is the client's fault
            return self._error(start_response, 400, "SerializationException", f"invalid CBOR body: {error}")
        body = json.dumps(_to_json_value(request)).encode()

        forwarded = dict(environ)
        forwarded["PATH_INFO"] = "/"
        forwarded["CONTENT_TYPE"] = "application/x-amz-json-1.0"
        forwarded["CONTENT_LENGTH"] = str(len(body))
        forwarded["HTTP_X_AMZ_TARGET"] = f"{TARGET_PREFIX}.{operation}"
        forwarded["wsgi.input"] = io.BytesIO(body)

        captured: dict[str, Any] = {}

        def capture(status: str, headers: list, exc_info: Any = None):
            captured["status"] = status
            captured["headers"] = headers
            return lambda _data: None

        chunks = self.app(forwarded, capture)
        try:
            payload = b"".join(chunks)
        finally:
            if hasattr(chunks, "close"):
                chunks.close()
        status = captured.get("status", "500 INTERNAL SERVER ERROR")
        code = int(status.split()[0])
        try:
            document = json.loads(payload) if payload.strip() else {}
        except ValueError:
            return self._error(start_response, 500, "InternalFailure", payload[:300].decode("utf-8", "replace"))

        if code >= 300:
            error_type = str(document.get("__type", "InternalFailure")).split("#")[-1]
            message = document.get("message") or document.get("Message") or ""
            return self._error(start_response, code, error_type, message)

        try:
            output_shape = _model.operation_model(operation).output_shape
        except Exception:
            output_shape = None
        encoded = cbor2.dumps(_to_cbor_value(document, output_shape), datetime_as_timestamp=True, timezone=timezone.utc)
        return self._respond(start_response, "200 OK", encoded)

    @staticmethod
    def _respond(start_response: Callable, status: str, body: bytes):
        start_response(
            status,
            [
                ("Content-Type", "application/cbor"),
                ("smithy-protocol", "rpc-v2-cbor"),
                ("Content-Length", str(len(body))),
                ("x-amzn-requestid", "alarm-triage-local"),
            ],
        )
        return [body]

    def _error(self, start_response: Callable, code: int, error_type: str, message: str):
        body = cbor2.dumps({"__type": f"com.amazonaws.cloudwatch#{error_type}", "message": message})
        reason = {400: "BAD REQUEST", 404: "NOT FOUND", 500: "INTERNAL SERVER ERROR"}.get(code, "ERROR")
        return self._respond(start_response, f"{code} {reason}", body)

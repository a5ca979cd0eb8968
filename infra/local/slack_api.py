"""A local stand-in for Slack: incoming webhooks and chat.postMessage.

It answers as Slack does and records every request so tests can read what
was posted:

- POST /services/T.../B.../SECRET   an incoming webhook: 200 `ok`; 404 `no_service` for an unknown URL;
                                    400 `invalid_blocks` for blocks Slack would refuse, `msg_too_long`, `no_text`
- POST /api/chat.postMessage        the Web API: 200 {"ok": true, "channel": ID, "ts": ...}; 200 {"ok": false,
                                    "error": "invalid_auth" | "channel_not_found" | "invalid_blocks" | "msg_too_long"} as Slack does
- POST /api/files.getUploadURLExternal   form or JSON {filename, length, alt_txt}: {"ok": true, "upload_url", "file_id"};
                                    `invalid_arguments` without a filename, `missing_argument` for a length under 1
- POST /upload/<file id>            the file's bytes: 200 `OK - <length>`; 400 when the length differs from the
                                    announced one or a .png is not a PNG
- POST /api/files.completeUploadExternal   JSON {files: [{id, title}], channel_id, thread_ts}: the files appear in
                                    the channel (in the thread of the top-level message thread_ts);
                                    `file_not_found` for a file not uploaded, `channel_not_found`,
                                    `invalid_thread_ts` for a ts that is not a top-level message of that channel
- POST /api/chat.update             JSON {channel, ts, text, blocks}: replaces a message the bot posted;
                                    `message_not_found` for one it did not, the block checks as above
- POST /api/views.open              JSON {trigger_id, view}: opens a modal; `invalid_trigger_id` for an id
                                    this Slack never issued or already used, `expired_trigger_id` after 3 s,
                                    `invalid_arguments` for a view Block Kit refuses (views_problem)
- POST /_recorder/interactivity     {"url": ...}: the Slack app's interactivity request URL
- POST /_recorder/interact          {"user", "channel_id", "ts", "action_id"}: someone clicks that button of
                                    that message; Slack's block_actions payload is signed with the app's
                                    signing secret (v0:timestamp:body, HMAC-SHA256) and sent to the
                                    interactivity URL as application/x-www-form-urlencoded. Answers with
                                    {"status", "body", "elapsed_ms", "request": {"headers", "body"}}
- POST /_recorder/submit            {"view_id", "user", "selected": [option values], "text"}: the person
                                    submits the modal opened for them (view_submission, signed and sent alike)
- GET  /_recorder/messages          the bot's top-level messages as they are now (after chat.update)
- POST /_recorder/script            {"answers": [{"status": 429, "retry_after": 1, "body": "rate_limited"}, ...]}
                                    answers the next requests with these, in order, before normal service;
                                    "delay_ms" holds a request back first (without "status": a pure delay)
- GET  /_recorder/requests          everything received (the Authorization header is reduced to whether it was valid)
- POST /_recorder/reset             forget requests and script
- GET  /healthz

Blocks are checked against Block Kit's documented limits (blocks_problem):
50 blocks; block_id 255; section text 3000, at most 10 fields of 2000; a
plain_text header of 150; context: at most 10 elements; actions: at most 25
buttons, each with plain_text text of 75, action_id 255, url 3000, value 2000;
no empty text; the top-level text 40000 (`msg_too_long`).

The webhook paths and the bot token are secrets to the bot: this server
never logs them (log lines name the kind of request only).

    python slack_api.py --port PORT --config FILE

FILE is JSON: {"webhooks": {"/services/T/B/SECRET": "#channel"}, "bot_token": "xoxb-...",
"channels": {"#channel": "C0123"}, "signing_secret": "..."}; a file rather than arguments, so the secrets are not in `ps`.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import os
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, NamedTuple
from urllib import error as urlerror
from urllib import parse as urlparse
from urllib import request as urlrequest

# Block Kit's documented limits (docs.slack.dev/reference/block-kit), in characters.
MAX_TEXT = 40000              # the top-level `text`
MAX_BLOCKS = 50
MAX_BLOCK_ID = 255
MAX_TEXT_OBJECT = 3000        # section text, context text
MAX_HEADER_TEXT = 150
MAX_FIELDS = 10
MAX_FIELD_TEXT = 2000
MAX_CONTEXT_ELEMENTS = 10
MAX_ACTIONS_ELEMENTS = 25
MAX_BUTTON_TEXT = 75
MAX_ACTION_ID = 255
MAX_BUTTON_URL = 3000
MAX_BUTTON_VALUE = 2000
MAX_VIEW_TITLE = 24
MAX_VIEW_BLOCKS = 100
MAX_PRIVATE_METADATA = 3000
MAX_INPUT_LABEL = 2000
MAX_OPTIONS = 10
MAX_OPTION_TEXT = 75
MAX_OPTION_VALUE = 150
TRIGGER_LIFETIME = 3.0   # seconds a trigger_id can open a view


def _text_ok(obj: Any, limit: int, plain_only: bool = False) -> bool:
    """A text object: plain_text (or mrkdwn where allowed), 1 to `limit` characters."""
    kinds = {"plain_text"} if plain_only else {"plain_text", "mrkdwn"}
    return (isinstance(obj, dict) and obj.get("type") in kinds
            and isinstance(obj.get("text"), str) and 0 < len(obj["text"]) <= limit)


def _short(value: Any, limit: int) -> bool:
    return value is None or (isinstance(value, str) and len(value) <= limit)


def _button_ok(element: Any) -> bool:
    return (isinstance(element, dict) and element.get("type") == "button"
            and _text_ok(element.get("text"), MAX_BUTTON_TEXT, plain_only=True)
            and _short(element.get("action_id"), MAX_ACTION_ID)
            and _short(element.get("url"), MAX_BUTTON_URL)
            and _short(element.get("value"), MAX_BUTTON_VALUE))


def _block_ok(block: Any) -> bool:
    """One block against Block Kit's rules. Only the kinds the bot sends are
    modelled; any other block or element is refused, so a new one shows up here."""
    if not isinstance(block, dict) or not _short(block.get("block_id"), MAX_BLOCK_ID):
        return False
    kind = block.get("type")
    if kind == "divider":
        return True
    if kind == "header":
        return _text_ok(block.get("text"), MAX_HEADER_TEXT, plain_only=True)
    if kind == "section":
        fields = block.get("fields")
        if fields is not None and not (isinstance(fields, list) and 0 < len(fields) <= MAX_FIELDS
                                       and all(_text_ok(f, MAX_FIELD_TEXT) for f in fields)):
            return False
        if "text" in block:
            return _text_ok(block["text"], MAX_TEXT_OBJECT)
        return fields is not None
    elements = block.get("elements")
    if kind == "context":
        return (isinstance(elements, list) and 0 < len(elements) <= MAX_CONTEXT_ELEMENTS
                and all(_text_ok(e, MAX_TEXT_OBJECT) or (isinstance(e, dict) and e.get("type") == "image") for e in elements))
    if kind == "actions":
        return (isinstance(elements, list) and 0 < len(elements) <= MAX_ACTIONS_ELEMENTS
                and all(_button_ok(e) for e in elements))
    return False


def blocks_problem(payload: dict[str, Any]) -> str | None:
    """The error Slack would answer this message with, or None: `msg_too_long`
    for a top-level text over 40000 characters, `no_text` for neither text nor
    blocks, `invalid_blocks` for blocks breaking Block Kit's limits."""
    text = payload.get("text")
    if isinstance(text, str) and len(text) > MAX_TEXT:
        return "msg_too_long"
    blocks = payload.get("blocks")
    if blocks is None:
        return None if isinstance(text, str) and text else "no_text"
    if not isinstance(blocks, list) or len(blocks) > MAX_BLOCKS or not all(_block_ok(b) for b in blocks):
        return "invalid_blocks"
    return None


def _input_ok(block: dict[str, Any]) -> bool:
    element = block.get("element")
    if not _text_ok(block.get("label"), MAX_INPUT_LABEL, plain_only=True) or not isinstance(element, dict):
        return False
    if not _short(element.get("action_id"), MAX_ACTION_ID) or not element.get("action_id"):
        return False
    if element.get("type") == "plain_text_input":
        return element.get("max_length") is None or 0 < int(element["max_length"]) <= 3000
    if element.get("type") == "checkboxes":
        options = element.get("options")
        return (isinstance(options, list) and 0 < len(options) <= MAX_OPTIONS
                and all(_text_ok(o.get("text"), MAX_OPTION_TEXT) and isinstance(o.get("value"), str)
                        and 0 < len(o["value"]) <= MAX_OPTION_VALUE for o in options))
    return False


def views_problem(view: Any) -> str | None:
    """Why Slack would refuse this modal (views.open answers `invalid_arguments`), or None."""
    if not isinstance(view, dict) or view.get("type") != "modal":
        return "not a modal"
    if not _text_ok(view.get("title"), MAX_VIEW_TITLE, plain_only=True):
        return "title missing or over 24 characters"
    blocks = view.get("blocks")
    if not isinstance(blocks, list) or not 0 < len(blocks) <= MAX_VIEW_BLOCKS:
        return "blocks missing or over 100"
    if not _short(view.get("private_metadata"), MAX_PRIVATE_METADATA) or not _short(view.get("callback_id"), MAX_ACTION_ID):
        return "private_metadata or callback_id too long"
    inputs = [b for b in blocks if isinstance(b, dict) and b.get("type") == "input"]
    if inputs and not _text_ok(view.get("submit"), MAX_VIEW_TITLE, plain_only=True):
        return "a view with inputs needs a submit button"
    if not all(_input_ok(b) if b.get("type") == "input" else _block_ok(b) for b in blocks if isinstance(b, dict)):
        return "a block breaks Block Kit's rules"
    return None


def secrets_hex() -> str:
    return os.urandom(6).hex()


def sign(secret: str, timestamp: str, body: bytes) -> str:
    """Slack's request signature: v0= and HMAC-SHA256 over v0:timestamp:body."""
    return "v0=" + hmac.new(secret.encode(), f"v0:{timestamp}:".encode() + body, hashlib.sha256).hexdigest()


class Answer(NamedTuple):
    status: int
    text: str
    is_json: bool
    headers: dict[str, str]


class Slack(ThreadingHTTPServer):
    def __init__(self, port: int, webhooks: dict[str, str], bot_token: str, channels: dict[str, str],
                 signing_secret: str = ""):
        super().__init__(("127.0.0.1", port), Handler)
        self.webhooks = webhooks  # path -> channel
        self.bot_token = bot_token
        self.channels = channels
        self.lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []
        self.script: list[dict[str, Any]] = []
        self.next_ts = 1_700_000_000_000_100
        # Uploads: file id -> {"filename", "length", "received"}; top-level messages: (channel id, ts).
        self.files: dict[str, dict[str, Any]] = {}
        self.top_level: set[tuple[str, str]] = set()
        # Interactivity: the app's request URL and signing secret, the bot's
        # messages as they are now, trigger ids issued (id -> expiry), views opened.
        self.signing_secret = signing_secret
        self.interactivity_url: str | None = None
        self.messages: dict[tuple[str, str], dict[str, Any]] = {}
        self.triggers: dict[str, float] = {}
        self.views: dict[str, dict[str, Any]] = {}

    def channel_id(self, name: str) -> str:
        if name in self.channels:
            return self.channels[name]
        if name.startswith("C") and name[1:].isalnum():
            return name
        return "C" + hashlib.sha1(name.encode()).hexdigest()[:8].upper()

    def ts(self) -> str:
        with self.lock:
            self.next_ts += 100
            value = self.next_ts
        return f"{value // 1_000_000}.{value % 1_000_000:06d}"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Slack

    def log_message(self, fmt: str, *args: Any) -> None:
        pass  # the default line includes the path, which holds the webhook secret

    def _reply(self, status: int, body: str | dict[str, Any], headers: dict[str, str] | None = None) -> tuple[int, str]:
        return self._send(self._answer(status, body, headers))

    @staticmethod
    def _answer(status: int, body: str | dict[str, Any], headers: dict[str, str] | None = None) -> Answer:
        """An answer not yet written, so the request can be recorded before the client sees it."""
        return Answer(status, json.dumps(body) if isinstance(body, dict) else body, isinstance(body, dict), headers or {})

    def _send(self, answer: Answer) -> tuple[int, str]:
        data = answer.text.encode()
        self.send_response(answer.status)
        self.send_header("Content-Type", "application/json" if answer.is_json else "text/plain")
        self.send_header("Content-Length", str(len(data)))
        for key, value in answer.headers.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)
        return answer.status, answer.text

    def do_GET(self) -> None:  # noqa: N802
        if self.path == "/healthz":
            self._reply(200, "ok")
        elif self.path == "/_recorder/requests":
            with self.server.lock:
                self._reply(200, {"requests": list(self.server.requests)})
        elif self.path == "/_recorder/messages":
            with self.server.lock:
                messages = [{"channel_id": c, "ts": ts, **m} for (c, ts), m in self.server.messages.items()]
            self._reply(200, {"messages": messages})
        else:
            self._reply(404, "not_found")

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if self.path == "/_recorder/script":
            with self.server.lock:
                self.server.script.extend(json.loads(raw or b"{}").get("answers", []))
            self._reply(200, {"ok": True})
            return
        if self.path == "/_recorder/reset":
            with self.server.lock:
                self.server.requests.clear()
                self.server.script.clear()
            self._reply(200, {"ok": True})
            return
        if self.path == "/_recorder/interactivity":
            with self.server.lock:
                self.server.interactivity_url = json.loads(raw or b"{}").get("url")
            self._reply(200, {"ok": True})
            return
        if self.path in ("/_recorder/interact", "/_recorder/submit"):
            self._person(raw)
            return
        if self.path in ("/api/chat.update", "/api/views.open"):
            self._interaction_api(raw)
            return
        if self.path in ("/api/files.getUploadURLExternal", "/api/files.completeUploadExternal") or self.path.startswith("/upload/"):
            self._files(raw)
            return
        kind = "web_api" if self.path == "/api/chat.postMessage" else "webhook" if self.path.startswith("/services/") else None
        if kind is None:
            self._reply(404, "not_found")
            return
        try:
            payload = json.loads(raw)
        except ValueError:
            payload = None
        record: dict[str, Any] = {
            "kind": kind,
            "received_at": time.time(),
            "content_type": self.headers.get("Content-Type"),
            "payload": payload,
        }
        if kind == "webhook":
            record["webhook"] = self.server.webhooks.get(self.path)
        else:
            auth = self.headers.get("Authorization") or ""
            record["authorization"] = "valid" if auth == f"Bearer {self.server.bot_token}" else "missing" if not auth else "invalid"
        with self.server.lock:
            scripted = self.server.script.pop(0) if self.server.script else None
        if scripted is not None and scripted.get("delay_ms"):
            time.sleep(float(scripted["delay_ms"]) / 1000.0)  # a Slack that hangs; other requests go on
        if scripted is not None and "status" not in scripted:
            scripted = None  # a pure delay, then normal service
        if scripted is not None:
            headers = {"Retry-After": str(scripted["retry_after"])} if "retry_after" in scripted else {}
            answer = self._answer(int(scripted["status"]), scripted.get("body", ""), headers)
            record["scripted"] = True
        elif kind == "webhook":
            answer = self._webhook(record, payload)
        else:
            answer = self._web_api(record, payload)
        record.update(status=answer.status, answer=answer.text)
        # Recorded before answering: a client that reads the recorder after its answer sees its request.
        with self.server.lock:
            self.server.requests.append(record)
        self._send(answer)
        sys.stderr.write(f"slack-api: {kind} -> {answer.status}\n")

    def _webhook(self, record: dict[str, Any], payload: Any) -> Answer:
        if record["webhook"] is None:
            return self._answer(404, "no_service")
        if not isinstance(payload, dict):
            return self._answer(400, "invalid_payload")
        problem = blocks_problem(payload)
        if problem:
            return self._answer(400, problem)
        return self._answer(200, "ok")

    def _web_api(self, record: dict[str, Any], payload: Any) -> Answer:
        if record["authorization"] != "valid":
            return self._answer(200, {"ok": False, "error": "not_authed" if record["authorization"] == "missing" else "invalid_auth"})
        if not isinstance(payload, dict):
            return self._answer(200, {"ok": False, "error": "invalid_arguments"})
        channel = payload.get("channel")
        if not channel:
            return self._answer(200, {"ok": False, "error": "channel_not_found"})
        problem = blocks_problem(payload)
        if problem:
            return self._answer(200, {"ok": False, "error": problem})
        ts = self.server.ts()
        record["ts"] = ts
        record["channel_id"] = self.server.channel_id(channel)
        if not payload.get("thread_ts"):
            with self.server.lock:
                self.server.top_level.add((record["channel_id"], ts))
                self.server.messages[(record["channel_id"], ts)] = {"text": payload.get("text"), "blocks": payload.get("blocks")}
        return self._answer(200, {"ok": True, "channel": record["channel_id"], "ts": ts, "message": {"ts": ts}})

    def _interaction_api(self, raw: bytes) -> None:
        """chat.update and views.open, recorded like the other Web API calls."""
        kind = self.path.rsplit("/", 1)[1]
        record: dict[str, Any] = {"kind": kind, "received_at": time.time(), "content_type": self.headers.get("Content-Type")}
        auth = self.headers.get("Authorization") or ""
        record["authorization"] = "valid" if auth == f"Bearer {self.server.bot_token}" else "missing" if not auth else "invalid"
        payload = self._arguments(raw)
        record["payload"] = payload
        if record["authorization"] != "valid":
            answer = self._answer(200, {"ok": False, "error": "not_authed" if not auth else "invalid_auth"})
        elif kind == "chat.update":
            answer = self._update(payload)
        else:
            answer = self._open_view(payload)
        record.update(status=answer.status, answer=answer.text)
        with self.server.lock:
            self.server.requests.append(record)
        self._send(answer)
        sys.stderr.write(f"slack-api: {kind} -> {answer.status}\n")

    def _update(self, payload: dict[str, Any]) -> Answer:
        key = (str(payload.get("channel")), str(payload.get("ts")))
        with self.server.lock:
            known = key in self.server.messages
        if not known:
            return self._answer(200, {"ok": False, "error": "message_not_found"})
        problem = blocks_problem(payload)
        if problem:
            return self._answer(200, {"ok": False, "error": problem})
        with self.server.lock:
            message = self.server.messages[key]
            message.update(text=payload.get("text") or message.get("text"), blocks=payload.get("blocks", message.get("blocks")))
            message["updates"] = message.get("updates", 0) + 1
        return self._answer(200, {"ok": True, "channel": key[0], "ts": key[1], "text": payload.get("text")})

    def _open_view(self, payload: dict[str, Any]) -> Answer:
        trigger = str(payload.get("trigger_id"))
        with self.server.lock:
            expiry = self.server.triggers.pop(trigger, None)
        if expiry is None:
            return self._answer(200, {"ok": False, "error": "invalid_trigger_id"})
        if time.time() > expiry:
            return self._answer(200, {"ok": False, "error": "expired_trigger_id"})
        view = payload.get("view")
        if isinstance(view, str):
            try:
                view = json.loads(view)
            except ValueError:
                view = None
        problem = views_problem(view)
        if problem:
            sys.stderr.write(f"slack-api: views.open refused: {problem}\n")
            return self._answer(200, {"ok": False, "error": "invalid_arguments"})
        with self.server.lock:
            view_id = f"V{len(self.server.views) + 1:08d}"
            self.server.views[view_id] = {"view": view, "trigger_id": trigger}
        return self._answer(200, {"ok": True, "view": {**view, "id": view_id}})

    def _person(self, raw: bytes) -> None:
        """Someone clicks a button or submits a form: Slack's payload, signed, to the interactivity URL."""
        ask = json.loads(raw or b"{}")
        if self.path.endswith("interact"):
            payload, problem = self._block_actions(ask)
        else:
            payload, problem = self._view_submission(ask)
        if problem:
            self._reply(400, {"error": problem})
            return
        self._reply(200, self.send_interaction(payload))

    def _block_actions(self, ask: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
        key = (str(ask.get("channel_id")), str(ask.get("ts")))
        with self.server.lock:
            message = json.loads(json.dumps(self.server.messages.get(key))) if key in self.server.messages else None
        if message is None:
            return {}, "no such message"
        for block in message.get("blocks") or []:
            for element in block.get("elements") or []:
                if block.get("type") == "actions" and element.get("action_id") == ask.get("action_id"):
                    trigger = f"{int(time.time())}.{secrets_hex()}"
                    with self.server.lock:
                        self.server.triggers[trigger] = time.time() + TRIGGER_LIFETIME
                    user = ask.get("user", "U0LOCAL01")
                    return {
                        "type": "block_actions", "user": {"id": user, "username": user.lower(), "team_id": "T0LOCAL"},
                        "api_app_id": "A0LOCAL", "token": "deprecated-verification-token", "trigger_id": trigger,
                        "team": {"id": "T0LOCAL", "domain": "local"},
                        "container": {"type": "message", "message_ts": key[1], "channel_id": key[0], "is_ephemeral": False},
                        "channel": {"id": key[0], "name": key[0].lower()},
                        "message": {"type": "message", "ts": key[1], "text": message.get("text"), "blocks": message.get("blocks")},
                        "response_url": f"https://hooks.slack.com/actions/T0LOCAL/{secrets_hex()}",
                        "actions": [{"action_id": element["action_id"], "block_id": block.get("block_id"), "type": "button",
                                     "value": element.get("value"), "text": element.get("text"), "action_ts": f"{time.time():.6f}"}],
                    }, None
        return {}, f"no button {ask.get('action_id')!r} on that message"

    def _view_submission(self, ask: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
        with self.server.lock:
            opened = self.server.views.get(str(ask.get("view_id")))
        if opened is None:
            return {}, "no such view"
        view = opened["view"]
        values: dict[str, Any] = {}
        for block in view["blocks"]:
            if block.get("type") != "input":
                continue
            element = block["element"]
            if element["type"] == "checkboxes":
                chosen = [o for o in element["options"] if o["value"] in ask.get("selected", [])]
                values[block["block_id"]] = {element["action_id"]: {"type": "checkboxes", "selected_options": chosen}}
            else:
                values[block["block_id"]] = {element["action_id"]: {"type": "plain_text_input", "value": ask.get("text")}}
        user = ask.get("user", "U0LOCAL01")
        return {
            "type": "view_submission", "team": {"id": "T0LOCAL"}, "user": {"id": user, "team_id": "T0LOCAL"},
            "api_app_id": "A0LOCAL", "trigger_id": f"{int(time.time())}.{secrets_hex()}",
            "view": {"id": ask["view_id"], "type": "modal", "callback_id": view.get("callback_id"),
                     "private_metadata": view.get("private_metadata", ""), "state": {"values": values}},
        }, None

    def send_interaction(self, payload: dict[str, Any]) -> dict[str, Any]:
        """Posts the payload as Slack does and reports the answer and how long it took."""
        with self.server.lock:
            url = self.server.interactivity_url
        if not url:
            return {"status": 0, "body": "no interactivity URL configured"}
        body = urlparse.urlencode({"payload": json.dumps(payload)}).encode()
        timestamp = str(int(time.time()))
        headers = {"Content-Type": "application/x-www-form-urlencoded", "X-Slack-Request-Timestamp": timestamp,
                   "X-Slack-Signature": sign(self.server.signing_secret, timestamp, body), "User-Agent": "Slackbot 1.0 (+https://api.slack.com/robots)"}
        started = time.monotonic()
        try:
            with urlrequest.urlopen(urlrequest.Request(url, data=body, headers=headers, method="POST"), timeout=10) as r:
                status, text = r.status, r.read().decode("utf-8", "replace")
        except urlerror.HTTPError as e:
            status, text = e.code, e.read().decode("utf-8", "replace")
        elapsed = (time.monotonic() - started) * 1000
        return {"status": status, "body": text, "elapsed_ms": round(elapsed, 1),
                "request": {"url": url, "headers": headers, "body": body.decode()}}

    def _files(self, raw: bytes) -> None:
        """The three steps of an external upload, each recorded with its kind."""
        record: dict[str, Any] = {"kind": self.path.strip("/").split("/")[-1] if not self.path.startswith("/upload/") else "upload",
                                  "received_at": time.time(), "content_type": self.headers.get("Content-Type")}
        auth = self.headers.get("Authorization") or ""
        record["authorization"] = "valid" if auth == f"Bearer {self.server.bot_token}" else "missing" if not auth else "invalid"
        if self.path.startswith("/upload/"):
            answer = self._upload(record, self.path[len("/upload/"):], raw)
        else:
            if record["authorization"] != "valid":
                answer = self._answer(200, {"ok": False, "error": "not_authed" if not auth else "invalid_auth"})
            else:
                payload = self._arguments(raw)
                record["payload"] = payload
                if self.path.endswith("getUploadURLExternal"):
                    answer = self._get_upload_url(payload)
                else:
                    answer = self._complete_upload(record, payload)
        record.update(status=answer.status, answer=answer.text)
        with self.server.lock:
            self.server.requests.append(record)
        self._send(answer)
        sys.stderr.write(f"slack-api: {record['kind']} -> {answer.status}\n")

    def _arguments(self, raw: bytes) -> dict[str, Any]:
        if (self.headers.get("Content-Type") or "").startswith("application/json"):
            try:
                value = json.loads(raw)
                return value if isinstance(value, dict) else {}
            except ValueError:
                return {}
        from urllib.parse import parse_qs
        return {k: v[0] for k, v in parse_qs(raw.decode("utf-8", "replace")).items()}

    def _get_upload_url(self, payload: dict[str, Any]) -> Answer:
        filename = payload.get("filename")
        try:
            length = int(payload.get("length", 0))
        except (TypeError, ValueError):
            length = 0
        if not filename:
            return self._answer(200, {"ok": False, "error": "invalid_arguments"})
        if length < 1:
            return self._answer(200, {"ok": False, "error": "missing_argument"})
        if len(str(payload.get("alt_txt", ""))) > 1000:
            return self._answer(200, {"ok": False, "error": "alt_txt_too_large"})
        with self.server.lock:
            file_id = f"F{len(self.server.files) + 1:08d}"
            self.server.files[file_id] = {"filename": filename, "length": length, "received": None}
        host, port = self.server.server_address[:2]
        return self._answer(200, {"ok": True, "upload_url": f"http://{host}:{port}/upload/{file_id}", "file_id": file_id})

    def _upload(self, record: dict[str, Any], file_id: str, raw: bytes) -> Answer:
        record["file_id"] = file_id
        record["bytes"] = len(raw)
        with self.server.lock:
            announced = self.server.files.get(file_id)
        if announced is None:
            return self._answer(404, "file_not_found")
        if len(raw) != announced["length"]:
            return self._answer(400, f"length {len(raw)} differs from the announced {announced['length']}")
        if announced["filename"].endswith(".png"):
            if raw[:8] != b"\x89PNG\r\n\x1a\n":
                return self._answer(400, "not a PNG")
            record["png_size"] = [int.from_bytes(raw[16:20], "big"), int.from_bytes(raw[20:24], "big")]
        with self.server.lock:
            announced["received"] = len(raw)
        return self._answer(200, f"OK - {len(raw)}")

    def _complete_upload(self, record: dict[str, Any], payload: dict[str, Any]) -> Answer:
        files = payload.get("files")
        if isinstance(files, str):
            try:
                files = json.loads(files)
            except ValueError:
                files = None
        if not isinstance(files, list) or not files or not all(isinstance(f, dict) and f.get("id") for f in files):
            return self._answer(200, {"ok": False, "error": "invalid_arguments"})
        channel = payload.get("channel_id")
        thread_ts = payload.get("thread_ts")
        with self.server.lock:
            known = {f["id"]: self.server.files.get(f["id"]) for f in files}
            top_level = set(self.server.top_level)
        if any(v is None or v["received"] is None for v in known.values()):
            return self._answer(200, {"ok": False, "error": "file_not_found"})
        if not channel or not str(channel).startswith("C"):
            return self._answer(200, {"ok": False, "error": "channel_not_found"})
        if thread_ts and (channel, thread_ts) not in top_level:
            return self._answer(200, {"ok": False, "error": "invalid_thread_ts"})
        record["channel_id"] = channel
        return self._answer(200, {"ok": True, "files": [{"id": f["id"], "title": f.get("title", "")} for f in files]})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=0, help="0: any free port, written to --port-file")
    parser.add_argument("--port-file", help="where to write the port once listening")
    parser.add_argument("--config", required=True)
    args = parser.parse_args()
    with open(args.config) as f:
        config = json.load(f)
    server = Slack(args.port, config.get("webhooks", {}), config["bot_token"], config.get("channels", {}),
                   config.get("signing_secret", ""))
    if args.port_file:
        # Bound and listening before the port is published: a client that reads
        # the file can connect at once, and no other process can have taken the
        # port between a probe and this bind (the race a port picked by the
        # caller has).
        tmp = f"{args.port_file}.tmp"
        with open(tmp, "w") as f:
            f.write(str(server.server_address[1]))
        os.replace(tmp, args.port_file)
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
    server.serve_forever()


if __name__ == "__main__":
    main()

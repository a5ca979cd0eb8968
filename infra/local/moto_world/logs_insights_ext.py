"""CloudWatch Logs Insights for moto 5.2.5: StartQuery, GetQueryResults,
StopQuery and DescribeQueries over the log groups moto keeps.

moto's own StartQuery runs a small query engine of its own when the query
starts, GetQueryResults answers `Complete` at once, StopQuery does not exist,
and JSON messages are not turned into fields. Here a query runs as the
CloudWatch Logs API documents it, over a subset of the query language:

- StartQuery: exactly one of `logGroupName`, `logGroupNames` (up to 50) or
  `logGroupIdentifiers` (names or ARNs); `startTime` and `endTime` in epoch
  seconds, both inclusive (an event of the end second counts); `queryString`
  (at most 10,000 characters); `limit` 1 to 10,000, a cap on the rows like
  `| limit`. A log group that does not exist is a ResourceNotFoundException;
  a query outside the subset a MalformedQueryException naming what is not
  supported. Answers `{"queryId"}`.
- GetQueryResults: the first call for a query answers `Running` with no
  rows, later calls `Complete` with them (clients must poll, as on AWS); a
  stopped query stays `Cancelled` with no rows. Each row is a list of
  `{"field", "value"}`: the fields asked for that the event has, then
  `@ptr`. `@timestamp` reads `2026-12-04 08:10:00.123`, `@message` is the
  raw message, `@logStream` and `@log` (`ACCOUNT:GROUP`) name where it is,
  and a JSON message's fields are flattened with dots (`log`,
  `kubernetes.pod_name`). `statistics` has `recordsMatched`,
  `recordsScanned` and `bytesScanned` (floats).
- StopQuery: `{"success": true}` while the query runs, `false` after.
- Only events at or before the real clock's now are found (a world's lines
  printed "later" do not exist yet).

The query subset, commands separated by `|`:

    fields f1, f2, ...                 which fields each row carries
    filter COND and COND ...           field = "x", field != "x", field in ["a", "b"],
                                       field like /regex/, field =~ /regex/, field like "substring"
    sort FIELD [asc|desc]              @timestamp (by time), or any field
    limit N                            N from 1 to 10,000

Without `limit`, at most 10,000 rows (the documented default). Strings take
double or single quotes; a field name with other characters than letters,
digits, `_`, `.` and `@` is written in backticks.

Events are loaded through POST /_alarm_triage/log-events (admin.py): the
stack ships a world's container lines there, hours old, which PutLogEvents
would take only in chronological batches (moto refuses events over 14 days
old); they land in moto's own log streams, so DescribeLogStreams,
GetLogEvents and FilterLogEvents see them too.
"""

from __future__ import annotations

import base64
import json
import re
import threading
import time
import uuid
from datetime import datetime, timezone
from typing import Any, Callable

from moto.core.exceptions import JsonRESTError
from moto.logs import models as logs_models
from moto.logs import responses as logs_responses

MAX_ROWS = 10000
DEFAULT_ROWS = 10000
MAX_LOG_GROUPS = 50
MAX_QUERY_LENGTH = 10000

_lock = threading.Lock()
# query id -> the query, its answer and how often it was asked for
QUERIES: dict[str, dict[str, Any]] = {}
# moto event id -> the event's fields (flattened JSON), parsed once
_FIELDS: dict[int, dict[str, str]] = {}


class _LogsError(JsonRESTError):
    code = 400

    def __init__(self, message: str):
        super().__init__(type(self).__name__, message)


class InvalidParameterException(_LogsError):
    pass


class ResourceNotFoundException(_LogsError):
    pass


class MalformedQueryException(_LogsError):
    def __init__(self, message: str, query: str = ""):
        super().__init__(message)
        # As the service: the message, and where in the query it is.
        self.description = json.dumps({"__type": "MalformedQueryException", "message": message, "queryCompileError": {
            "location": {"startCharOffset": 0, "endCharOffset": max(len(query) - 1, 0)}, "message": message}})


# --- loading ---------------------------------------------------------------------------

def load(account: str, region: str, group: str, streams: list[dict[str, Any]]) -> int:
    """Appends events to the group's streams, creating the streams (the
    admin endpoint log-events calls this): `[{"name", "events":
    [{"timestamp" (epoch ms), "message"}]}]`. The group must exist."""
    backend = logs_models.logs_backends[str(account)][str(region)]
    log_group = backend.groups.get(group)
    if log_group is None:
        raise ValueError(f"log-events: log group {group!r} does not exist in {account}/{region} (create it with CreateLogGroup)")
    count = 0
    prepared = []
    for i, stream in enumerate(streams):
        name = stream.get("name") if isinstance(stream, dict) else None
        if not isinstance(name, str) or not name or ":" in name or "*" in name:
            raise ValueError(f"log-events streams[{i}]: a log stream name (no ':' or '*') is needed")
        events = stream.get("events") or []
        for j, event in enumerate(events):
            if (not isinstance(event, dict) or isinstance(event.get("timestamp"), bool) or not isinstance(event.get("timestamp"), int)
                    or not isinstance(event.get("message"), str)):
                raise ValueError(f"log-events streams[{i}].events[{j}]: expected {{timestamp (epoch ms), message}}")
        prepared.append((name, sorted(({"timestamp": e["timestamp"], "message": e["message"]} for e in events),
                                      key=lambda e: e["timestamp"])))
    with _lock:
        for name, events in prepared:
            if name not in log_group.streams:
                log_group.streams[name] = logs_models.LogStream(log_group, name)
            stream = log_group.streams[name]
            if events:
                stream.put_log_events(events)
                for event in stream.events[-len(events):]:
                    _fields(event, log_group.account_id, log_group, stream)  # parsed now, not by the first query
            count += len(events)
    return count


# --- the query language subset ------------------------------------------------------------

FIELD = r"(?:`[^`]+`|@?[A-Za-z_][\w.@]*)"
FIELD_RE = re.compile(rf"^\s*({FIELD})\s*$")
UNSUPPORTED_COMMANDS = ("stats", "parse", "display", "dedup", "unmask", "diff", "pattern", "unnest", "lookup", "anomaly",
                        "fieldsSummary", "filterIndex", "source", "SOURCE")


def _split(query: str, separator: str, regex_after: tuple[str, ...] = ("like", "=~")) -> list[str]:
    """`query` split on `separator` outside strings, backticks, brackets and
    /regexes/ (a / opens a regex only after like or =~)."""
    parts, current, depth, i = [], [], 0, 0
    quote: str | None = None
    while i < len(query):
        char = query[i]
        if quote:
            current.append(char)
            if char == "\\" and quote != "`" and i + 1 < len(query):
                current.append(query[i + 1])
                i += 1
            elif char == quote:
                quote = None
        elif char in "\"'`":
            quote = char
            current.append(char)
        elif char == "/" and "".join(current).rstrip().lower().endswith(regex_after):
            quote = "/"
            current.append(char)
        elif char == "[":
            depth += 1
            current.append(char)
        elif char == "]":
            depth -= 1
            current.append(char)
        elif depth == 0 and (_word_boundary(query, i, 3) if separator == "and" else query.startswith(separator, i)):
            parts.append("".join(current))
            current = []
            i += len(separator)
            continue
        else:
            current.append(char)
        i += 1
    if quote:
        raise MalformedQueryException(f"unterminated {'regex' if quote == '/' else 'string'} starting with {quote}", query)
    parts.append("".join(current))
    return parts


def _word_boundary(text: str, i: int, length: int) -> bool:
    before = text[i - 1] if i > 0 else " "
    after = text[i + length] if i + length < len(text) else " "
    return text[i:i + length].lower() == "and" and before.isspace() and after.isspace()


def _field(text: str, query: str) -> str:
    match = FIELD_RE.match(text)
    if not match:
        raise MalformedQueryException(f"{text.strip()!r} is not a field name (functions and aliases are not supported "
                                      "by the local Logs Insights)", query)
    name = match.group(1)
    return name[1:-1] if name.startswith("`") else name


def _string(text: str, query: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return re.sub(r"\\(.)", r"\1", text[1:-1])
    if re.fullmatch(r"-?\d+(\.\d+)?", text):
        return text
    raise MalformedQueryException(f"{text!r} is not a string literal (write \"...\")", query)


LITERALS = re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|/(?:\\.|[^/\\])*/')
CONDITION = re.compile(rf"^\s*(?P<field>{FIELD})\s*(?P<op>!=|=~|=|\bnot\s+in\b|\bin\b|\bnot\s+like\b|\blike\b)\s*(?P<value>.*?)\s*$",
                       re.IGNORECASE | re.DOTALL)


def _condition(text: str, query: str) -> Callable[[dict[str, str]], bool]:
    bare = LITERALS.sub('""', text)  # what is outside strings and regexes
    if re.search(r"(^|\s)or(\s|$)|^\s*(\(|not\s)", bare, re.IGNORECASE):
        raise MalformedQueryException(f"filter {text.strip()!r}: only conditions joined by `and` are supported by the "
                                      "local Logs Insights (no or, not or parentheses)", query)
    match = CONDITION.match(text)
    if not match:
        raise MalformedQueryException(f"filter {text.strip()!r}: expected FIELD = \"x\", FIELD != \"x\", FIELD in [...], "
                                      "FIELD like /regex/ or FIELD like \"substring\" (comparisons such as < and functions "
                                      "are not supported by the local Logs Insights)", query)
    field = _field(match.group("field"), query)
    op = re.sub(r"\s+", " ", match.group("op").lower())
    value = match.group("value")
    if op in ("=", "!="):
        literal = _string(value, query)
        number = _number(literal)

        def equal(fields: dict[str, str]) -> bool:
            if field not in fields:
                return False
            have = fields[field]
            return have == literal or (number is not None and _number(have) == number)

        return equal if op == "=" else (lambda fields: field in fields and not equal(fields))
    if op in ("in", "not in"):
        if not (value.startswith("[") and value.endswith("]")):
            raise MalformedQueryException(f"filter {text.strip()!r}: `in` takes a list such as [\"a\", \"b\"]", query)
        items = [part for part in _split(value[1:-1], ",") if part.strip()]
        wanted = {_string(part, query) for part in items}
        if op == "in":
            return lambda fields: fields.get(field) in wanted
        return lambda fields: field in fields and fields[field] not in wanted
    # like, not like, =~
    if len(value) >= 2 and value.startswith("/") and value.endswith("/"):
        try:
            pattern = re.compile(value[1:-1])
        except re.error as error:
            raise MalformedQueryException(f"filter {text.strip()!r}: the regex does not compile ({error})", query)
        test: Callable[[str], bool] = lambda have: pattern.search(have) is not None
    elif op == "=~":
        raise MalformedQueryException(f"filter {text.strip()!r}: =~ takes a /regex/", query)
    else:
        substring = _string(value, query)
        test = lambda have: substring in have
    if op == "not like":
        return lambda fields: field in fields and not test(fields[field])
    return lambda fields: field in fields and test(fields[field])


def _number(text: str) -> float | None:
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def parse(query: str) -> list[tuple[str, Any]]:
    """The query as commands: ("fields", [names]), ("filter", [conditions]),
    ("sort", (field, descending)), ("limit", n). MalformedQueryException for
    anything outside the subset."""
    if not query.strip():
        raise MalformedQueryException("the query string is empty", query)
    commands: list[tuple[str, Any]] = []
    for part in _split(query, "|"):
        text = part.strip()
        if not text:
            raise MalformedQueryException("an empty command between two |", query)
        word, rest = re.match(r"(\S+)\s*(.*)", text, re.DOTALL).groups()  # type: ignore[union-attr]
        command = word.lower()
        rest = rest.strip()
        if command == "fields":
            if not rest:
                raise MalformedQueryException("fields needs at least one field", query)
            commands.append(("fields", [_field(f, query) for f in _split(rest, ",")]))
        elif command == "filter":
            if not rest:
                raise MalformedQueryException("filter needs a condition", query)
            commands.append(("filter", [_condition(c, query) for c in _split(rest, "and")]))
        elif command == "sort":
            match = re.fullmatch(rf"({FIELD})(?:\s+(asc|desc))?", rest, re.IGNORECASE)
            if not match:
                raise MalformedQueryException(f"sort {rest!r}: expected sort FIELD asc or sort FIELD desc (one field)", query)
            commands.append(("sort", (_field(match.group(1), query), (match.group(2) or "asc").lower() == "desc")))
        elif command == "limit":
            if not re.fullmatch(r"\d+", rest) or not 1 <= int(rest) <= MAX_ROWS:
                raise MalformedQueryException(f"limit {rest!r}: expected a whole number from 1 to {MAX_ROWS} "
                                              "(limit any is not supported by the local Logs Insights)", query)
            commands.append(("limit", int(rest)))
        elif command in [c.lower() for c in UNSUPPORTED_COMMANDS]:
            raise MalformedQueryException(f"the {word} command is not supported by the local Logs Insights (only fields, "
                                          "filter, sort and limit are)", query)
        else:
            raise MalformedQueryException(f"unknown command {word!r} (the local Logs Insights supports fields, filter, "
                                          "sort and limit)", query)
    return commands


# --- running a query --------------------------------------------------------------------

def _flatten(value: Any, prefix: str, out: dict[str, str]) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            _flatten(item, f"{prefix}.{key}" if prefix else str(key), out)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _flatten(item, f"{prefix}.{i}", out)
    elif value is None:
        return
    elif isinstance(value, bool):
        out[prefix] = "true" if value else "false"
    else:
        out[prefix] = str(value)


def _fields(event: Any, account: str, group: Any, stream: Any) -> dict[str, str]:
    """An event's fields, computed once: those Insights discovers in a JSON
    message (flattened with dots) and @timestamp, @message, @logStream, @log,
    @ingestionTime."""
    fields = _FIELDS.get(event.event_id)
    if fields is None:
        fields = {}
        text = event.message.strip()
        if text.startswith("{"):
            try:
                _flatten(json.loads(text), "", fields)
            except ValueError:
                fields = {}
        fields.update({"@timestamp": _insights_time(event.timestamp), "@message": event.message,
                       "@logStream": stream.log_stream_name, "@log": f"{account}:{group.name}",
                       "@ingestionTime": _insights_time(event.ingestion_time)})
        _FIELDS[event.event_id] = fields
    return fields


def _insights_time(ms: int) -> str:
    moment = datetime.fromtimestamp(ms / 1000, timezone.utc)
    return f"{moment:%Y-%m-%d %H:%M:%S}.{ms % 1000:03d}"


def _sort_key(value: str | None) -> tuple[int, float, str]:
    """Non-numbers before numbers, as Insights sorts ascending; a missing value first."""
    if value is None:
        return (0, 0.0, "")
    number = _number(value)
    return (2, number, "") if number is not None else (1, 0.0, value)


def run(groups: list[Any], start_ms: int, end_ms: int, commands: list[tuple[str, Any]],
        cap: int, now_ms: int) -> dict[str, Any]:
    """The rows and statistics of a parsed query over these moto log groups."""
    records = []
    scanned = 0
    scanned_bytes = 0
    for group in groups:
        for stream in list(group.streams.values()):
            for event in list(stream.events):
                if not start_ms <= event.timestamp <= end_ms or event.timestamp > now_ms:
                    continue
                scanned += 1
                scanned_bytes += len(event.message.encode())
                records.append((event, group, stream))
    records.sort(key=lambda r: (r[0].timestamp, r[0].event_id))
    rows = [(event, group, stream, _fields(event, group.account_id, group, stream)) for event, group, stream in records]
    shown: list[str] = []
    limit = None
    matched = None
    for command, argument in commands:
        if command == "fields":
            shown += [f for f in argument if f not in shown]
        elif command == "filter":
            rows = [row for row in rows if all(condition(row[3]) for condition in argument)]
        elif command == "sort":
            field, descending = argument
            if field in ("@timestamp", "@ingestionTime"):
                key = (lambda row: (row[0].timestamp, row[0].event_id)) if field == "@timestamp" else (lambda row: row[0].ingestion_time)
            else:
                key = lambda row, name=field: _sort_key(row[3].get(name))  # noqa: E731
            rows = sorted(rows, key=key, reverse=descending)
        elif command == "limit":
            limit = argument if limit is None else min(limit, argument)
            matched = len(rows) if matched is None else matched
            rows = rows[:argument]
    matched = len(rows) if matched is None else matched
    rows = rows[:min(cap, limit or cap)]
    shown = shown or ["@timestamp", "@message", "@logStream", "@log"]
    results = []
    for event, group, stream, fields in rows:
        row = [{"field": name, "value": fields[name]} for name in shown if name in fields]
        pointer = base64.b64encode(f"{group.account_id}:{group.name}:{stream.log_stream_name}:{event.event_id}".encode()).decode()
        row.append({"field": "@ptr", "value": pointer})
        results.append(row)
    return {"results": results, "statistics": {"recordsMatched": float(matched), "recordsScanned": float(scanned),
                                               "bytesScanned": float(scanned_bytes)}}


# --- the operations -----------------------------------------------------------------------

JSON_HEADERS = {"status": 200, "Content-Type": "application/x-amz-json-1.1"}


def _params(response: Any) -> dict[str, Any]:
    try:
        return json.loads(response.body or "{}")
    except ValueError:
        return {}


def _groups(response: Any, params: dict[str, Any]) -> list[Any]:
    given = [key for key in ("logGroupName", "logGroupNames", "logGroupIdentifiers") if params.get(key) not in (None, [])]
    if len(given) != 1:
        raise InvalidParameterException("A StartQuery request must include exactly one of logGroupName, logGroupNames "
                                        "or logGroupIdentifiers.")
    names = params[given[0]]
    names = [names] if given[0] == "logGroupName" else names
    if not isinstance(names, list) or not all(isinstance(n, str) and n for n in names):
        raise InvalidParameterException(f"{given[0]} must name log groups.")
    if len(names) > MAX_LOG_GROUPS:
        raise InvalidParameterException(f"A query can include up to {MAX_LOG_GROUPS} log groups.")
    account, region = response.current_account, response.region
    groups = []
    for name in names:
        owner, where, group = account, region, name
        arn = re.match(r"^arn:aws[\w-]*:logs:(?P<region>[\w-]+):(?P<account>\d{12}):log-group:(?P<name>[^:]+)(?::\*)?$", name)
        if arn and given[0] == "logGroupIdentifiers":
            owner, where, group = arn.group("account"), arn.group("region"), arn.group("name")
        found = logs_models.logs_backends[owner][where].groups.get(group)
        if found is None:
            raise ResourceNotFoundException(f"Log group '{group}' does not exist for account ID '{owner}'")
        groups.append(found)
    return groups


def _start_query(self: Any) -> tuple[str, dict[str, Any]]:
    params = _params(self)
    groups = _groups(self, params)
    query = params.get("queryString")
    if not isinstance(query, str):
        raise InvalidParameterException("queryString is required.")
    if len(query) > MAX_QUERY_LENGTH:
        raise InvalidParameterException(f"queryString must be at most {MAX_QUERY_LENGTH} characters.")
    start, end = params.get("startTime"), params.get("endTime")
    for key, value in (("startTime", start), ("endTime", end)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise InvalidParameterException(f"{key} must be a time in epoch seconds.")
    if end < start:
        raise InvalidParameterException("endTime must not be before startTime.")
    cap = params.get("limit")
    if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or not 1 <= cap <= MAX_ROWS):
        raise InvalidParameterException(f"limit must be from 1 to {MAX_ROWS}.")
    commands = parse(query)
    with _lock:
        answer = run(groups, start * 1000, end * 1000 + 999, commands, cap or DEFAULT_ROWS,
                     int(time.time() * 1000))
        query_id = str(uuid.uuid4())
        QUERIES[query_id] = {"account": self.current_account, "region": self.region, "query": query, "status": "Running",
                             "polls": 0, "created": int(time.time() * 1000), "groups": [g.name for g in groups], **answer}
    return json.dumps({"queryId": query_id}), JSON_HEADERS


def _query(self: Any, params: dict[str, Any]) -> dict[str, Any]:
    query = QUERIES.get(str(params.get("queryId")))
    if query is None or query["account"] != self.current_account or query["region"] != self.region:
        raise ResourceNotFoundException(f"Query {params.get('queryId')} does not exist.")
    return query


def _get_query_results(self: Any) -> tuple[str, dict[str, Any]]:
    params = _params(self)
    with _lock:
        query = _query(self, params)
        query["polls"] += 1
        if query["status"] == "Running" and query["polls"] > 1:
            query["status"] = "Complete"
        if query["status"] != "Complete":
            return json.dumps({"status": query["status"], "results": [],
                               "statistics": {"recordsMatched": 0.0, "recordsScanned": 0.0, "bytesScanned": 0.0}}), JSON_HEADERS
        return json.dumps({"status": "Complete", "results": query["results"], "statistics": query["statistics"]}), JSON_HEADERS


def _stop_query(self: Any) -> tuple[str, dict[str, Any]]:
    params = _params(self)
    with _lock:
        query = _query(self, params)
        if query["status"] != "Running":
            return json.dumps({"success": False}), JSON_HEADERS
        query["status"] = "Cancelled"
    return json.dumps({"success": True}), JSON_HEADERS


def _describe_queries(self: Any) -> tuple[str, dict[str, Any]]:
    params = _params(self)
    group, status = params.get("logGroupName"), params.get("status")
    with _lock:
        found = [(query_id, q) for query_id, q in QUERIES.items()
                 if q["account"] == self.current_account and q["region"] == self.region
                 and (not group or group in q["groups"]) and (not status or q["status"] == status)]
    found.sort(key=lambda item: item[1]["created"], reverse=True)
    return json.dumps({"queries": [{"queryId": query_id, "queryString": q["query"], "status": q["status"],
                                    "createTime": q["created"], "logGroupName": q["groups"][0]} for query_id, q in found]}), JSON_HEADERS


def install() -> None:
    logs_responses.LogsResponse.start_query = _start_query
    logs_responses.LogsResponse.get_query_results = _get_query_results
    logs_responses.LogsResponse.stop_query = _stop_query
    logs_responses.LogsResponse.describe_queries = _describe_queries

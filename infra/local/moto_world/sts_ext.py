"""STS and account extensions for moto 5.2.5: AssumeRole as AWS decides it,
and a home account for the credentials moto did not issue.

1. moto's AssumeRole hands out credentials for any role ARN, even a role
   that does not exist, and never reads the role's trust policy. Here every
   AssumeRole is decided the way IAM decides it before any credentials are
   issued: the role must exist in the account its ARN names, and its trust
   policy must allow the caller (an explicit Deny wins over any Allow). A
   principal matches when the trust policy's `Principal.AWS` is `*`, the
   caller's account (`arn:aws:iam::ACCOUNT:root` or the bare 12 digits), or
   the caller itself: for assumed-role credentials the role's ARN
   (`arn:aws:iam::ACCOUNT:role/NAME`, the form trust policies use) or the
   session's `arn:aws:sts::ACCOUNT:assumed-role/NAME/SESSION`. Conditions on
   `sts:ExternalId`, `sts:RoleSessionName`, `aws:PrincipalArn` and
   `aws:PrincipalAccount` are evaluated (StringEquals, StringLike,
   StringNotEquals, ArnEquals, ArnLike); a condition on anything else is
   taken as unmet, so such a statement allows nothing. A refusal is what STS
   answers: HTTP 403, `AccessDenied`, "User: <caller> is not authorized to
   perform: sts:AssumeRole on resource: <role ARN>". The caller's own
   identity policies are not evaluated (moto keeps IAM authorization off).

2. moto puts requests signed with keys it never issued (`testing`) in its
   default account 123456789012 unless MOTO_ACCOUNT_ID pins every request
   to one account (which also pins assumed-role credentials, so no request
   could ever act in a second account). A world with an organisation leaves
   MOTO_ACCOUNT_ID unset and names its central account as the home account
   instead: unknown keys act there, while credentials moto issued (by
   AssumeRole) act in their role's account, as on AWS.
"""

from __future__ import annotations

import fnmatch
import json
import re
import sys
import uuid
from typing import Any
from urllib.parse import unquote

from moto.iam import models as iam_models
from moto.sts import models as sts_models
from moto.sts import responses as sts_responses

ROLE_ARN_RE = re.compile(r"^arn:(?P<partition>aws[a-z-]*):iam::(?P<account>\d{12}):role/(?:.*/)?(?P<name>[\w+=,.@-]+)$")
ACTIONS = {"sts:assumerole", "sts:*", "*"}

_original_assume_role = sts_responses.TokenResponse.assume_role


def set_home_account(account: str) -> None:
    """Requests signed with keys moto did not issue act in `account`."""
    iam_models.DEFAULT_ACCOUNT_ID = str(account)


def _caller(response: Any) -> dict[str, str]:
    """Who is calling: the ARN STS would name in an error, the ARN a trust
    policy names for it, and its account."""
    access_key = response.get_access_key()
    account = response.current_account
    sts = sts_models.sts_backends[account][response.partition]
    assumed = sts.get_assumed_role_from_access_key(access_key)
    if assumed is not None:
        return {"arn": assumed.arn, "principal": assumed.role_arn, "account": assumed.account_id}
    _, arn, account = sts.get_caller_identity(access_key, response.region)
    # An IAM user (or moto's stand-in `user/moto` for keys it did not issue).
    principal = re.sub(r"^arn:([^:]+):sts::", r"arn:\1:iam::", arn)
    return {"arn": arn, "principal": principal, "account": account}


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def _principal_matches(statement: dict[str, Any], caller: dict[str, str], partition: str) -> bool:
    principal = statement.get("Principal")
    if principal == "*":
        return True
    if not isinstance(principal, dict):
        return False
    for value in _as_list(principal.get("AWS")):
        value = str(value)
        if value == "*":
            return True
        if value in (caller["account"], f"arn:{partition}:iam::{caller['account']}:root"):
            return True
        if value in (caller["principal"], caller["arn"]):
            return True
    return False


def _action_matches(statement: dict[str, Any]) -> bool:
    return any(str(action).lower() in ACTIONS for action in _as_list(statement.get("Action")))


def _condition_met(statement: dict[str, Any], context: dict[str, str | None]) -> bool:
    for operator, tests in (statement.get("Condition") or {}).items():
        if not isinstance(tests, dict):
            return False
        base = operator[:-len("IfExists")] if operator.endswith("IfExists") else operator
        for key, expected in tests.items():
            key = key.lower()
            if key not in context:
                return False  # a condition this simulation cannot judge is not met
            actual = context[key]
            if actual is None:
                if operator.endswith("IfExists"):
                    continue
                return False
            values = [str(v) for v in _as_list(expected)]
            if base in ("StringEquals", "ArnEquals"):
                ok = actual in values
            elif base in ("StringLike", "ArnLike"):
                ok = any(fnmatch.fnmatchcase(actual, v) for v in values)
            elif base == "StringNotEquals":
                ok = actual not in values
            else:
                return False
            if not ok:
                return False
    return True


def trust_allows(document: str, caller: dict[str, str], partition: str, context: dict[str, str | None]) -> bool:
    """Whether a trust policy lets `caller` assume the role: an Allow for
    sts:AssumeRole naming the caller, and no Deny doing the same."""
    try:
        policy = json.loads(unquote(document) if document.lstrip().startswith("%") else document)
    except ValueError:
        return False
    allowed = False
    for statement in _as_list(policy.get("Statement")):
        if not isinstance(statement, dict) or not _action_matches(statement):
            continue
        if not _principal_matches(statement, caller, partition) or not _condition_met(statement, context):
            continue
        if statement.get("Effect") == "Deny":
            return False
        if statement.get("Effect") == "Allow":
            allowed = True
    return allowed


def _access_denied(caller_arn: str, role_arn: str) -> tuple[int, dict[str, Any], str]:
    request_id = str(uuid.uuid4())
    message = f"User: {caller_arn} is not authorized to perform: sts:AssumeRole on resource: {role_arn}"
    body = (
        '<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">\n'
        "  <Error>\n"
        "    <Type>Sender</Type>\n"
        "    <Code>AccessDenied</Code>\n"
        f"    <Message>{message}</Message>\n"
        "  </Error>\n"
        f"  <RequestId>{request_id}</RequestId>\n"
        "</ErrorResponse>\n"
    )
    return 403, {"status": 403, "Content-Type": "text/xml", "x-amzn-RequestId": request_id}, body


def _assume_role(self: Any) -> Any:
    role_arn = str(self._get_param("RoleArn") or "")
    caller = _caller(self)
    match = ROLE_ARN_RE.match(role_arn)
    role = None
    if match:
        try:
            role = iam_models.iam_backends[match.group("account")][match.group("partition")].get_role_by_arn(role_arn)
        except Exception:  # noqa: BLE001 - moto's NotFoundException: no such role
            role = None
    context = {
        "sts:externalid": self._get_param("ExternalId"),
        "sts:rolesessionname": self._get_param("RoleSessionName"),
        "aws:principalarn": caller["principal"],
        "aws:principalaccount": caller["account"],
    }
    if role is None or not trust_allows(role.assume_role_policy_document or "{}", caller, self.partition, context):
        why = "no such role" if role is None else "its trust policy does not allow the caller"
        sys.stderr.write(f"sts_ext: AssumeRole refused: {caller['arn']} -> {role_arn} ({why})\n")
        return _access_denied(caller["arn"], role_arn)
    return _original_assume_role(self)


def install(home_account: str | None = None) -> None:
    sts_responses.TokenResponse.assume_role = _assume_role
    if home_account:
        set_home_account(home_account)

"""Email delivery for moto's SNS.

moto accepts `email` and `email-json` subscriptions but delivers nothing to
them. Here each such delivery is kept in a mailbox, shaped as SNS sends it:
the `email` member of a MessageStructure=json message (else `default`), the
subject (SNS's default subject when none was given), and SNS's footer. The
subscription's filter policy applies, as in AWS. People and tests read the
mailbox at GET /_alarm_triage/mailbox.
"""

from __future__ import annotations

import json
import threading
from datetime import datetime, timezone
from typing import Any

from moto.sns import models as sns_models

DEFAULT_SUBJECT = "AWS Notification Message"
FOOTER = (
    "\n\n--\nIf you wish to stop receiving notifications from this topic, please click or visit the link below "
    "to unsubscribe:\n{unsubscribe}\n\nPlease do not reply directly to this email. If you have any questions or "
    "comments regarding this email, please contact us at https://aws.amazon.com/support"
)

_lock = threading.Lock()
_mailbox: list[dict[str, Any]] = []


def mailbox() -> list[dict[str, Any]]:
    with _lock:
        return list(_mailbox)


def install() -> None:
    original = sns_models.Subscription.publish

    def publish(self, message: str, message_id: str, subject: str | None = None,
                message_attributes: dict[str, Any] | None = None, group_id: str | None = None,
                deduplication_id: str | None = None, message_structure: str | None = None) -> None:
        if self.protocol not in ("email", "email-json"):
            return original(self, message, message_id, subject=subject, message_attributes=message_attributes,
                            group_id=group_id, deduplication_id=deduplication_id, message_structure=message_structure)
        matcher = self._filter_policy_matcher
        if matcher is not None and not matcher.matches(message_attributes, message):
            return None
        body = self._parse_message_structure(message, self.protocol) if message_structure == "json" else message
        unsubscribe = f"https://sns.{self.topic.sns_backend.region_name}.amazonaws.com/unsubscribe.html?SubscriptionArn={self.arn}"
        if self.protocol == "email-json":
            body = json.dumps({"Type": "Notification", "MessageId": message_id, "TopicArn": self.topic.arn,
                               "Subject": subject, "Message": body, "UnsubscribeURL": unsubscribe})
        else:
            body = body + FOOTER.format(unsubscribe=unsubscribe)
        with _lock:
            _mailbox.append({
                "to": self.endpoint,
                "protocol": self.protocol,
                "subject": subject or DEFAULT_SUBJECT,
                "body": body,
                "message_id": message_id,
                "topic_arn": self.topic.arn,
                "delivered_at": datetime.now(timezone.utc).isoformat(),
            })
        return None

    sns_models.Subscription.publish = publish

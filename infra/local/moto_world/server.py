"""Starts moto with alarm-triage's extensions on 127.0.0.1.

    python -m moto_world.server --port PORT [--home-account ACCOUNT]

--home-account (worlds with an organisation, MOTO_ACCOUNT_ID unset): requests
signed with keys moto did not issue act in ACCOUNT; credentials from
AssumeRole act in their role's account (see sts_ext).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys

from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
from werkzeug.serving import run_simple

from . import cloudtrail_ext, cloudwatch_ext, elbv2_ext, logs_insights_ext, sns_ext, sts_ext
from .admin import AdminRoutes
from .cbor_bridge import CborBridge
from .dynamodb_atomic import DynamoDbAtomic
from .faults import Faults


def build_app(home_account: str | None = None):
    cloudtrail_ext.install()
    cloudwatch_ext.install()
    elbv2_ext.install()
    logs_insights_ext.install()
    sns_ext.install()
    sts_ext.install(home_account)
    # Faults sit outermost so injected latency and errors apply to every protocol.
    return Faults(AdminRoutes(CborBridge(DynamoDbAtomic(DomainDispatcherApplication(create_backend_app)))))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--home-account", help="the account of requests signed with keys moto did not issue")
    args = parser.parse_args()
    os.environ.setdefault("MOTO_PORT", str(args.port))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    run_simple("127.0.0.1", args.port, build_app(args.home_account), threaded=True, request_handler=MotoRequestHandler)


if __name__ == "__main__":
    main()

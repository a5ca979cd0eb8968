"""What the by-hand checks of the local world (check_cloudtrail.py,
check_logs.py) share: a failed check stops the run with what was seen, and
the stack is driven through stack.py in a scratch copy of a world.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent


class CheckFailed(Exception):
    pass


def check(condition: bool, what: str, detail: Any = "") -> None:
    if not condition:
        raise CheckFailed(f"{what}: {str(detail)[:2000]}")
    print(f"  ok  {what}")


def copy_world(base: Path, into: Path, suffix: str) -> Path:
    """A scratch copy of `base` without its expectations (the check adds to it)."""
    world = into / f"{base.name}-{suffix}"
    shutil.copytree(base, world)
    (world / "expected.yaml").unlink(missing_ok=True)
    return world


def stack(*args: str) -> str:
    answer = subprocess.run([sys.executable, str(HERE / "stack.py"), *args], capture_output=True, text=True, cwd=ROOT)
    if answer.returncode != 0:
        raise CheckFailed(f"stack.py {' '.join(args)} failed: {answer.stderr[-3000:]}")
    return answer.stdout


def error_code(call: Any) -> tuple[str, int]:
    """The AWS error code and HTTP status `call` ends with ("no error", 200 when none)."""
    import botocore.exceptions

    try:
        call()
    except botocore.exceptions.ClientError as error:
        return error.response["Error"]["Code"], error.response["ResponseMetadata"]["HTTPStatusCode"]
    return "no error", 200

"""Measures how long a function binary (diagnose or notify-slack) takes from
process start to its first request to the Lambda runtime API (the cold-start
cost the function adds).

    python scripts/bench_startup.py PATH_TO_BINARY [RUNS]
"""

import os
import socket
import statistics
import subprocess
import sys
import time


def one_run(binary: str) -> float:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    env = dict(
        os.environ,
        AWS_LAMBDA_RUNTIME_API=f"127.0.0.1:{port}",
        AWS_LAMBDA_FUNCTION_NAME="diagnose",
        AWS_LAMBDA_FUNCTION_VERSION="1",
        AWS_LAMBDA_FUNCTION_MEMORY_SIZE="256",
        AWS_REGION="eu-west-1",
        AWS_EC2_METADATA_DISABLED="true",
        AWS_ACCESS_KEY_ID="testing",
        AWS_SECRET_ACCESS_KEY="testing",
        DIAGNOSIS_TOPIC_ARN="arn:aws:sns:eu-west-1:111122223333:alarm-triage-diagnoses",
        SLACK_SECRET_ID="alarm-triage/slack",
        RUST_LOG="warn",
    )
    started = time.perf_counter()
    process = subprocess.Popen([binary], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    connection, _ = server.accept()
    connection.recv(1024)
    elapsed = time.perf_counter() - started
    process.kill()
    process.wait()
    connection.close()
    server.close()
    return elapsed * 1000


def main() -> None:
    binary = sys.argv[1]
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    times = [one_run(binary) for _ in range(runs)]
    print(f"   median {statistics.median(times):.1f} ms, min {min(times):.1f} ms, max {max(times):.1f} ms over {runs} starts")


if __name__ == "__main__":
    main()

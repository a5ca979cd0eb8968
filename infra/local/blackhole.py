"""Accepts TCP connections and never answers: what a private EKS endpoint looks
like from outside its VPC (clients time out). Loopback only.

    python blackhole.py --port PORT
"""

import argparse
import signal
import socket
import sys
import time


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    port = parser.parse_args().port
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", port))
    server.listen(64)
    held = []
    while True:
        connection, _ = server.accept()
        held.append(connection)
        held = held[-64:]
        time.sleep(0)


if __name__ == "__main__":
    main()

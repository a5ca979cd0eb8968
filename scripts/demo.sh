#!/usr/bin/env bash
# The main job: diagnose a captured ALB latency alarm and print the report.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh

cargo build --quiet --release --bin alarm-triage
exec target/release/alarm-triage replay events/sns-alb-alarm-target-response-time.json --offline "$@"

#!/usr/bin/env bash
# The main job, on one machine and without an AWS account: start the local
# world of the flapping-ALB incident (moto, Prometheus, a Kubernetes API),
# make its alarm fire so CloudWatch's real notification goes out through SNS,
# diagnose the captured event against the world, publish the diagnosis to the
# world's diagnosis topic and queue, and print the report.
#
#   scripts/demo.sh [WORLD]      WORLD defaults to alb-flapping-worker-ceiling (see tests/worlds/)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh

world=${1:-alb-flapping-worker-ceiling}
[ -d "tests/worlds/$world" ] || { echo "no world tests/worlds/$world (see docs/worlds.md)" >&2; exit 2; }

scripts/setup.sh
echo "== building alarm-triage" >&2
cargo build --quiet --bin alarm-triage

out=.world/demo
rm -rf "$out"
echo "== starting the local world $world; its alarm fires and is diagnosed" >&2
echo
target/debug/alarm-triage replay --world "tests/worlds/$world" --format text --out-dir "$out"
echo
echo "Renderings are in $out/<diagnosis id>/: diagnosis.json (the JSON diagnosis, schema/diagnosis-v1.schema.json),"
echo "email.txt (the email body), slack.json (Slack Block Kit), chat.json (Amazon Q Developer in chat applications)."
echo "The captured SNS event is .world/replay/event.json; replay it offline with:"
echo "  target/debug/alarm-triage replay .world/replay/event.json --offline"

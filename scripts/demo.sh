#!/usr/bin/env bash
# The main job, on one machine and without an AWS account: start the local
# world of the flapping-ALB incident (moto, Prometheus, a Kubernetes API),
# make its alarm fire so CloudWatch's real notification goes out through SNS,
# diagnose the captured event against the world, and print the report.
#
#   scripts/demo.sh [WORLD] [--keep]     WORLD defaults to alb-flapping-worker-ceiling
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh

world=alb-flapping-worker-ceiling
keep=false
for arg in "$@"; do
  case "$arg" in
    --keep) keep=true ;;
    -*) echo "usage: scripts/demo.sh [WORLD] [--keep]" >&2; exit 2 ;;
    *) world="$arg" ;;
  esac
done
[ -d "tests/worlds/$world" ] || { echo "no world tests/worlds/$world (see docs/worlds.md)" >&2; exit 2; }

scripts/setup.sh
echo "== building alarm-triage" >&2
cargo build --quiet --bin alarm-triage

state=.world/demo
out=$state/out
python=.venv/bin/python
$python infra/local/stack.py down --state "$state" >/dev/null 2>&1 || true
if [ "$keep" = false ]; then
  trap '$python infra/local/stack.py down --state "$state" >/dev/null 2>&1 || true' EXIT
fi

echo "== starting the local world $world" >&2
$python infra/local/stack.py up "tests/worlds/$world" --state "$state" >/dev/null
source "$state/env"
echo "== the alarm fires; CloudWatch notifies SNS" >&2
event=$($python infra/local/stack.py deliver --state "$state")
echo "== diagnosing $event against the local world" >&2
echo
target/debug/alarm-triage replay "$event" --format text --out-dir "$out"
echo
echo "Renderings are in $out/<diagnosis id>/: diagnosis.json (the JSON diagnosis, schema/diagnosis-v1.schema.json),"
echo "email.txt (the email body), slack.json (Slack Block Kit), chat.json (Amazon Q Developer in chat applications)."
echo "The captured SNS event is $event; replay it any time with: target/debug/alarm-triage replay $event --offline"
if [ "$keep" = true ]; then
  echo "The world is still running: source $state/env, then stop it with: $python infra/local/stack.py down --state $state"
fi

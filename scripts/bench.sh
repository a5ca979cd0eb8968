#!/usr/bin/env bash
# Benchmarks of the diagnose function against the local world (figures, not
# pass/fail: this machine is shared). Builds release binaries first.
#
#  1. latency: 100 ms injected in front of every AWS call; one world-1 diagnosis;
#     wall time of evidence gathering and the number of API calls;
#  2. start-up: release diagnose binary, process start to its first poll of the
#     Lambda runtime API (median of 20 starts);
#  3. memory: peak RSS of the release diagnose binary serving one world-1
#     invocation under cargo-lambda's emulator (/usr/bin/time -v);
#  4. notify-slack: start-up as in 2; then, with both functions under the
#     emulator and the local Slack, the time of its first invocation (reads
#     the secret, builds the HTTPS client, posts) and of a second one (the
#     resolution), and its peak RSS.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
scripts/setup.sh
cargo build --quiet --release -p diagnose -p notify-slack -p alarm-triage
python=.venv/bin/python
state=.world/bench
world=tests/worlds/alb-flapping-worker-ceiling
trap 'for s in "$state" "$state-rss" "$state-notify"; do $python infra/local/stack.py down --state "$s" >/dev/null 2>&1 || true; done' EXIT

echo "== 1. latency: world 1, without and with 100 ms before every AWS call"
$python infra/local/stack.py up "$world" --state "$state" >/dev/null
source "$state/env"
event=$($python infra/local/stack.py deliver --state "$state")
echo "   without injected latency (moto's own processing):"
for run in 0; do
  target/release/alarm-triage replay "$event" --no-publish --format json > "$state/diagnosis-$run.json"
  $python - "$state/diagnosis-$run.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(f"   gathering {d['timings']['total_ms']} ms")
PY
done
echo "   with 100 ms injected:"
curl -s -X DELETE "$AWS_ENDPOINT_URL/_alarm_triage/calls" >/dev/null
curl -s -X POST "$AWS_ENDPOINT_URL/_alarm_triage/faults" -d '{"rules":[{"service":"*","operation":"*","delay_ms":100}]}' >/dev/null
for run in 1 2 3; do
  target/release/alarm-triage replay "$event" --no-publish --format json > "$state/diagnosis-$run.json"
  $python - "$state/diagnosis-$run.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
t = d["timings"]
slowest = max(t["sources"], key=lambda s: s["ms"])
print(f"   gathering {t['total_ms']} ms over {len(t['sources'])} timed sources (slowest {slowest['source']} {slowest['ms']} ms); {len(d['evidence_gaps'])} gaps")
PY
done
curl -s "$AWS_ENDPOINT_URL/_alarm_triage/calls" | $python -c '
import json, sys
calls = json.load(sys.stdin)["calls"]
print(f"   {sum(calls.values()) // 3} AWS API calls per diagnosis:", ", ".join(f"{k} x{v // 3}" for k, v in sorted(calls.items())))'
echo "   budget: (2 dependent steps + 1) x 100 ms = 300 ms (target groups -> their metrics, tags, attributes and health)"
$python infra/local/stack.py down --state "$state" >/dev/null

echo "== 2. start-up: process start to first poll of the runtime API (release)"
$python scripts/bench_startup.py target/release/diagnose

echo "== 3. memory: peak RSS while diagnosing world 1 (release, under the emulator)"
wrapper="$PWD/$state-rss.sh"
mkdir -p "$(dirname "$wrapper")"
printf '#!/bin/sh\nexec /usr/bin/time -v -o %s %s\n' "$PWD/$state-rss.time" "$PWD/target/release/diagnose" > "$wrapper"
chmod +x "$wrapper"
DIAGNOSE_BINARY="$wrapper" $python infra/local/stack.py up "$world" --state "$state-rss" --lambda >/dev/null
$python infra/local/stack.py deliver --state "$state-rss" >/dev/null
for _ in $(seq 1 100); do [ -s "$state-rss/invocations.jsonl" ] && break; sleep 0.2; done
# Stop the function itself (not /usr/bin/time) so that time reports.
time_pid=$(awk '$2 == "diagnose" {print $1}' "$state-rss/pids")
pkill -TERM -P "$time_pid" || true
for _ in $(seq 1 50); do grep -q "Exit status" "$state-rss.time" 2>/dev/null && break; sleep 0.1; done
$python infra/local/stack.py down --state "$state-rss" >/dev/null
grep -E "Maximum resident set size|Elapsed" "$state-rss.time" | sed 's/^/   /'

echo "== 4. notify-slack: start-up, invocation times, peak RSS (release)"
$python scripts/bench_startup.py target/release/notify-slack
wrapper="$PWD/$state-notify.sh"
printf '#!/bin/sh\nexec /usr/bin/time -v -o %s %s\n' "$PWD/$state-notify.time" "$PWD/target/release/notify-slack" > "$wrapper"
chmod +x "$wrapper"
DIAGNOSE_BINARY="$PWD/target/release/diagnose" NOTIFY_SLACK_BINARY="$wrapper" \
  $python infra/local/stack.py up "$world" --state "$state-notify" --lambda --notify webhook >/dev/null
$python infra/local/stack.py deliver --state "$state-notify" >/dev/null
for _ in $(seq 1 100); do [ -s "$state-notify/notify-slack-invocations.jsonl" ] && break; sleep 0.2; done
$python infra/local/stack.py deliver --state "$state-notify" --to OK >/dev/null
for _ in $(seq 1 100); do [ "$(wc -l < "$state-notify/notify-slack-invocations.jsonl")" -ge 2 ] && break; sleep 0.2; done
$python - "$state-notify/notify-slack-invocations.jsonl" <<'PY'
import json, sys
runs = [json.loads(line) for line in open(sys.argv[1])]
for name, run in zip(("first (cold: secret, client, post)", "second (warm)"), runs):
    print(f"   {name}: {run['seconds'] * 1000:.0f} ms as the SNS bridge saw it, error {run['function_error']}")
PY
time_pid=$(awk '$2 == "notify-slack" {print $1}' "$state-notify/pids")
pkill -TERM -P "$time_pid" || true
for _ in $(seq 1 50); do grep -q "Exit status" "$state-notify.time" 2>/dev/null && break; sleep 0.1; done
$python infra/local/stack.py down --state "$state-notify" >/dev/null
grep -E "Maximum resident set size" "$state-notify.time" | sed 's/^/   /'

#!/usr/bin/env bash
# Benchmarks of the diagnose function against the local world (figures, not
# pass/fail: this machine is shared). Builds release binaries first.
#
#  1. latency: 100 ms injected in front of every AWS call; world-1 diagnoses;
#     wall time of evidence gathering and the number of API calls; then the
#     depth of the critical path: d = 0, 100, 200, 400 ms before every AWS
#     call, then before every Kubernetes API and Prometheus request, median
#     of 3 diagnoses per d, and the least-squares slope of gathering time over
#     d for each (scripts/bench_depth.py): its dependent round trips;
#  2. start-up: release diagnose binary, process start to its first poll of the
#     Lambda runtime API (median of 20 starts);
#  3. memory: peak RSS of the release diagnose binary serving one world-1
#     invocation under cargo-lambda's emulator (/usr/bin/time -v);
#  4. notify-slack: start-up as in 2; then, with both functions under the
#     emulator and the local Slack, the time of its first invocation (reads
#     the secret, builds the HTTPS client, posts) and of a second one (the
#     resolution), and its peak RSS.
#
# BENCH_DEPTH_ONLY=BINARY runs section 1 alone with that alarm-triage binary
# and builds nothing: two binaries (before and after a change) compared in
# one sitting, e.g. scripts/bench.sh with BENCH_DEPTH_ONLY=/tmp/before, then
# with BENCH_DEPTH_ONLY=target/debug/alarm-triage. Round trips do not depend
# on the build profile; wall times do.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
scripts/setup.sh
bench_binary=${BENCH_DEPTH_ONLY:-target/release/alarm-triage}
# BENCH_MEMORY_ONLY=DIAGNOSE_BINARY runs section 3 alone with that diagnose
# binary and builds nothing (before and after a change, one sitting).
# BENCH_WORLD: the world of section 1 (default: world 1).
if [ -z "${BENCH_DEPTH_ONLY:-}${BENCH_MEMORY_ONLY:-}" ]; then
  cargo build --quiet --release -p diagnose -p notify-slack -p alarm-triage
fi
python=.venv/bin/python
state=.world/bench
world=${BENCH_WORLD:-tests/worlds/alb-flapping-worker-ceiling}
trap 'for s in "$state" "$state-rss" "$state-notify"; do $python infra/local/stack.py down --state "$s" >/dev/null 2>&1 || true; done' EXIT

# peak_rss WORLD BINARY: peak RSS of BINARY (a diagnose build) serving one
# invocation of WORLD under the emulator.
peak_rss() {
  local wrapper="$PWD/$state-rss.sh"
  mkdir -p "$(dirname "$wrapper")"
  printf '#!/bin/sh\nexec /usr/bin/time -v -o %s %s\n' "$PWD/$state-rss.time" "$2" > "$wrapper"
  chmod +x "$wrapper"
  rm -f "$PWD/$state-rss.time"
  DIAGNOSE_BINARY="$wrapper" $python infra/local/stack.py up "$1" --state "$state-rss" --lambda >/dev/null
  $python infra/local/stack.py deliver --state "$state-rss" >/dev/null
  for _ in $(seq 1 150); do [ -s "$state-rss/invocations.jsonl" ] && break; sleep 0.2; done
  # Stop the function itself (not /usr/bin/time) so that time reports.
  local time_pid
  time_pid=$(awk '$2 == "diagnose" {print $1}' "$state-rss/pids")
  pkill -TERM -P "$time_pid" || true
  for _ in $(seq 1 50); do grep -q "Exit status" "$state-rss.time" 2>/dev/null && break; sleep 0.1; done
  $python infra/local/stack.py down --state "$state-rss" >/dev/null
  grep -E "Maximum resident set size|Elapsed" "$state-rss.time" | sed 's/^/   /'
}

if [ -n "${BENCH_MEMORY_ONLY:-}" ]; then
  echo "== 3. memory: peak RSS of $BENCH_MEMORY_ONLY (under the emulator)"
  echo "   world 1:"
  peak_rss "$world" "$BENCH_MEMORY_ONLY"
  echo "   with 1 MiB of logs read (tests/bench-worlds/logs-one-mib):"
  peak_rss tests/bench-worlds/logs-one-mib "$BENCH_MEMORY_ONLY"
  exit 0
fi

echo "== 1. latency: world 1, without and with 100 ms before every AWS call; depth of the critical path"
$python infra/local/stack.py up "$world" --state "$state" >/dev/null
source "$state/env"
event=$($python infra/local/stack.py deliver --state "$state")
# Replays print only: publishing needs --publish.
# diagnose OUT SERIES DELAY: one diagnosis of the event, its JSON report in OUT, recorded for bench_depth.py.
depth_runs="$state/depth.tsv"
: > "$depth_runs"
diagnose() {
  "$bench_binary" replay "$event" --format json > "$1"
  printf '%s\t%s\t%s\n' "$2" "$3" "$1" >> "$depth_runs"
}
# set_delay URL RULE DELAY: the server's rules become RULE with DELAY ms (none for 0);
# rules accumulate and the first match wins, so the old ones go first.
set_delay() {
  curl -sSf -X DELETE "$1/_alarm_triage/faults" >/dev/null
  if [ "$3" -gt 0 ]; then
    curl -sSf -X POST "$1/_alarm_triage/faults" -d "{\"rules\":[{$2,\"delay_ms\":$3}]}" >/dev/null
  fi
}
delays=(0 100 200 400)

# AWS: every call to moto held back d ms.
for delay in "${delays[@]}"; do
  set_delay "$AWS_ENDPOINT_URL" '"service":"*","operation":"*"' "$delay"
  if [ "$delay" = 0 ]; then echo "   without injected latency (moto's own processing):"; fi
  if [ "$delay" = 100 ]; then
    echo "   with 100 ms injected:"
    curl -sSf -X DELETE "$AWS_ENDPOINT_URL/_alarm_triage/calls" >/dev/null
  fi
  for run in 1 2 3; do
    out="$state/diagnosis-aws-$delay-$run.json"
    diagnose "$out" AWS "$delay"
    case "$delay" in
      0) $python - "$out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(f"   gathering {d['timings']['total_ms']} ms")
PY
      ;;
      100) $python - "$out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
t = d["timings"]
slowest = max(t["sources"], key=lambda s: s["ms"])
print(f"   gathering {t['total_ms']} ms over {len(t['sources'])} timed sources (slowest {slowest['source']} {slowest['ms']} ms); {len(d['evidence_gaps'])} gaps")
PY
      ;;
    esac
  done
  if [ "$delay" = 100 ]; then
    curl -sSf "$AWS_ENDPOINT_URL/_alarm_triage/calls" | $python -c '
import json, sys
calls = json.load(sys.stdin)["calls"]
print(f"   {sum(calls.values()) // 3} AWS API calls per diagnosis:", ", ".join(f"{k} x{v // 3}" for k, v in sorted(calls.items())))'
    echo "   budget: (2 dependent steps + 1) x 100 ms = 300 ms (target groups -> their metrics, tags, attributes and health)"
  fi
done
set_delay "$AWS_ENDPOINT_URL" "" 0

# Kubernetes + Prometheus: every request to the API server and to the
# Prometheus fault proxy held back d ms (admin and health paths never match).
# The bot reaches Prometheus through the API server's service proxy
# (PROMETHEUS_SERVICE), or through the fault proxy when PROMETHEUS_URL is
# PROMETHEUS_FAULT_URL; either way one delay per request, as the API server
# forwards to Prometheus itself, not to the proxy. The call counts say which.
kube_servers=("$KUBE_API_URL")
if [ -n "${PROMETHEUS_FAULT_URL:-}" ]; then kube_servers+=("$PROMETHEUS_FAULT_URL"); fi
for url in "${kube_servers[@]}"; do curl -sSf -X DELETE "$url/_alarm_triage/calls" >/dev/null; done
for delay in "${delays[@]}"; do
  for url in "${kube_servers[@]}"; do set_delay "$url" '"path":".*"' "$delay"; done
  for run in 1 2 3; do
    diagnose "$state/diagnosis-kube-$delay-$run.json" Kubernetes+Prometheus "$delay"
  done
done
for url in "${kube_servers[@]}"; do set_delay "$url" "" 0; done
# Both series above (Kubernetes+Prometheus, then everything) counted.
runs=$(( ${#delays[@]} * 3 * 2 ))
# Everything at once: the TargetGroupBindings listing hides behind the AWS
# calls, so the whole path is 2 AWS + 3 cluster round trips.
for delay in "${delays[@]}"; do
  set_delay "$AWS_ENDPOINT_URL" '"service":"*","operation":"*"' "$delay"
  for url in "${kube_servers[@]}"; do set_delay "$url" '"path":".*"' "$delay"; done
  for run in 1 2 3; do
    diagnose "$state/diagnosis-all-$delay-$run.json" All "$delay"
  done
done
set_delay "$AWS_ENDPOINT_URL" "" 0
for url in "${kube_servers[@]}"; do set_delay "$url" "" 0; done
curl -sSf "$KUBE_API_URL/_alarm_triage/calls" | $python -c '
import json, sys
runs, calls = int(sys.argv[1]), json.load(sys.stdin)["calls"]
print(f"   {sum(calls.values()) / runs:g} Kubernetes API requests per diagnosis:", ", ".join(f"{k} x{v / runs:g}" for k, v in sorted(calls.items())))' "$runs"
if [ -n "${PROMETHEUS_FAULT_URL:-}" ]; then
  curl -sSf "$PROMETHEUS_FAULT_URL/_alarm_triage/calls" | $python -c '
import json, sys
runs, calls = int(sys.argv[1]), json.load(sys.stdin)["calls"]
print(f"   {sum(calls.values()) / runs:g} requests per diagnosis to Prometheus directly (fault proxy):", ", ".join(f"{k} x{v / runs:g}" for k, v in sorted(calls.items())) or "none")' "$runs"
fi
echo "   critical path: gathering time over a delay d before every request of one kind (median of 3 per d; slope = dependent round trips):"
$python scripts/bench_depth.py "$depth_runs"
$python infra/local/stack.py down --state "$state" >/dev/null
if [ -n "${BENCH_DEPTH_ONLY:-}" ]; then exit 0; fi

echo "== 2. start-up: process start to first poll of the runtime API (release)"
$python scripts/bench_startup.py target/release/diagnose

echo "== 3. memory: peak RSS while diagnosing (release, under the emulator)"
echo "   world 1:"
peak_rss "$world" "$PWD/target/release/diagnose"
# The trips rollout with four times its log lines: the diagnosis reads its
# whole log budget (1 MiB: pods/log and Logs Insights); the target is < 32 MB.
echo "   with 1 MiB of logs read (tests/bench-worlds/logs-one-mib):"
peak_rss tests/bench-worlds/logs-one-mib "$PWD/target/release/diagnose"

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

#!/usr/bin/env bash
# Re-captures tests/fixtures/diagnosis-<world>.json from every world in
# tests/worlds/ (each world is started, its alarm delivered and diagnosed,
# and the JSON diagnosis kept). Run after a change to what a diagnosis says,
# then review the snapshot changes: cargo insta review (or INSTA_UPDATE=always).
#
#   scripts/capture_fixtures.sh [WORLD ...]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
cargo build --quiet --bin alarm-triage --features cli
worlds=("$@")
if [ ${#worlds[@]} -eq 0 ]; then
    for dir in tests/worlds/*/; do
        [ -f "$dir/expected.yaml" ] && worlds+=("$(basename "$dir")")
    done
fi
for world in "${worlds[@]}"; do
    echo "== $world" >&2
    target/debug/alarm-triage replay --world "tests/worlds/$world" --format json \
        > "tests/fixtures/diagnosis-$world.json.new"
    mv "tests/fixtures/diagnosis-$world.json.new" "tests/fixtures/diagnosis-$world.json"
done

#!/usr/bin/env bash
# Runs everything CI checks: formatting, lints, and all tests.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh

# The local world (moto, Prometheus, cargo-lambda) that integration tests start.
scripts/setup.sh

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy --all-targets -- -D warnings"
cargo clippy --all-targets -- -D warnings
echo "== cargo test"
cargo test --all-targets

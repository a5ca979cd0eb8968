#!/usr/bin/env bash
# The slow check, not run with every test: `sam build` with the cargo-lambda
# build method (cross-compiles both functions for arm64 with zig; minutes).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
scripts/setup.sh
# cargo-lambda (and the zig it brings) live in the local-world virtualenv.
export PATH="$PWD/.venv/bin:$PATH"
.venv-deploy/bin/sam build --beta-features --build-dir .aws-sam/build
ls -la .aws-sam/build/DiagnoseFunction/bootstrap .aws-sam/build/NotifySlackFunction/bootstrap

#!/usr/bin/env bash
# Installs what the local world and the tests need, idempotently:
# a project-local virtualenv with the pinned Python packages (moto, cargo-lambda)
# and the Debian prometheus package (prometheus, promtool).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh

if ! command -v prometheus >/dev/null || ! command -v promtool >/dev/null; then
  echo "== installing prometheus (Debian package)"
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends prometheus >/dev/null
fi

stamp=.venv/.requirements
if [ ! -x .venv/bin/python ] || ! cmp -s infra/local/requirements.txt "$stamp"; then
  echo "== creating .venv and installing infra/local/requirements.txt"
  python3 -m venv .venv
  .venv/bin/pip install --quiet --disable-pip-version-check -r infra/local/requirements.txt
  cp infra/local/requirements.txt "$stamp"
fi

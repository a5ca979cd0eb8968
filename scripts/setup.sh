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

# venv DIR REQUIREMENTS: (re)creates DIR when REQUIREMENTS changed.
venv() {
  local dir=$1 requirements=$2
  if [ ! -x "$dir/bin/python" ] || ! cmp -s "$requirements" "$dir/.requirements"; then
    echo "== creating $dir and installing $requirements"
    rm -rf "$dir"
    python3 -m venv "$dir"
    "$dir/bin/pip" install --quiet --disable-pip-version-check -r "$requirements"
    cp "$requirements" "$dir/.requirements"
  fi
}
venv .venv infra/local/requirements.txt
venv .venv-deploy infra/deploy/requirements.txt

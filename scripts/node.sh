#!/usr/bin/env bash
# Installs Node.js and npm (Debian's packages) when either is missing, idempotently: the
# test with the real Camunda JavaScript client runs them, and under CI=true it fails
# rather than skips without them.
set -euo pipefail
source "$(dirname "$0")/apt.sh"
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "installing Debian's nodejs and npm for the JavaScript client test" >&2
  apt_install nodejs npm
fi
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "node or npm is missing after installing them: the JavaScript client test cannot run" >&2
  exit 1
fi
echo "node $(node --version), npm $(npm --version)" >&2

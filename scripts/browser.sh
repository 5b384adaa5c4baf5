#!/usr/bin/env bash
# Installs what the browser tests need, idempotently: Debian's chromium (Playwright's own
# browser download cannot work offline) and Playwright for Python (a dev dependency).
# Fails loudly when chromium cannot be installed: the browser tests must not be skipped.
set -euo pipefail
CHROMIUM="${BPM_CHROMIUM:-/usr/bin/chromium}"
if [ ! -x "$CHROMIUM" ]; then
  echo "installing Debian's chromium for the browser tests" >&2
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  # Another apt run (a parallel job) may hold the lock: wait for it instead of failing.
  $SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq >/dev/null
  $SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq chromium >/dev/null
fi
if [ ! -x "$CHROMIUM" ]; then
  echo "chromium is not at $CHROMIUM after installing it: the browser tests cannot run" >&2
  exit 1
fi
"$CHROMIUM" --version >&2

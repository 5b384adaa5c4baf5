#!/usr/bin/env bash
# Installs what the browser tests need, idempotently: Debian's chromium (Playwright's own
# browser download cannot work offline) and Playwright for Python (a dev dependency).
# Fails loudly when chromium cannot be installed: the browser tests must not be skipped.
set -euo pipefail
source "$(dirname "$0")/apt.sh"
CHROMIUM="${BPM_CHROMIUM:-/usr/bin/chromium}"
if [ ! -x "$CHROMIUM" ]; then
  echo "installing Debian's chromium for the browser tests" >&2
  apt_install chromium
fi
if [ ! -x "$CHROMIUM" ]; then
  echo "chromium is not at $CHROMIUM after installing it: the browser tests cannot run" >&2
  exit 1
fi
"$CHROMIUM" --version >&2

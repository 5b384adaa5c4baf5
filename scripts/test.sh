#!/usr/bin/env bash
# The whole test suite: installs the project with its dev extras, starts PostgreSQL and
# Redis when they are down, installs Debian's chromium for the browser tests, then runs
# ruff, mypy --strict and pytest. Extra arguments go
# to pytest (e.g. `bash scripts/test.sh -k join`).
source "$(dirname "$0")/env.sh"
install_project "[dev]"
bash scripts/services.sh
bash scripts/browser.sh
echo "== ruff" >&2
"$BIN/ruff" check .
"$BIN/ruff" format --check .
echo "== mypy --strict" >&2
"$BIN/mypy"
# docker-compose.yml is checked when a compose CLI is here (no Docker engine is needed).
if docker compose version >/dev/null 2>&1; then
  echo "== docker compose config" >&2
  docker compose --env-file .env.example config --quiet
elif command -v docker-compose >/dev/null 2>&1; then
  echo "== docker-compose config" >&2
  docker-compose --env-file .env.example config --quiet
else
  echo "== docker-compose.yml not validated: no docker compose CLI here" >&2
fi
echo "== pytest" >&2
set +e
"$BIN/pytest" -q "$@"
status=$?
set -e
if [ "$status" -eq 5 ]; then
  echo "pytest collected no tests: that is a failure here" >&2
  exit 1
fi
exit "$status"

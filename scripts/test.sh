#!/usr/bin/env bash
# The whole test suite: installs the project with its dev extras, starts PostgreSQL and
# Redis when they are down, installs Debian's chromium (browser tests) and nodejs/npm (the
# real JavaScript client test), then runs ruff, mypy --strict and pytest: in parallel
# (pytest-xdist, BPM_TEST_WORKERS processes), printing the twenty slowest tests. Extra
# arguments go to pytest (e.g. `bash scripts/test.sh -k join`, or `-n 0` for one process).
source "$(dirname "$0")/env.sh"
install_project "[dev]"
bash scripts/services.sh
bash scripts/browser.sh
bash scripts/node.sh
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
# Byte-compile the project once: with PYTHONDONTWRITEBYTECODE set (as in some shells) every
# process the tests start compiled bpm's modules again (a CPU-second per API server).
"$PY" -m compileall -q bpm tests bench examples >/dev/null
set +e
# Workers: measured on this 2-core machine (docs/development.md); most of the slow tests wait
# on real processes (Celery workers, API servers), so more workers than cores pay off.
# --dist loadgroup: a test marked xdist_group runs on its group's one worker.
# BPM_CPU_JSON=FILE: each test's CPU seconds into FILE.<worker> (bench/cpuplug.py).
cpu=()
if [ -n "${BPM_CPU_JSON:-}" ]; then
  cpu=(-p bench.cpuplug)
  export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
fi
"$BIN/pytest" -q -n "${BPM_TEST_WORKERS:-3}" --dist loadgroup --durations=20 "${cpu[@]}" "$@"
status=$?
set -e
if [ "$status" -eq 5 ]; then
  echo "pytest collected no tests: that is a failure here" >&2
  exit 1
fi
exit "$status"

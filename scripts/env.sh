# Shared by scripts/demo.sh and scripts/test.sh: pick the Python environment.
# Uses the active virtualenv when there is one, else ./.venv (created on first use).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
if [ -n "${VIRTUAL_ENV:-}" ]; then
  PY="$VIRTUAL_ENV/bin/python"
else
  if [ ! -x .venv/bin/python ]; then
    echo "creating .venv" >&2
    python3 -m venv .venv
  fi
  PY="$ROOT/.venv/bin/python"
fi
BIN="$(dirname "$PY")"
install_project() {  # $1: extras, e.g. "" or "[dev]"
  local stamp=".venv-installed$1"
  if [ ! -f "$BIN/$stamp" ] || [ pyproject.toml -nt "$BIN/$stamp" ]; then
    echo "installing bpm-celery$1 into $(dirname "$BIN") (first run takes a minute)" >&2
    local log
    log="$(mktemp)"
    # The venv's own pip installs this project (an editable install needs pip 21.3; Python
    # 3.11+ bundles 22.3 or newer): pip is not upgraded first (a download, 25 s here).
    if ! "$PY" -m pip install --disable-pip-version-check -e ".$1" >"$log" 2>&1; then
      cat "$log" >&2
      echo "installing failed (the pip output is above)" >&2
      exit 1
    fi
    rm -f "$log"
    touch "$BIN/$stamp"
  fi
}

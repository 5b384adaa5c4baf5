#!/usr/bin/env bash
# Runs the sample order process end to end on the embedded default (SQLite, one process)
# and prints its token trail. Installs the project first if needed.
source "$(dirname "$0")/env.sh"
install_project ""
DB="${BPM_DEMO_DB:-sqlite:///$ROOT/bpm.db}"
status=0
"$BIN/bpm" run examples/order.bpmn --var amount=120 --business-key demo-1 \
  --handlers examples.order_handlers --db "$DB" "$@" || status=$?
cat >&2 <<EON

next: \`bpm show ID --db $DB\` (any unique prefix of the id), \`bpm run examples/loan.py\`
(a Python builder process, docs/embedded.md); Celery workers, the REST API and the cockpit
need the extras: pip install -e ".[celery,api]" here, pip install "bpm-celery[celery,api]"
elsewhere (README, "Install").
EON
exit "$status"

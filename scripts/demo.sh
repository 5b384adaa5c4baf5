#!/usr/bin/env bash
# Runs the sample order process end to end on the embedded default (SQLite, one process)
# and prints its token trail. Installs the project first if needed.
source "$(dirname "$0")/env.sh"
install_project ""
DB="${BPM_DEMO_DB:-sqlite:///$ROOT/bpm.db}"
exec "$BIN/bpm" run examples/order.bpmn --var amount=120 --business-key demo-1 \
  --handlers examples.order_handlers --db "$DB" "$@"

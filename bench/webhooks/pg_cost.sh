#!/usr/bin/env bash
# PostgreSQL's CPU per webhook delivery by step, and schema variants against each other in one run.
# Usage: bench/webhooks/pg_cost.sh [--events 100 --blocks 4 --flush 10 --variants "base,attempts without foreign keys"]
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/setup.sh test >/dev/null
# shellcheck source=bench/lib.sh
source bench/lib.sh
bench_start bench.webhooks.settings
export PG_PID REDIS_PID
taskset -c 1 $PY bench/webhooks/pg_cost.py "$@"

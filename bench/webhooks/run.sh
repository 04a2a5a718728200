#!/usr/bin/env bash
# Webhook delivery benchmark against real PostgreSQL, Redis and Celery workers (started here).
# Usage: bench/webhooks/run.sh [--rounds 5 --rate 50 --endpoints 20 --duration 30 --workers 1 --threads 16 --concurrency 10]
# OLD_TREE=path (a git worktree of an older commit; the webhooks tables migrated to its schema for
# its phases): its workers against this tree's, all-healthy phases in alternating order (run.py
# --old-tree). Run it from a clean worktree too: a shared checkout's uncommitted edits are measured.
# --ordered [--subjects 10]: unordered against ordered endpoints, alternating (decision 0102); with
# OLD_TREE, both trees on ordered endpoints. --side-load N: a Granian web server beside, N req/s.
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/setup.sh test >/dev/null
# shellcheck source=bench/lib.sh
source bench/lib.sh
bench_start bench.webhooks.settings
export PG_PID REDIS_PID
$PY bench/webhooks/run.py ${OLD_TREE:+--old-tree "$OLD_TREE"} "$@"
